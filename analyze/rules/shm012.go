package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm012 = analyze.Rule{
	ID:       "SHM012",
	Name:     "shm-exceeds-memory-limit",
	Severity: analyze.Error,
	Title:    "/dev/shm at or above the memory limit",
	Doc: analyze.Doc{
		Rationale: "Pages written to /dev/shm are charged to the writing container's memory cgroup. With " +
			"/dev/shm as large as the memory limit or larger, the container is OOM-killed (exit 137, or " +
			"the writing worker killed with OOMKilled=true) before /dev/shm fills: the size promises memory " +
			"the limit forbids.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 16g\n    mem_limit: 8g\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 4g\n    mem_limit: 16g\n",
		Exceptions:  "Where the service keeps the daemon's default /dev/shm and runs nothing known to write there (a small service under a small limit), the finding is info: nothing fills it. Otherwise none that holds under load: keep /dev/shm well below the limit, leaving room for the process itself.",
		Sources:     []string{"Linux kernel, cgroup memory controller (shmem is charged to the cgroup): https://docs.kernel.org/admin-guide/cgroup-v2.html#memory"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Predicted == nil || plan.MemLimit == nil || !analyze.ExceedsLimit(*plan.Predicted, *plan.MemLimit) {
			return
		}
		at := p.At(analyze.ShmKey)
		switch {
		case plan.Mount != nil:
			at = p.MountPos()
		case len(plan.Via) > 0:
			at = p.At("ipc")
		}
		key := strings.Join(p.MemLimitKey(), ".")
		sev := analyze.Severity(0)
		if plan.Configured == nil && plan.Mount == nil && len(plan.Via) == 0 && !plan.Workload() {
			// The default /dev/shm of a program not known to write there: a small service
			// under a small limit, which a full /dev/shm would kill, but nothing fills it.
			sev = analyze.Info
		}
		p.Report(analyze.Finding{
			Severity:    sev,
			Pos:         at,
			Message:     fmt.Sprintf("/dev/shm of %s is at or above the memory limit %s (%s): the container is OOM-killed before /dev/shm fills", analyze.FormatSize(*plan.Predicted), analyze.FormatSize(*plan.MemLimit), key),
			Remediation: fmt.Sprintf("Raise %s above %s plus what the process itself needs, or lower /dev/shm below %s.", key, analyze.FormatSize(*plan.Predicted), analyze.FormatSize(*plan.MemLimit)),
			Related:     []analyze.Pos{p.At(p.MemLimitKey()...)},
		})
	},
}
