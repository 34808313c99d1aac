package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm204 = analyze.Rule{
	ID:       "SHM204",
	Name:     "write-probe-oom-killed",
	Severity: analyze.Error,
	Title:    "write probe was oom-killed before /dev/shm filled",
	Probe:    true,
	// The OOM kill that SHM012 predicts for /dev/shm at or above the memory limit.
	Reproduces: []analyze.Reproduction{{Rule: "SHM012", Raises: analyze.LimitBelowNeed}},
	Doc: analyze.Doc{
		Rationale: "/dev/shm pages are charged to the container's memory cgroup. The probe's writer was " +
			"OOM-killed before reaching the target: the memory limit is reached before /dev/shm fills, so " +
			"the service dies with exit 137 (or loses a worker) instead of getting ENOSPC.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 8g\n    mem_limit: 4g\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 2g\n    mem_limit: 8g\n",
		Exceptions:  "None.",
		Sources:     []string{"Linux kernel, cgroup memory controller: https://docs.kernel.org/admin-guide/cgroup-v2.html#memory"},
	},
	Check: func(p *analyze.Pass) { writeFailure(p, analyze.WriteOOMKilled, "the container was oom-killed") },
}
