package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm002 = analyze.Rule{
	ID:       "SHM002",
	Name:     "shm-size-ignored-joined-ipc",
	Severity: analyze.Warning,
	Title:    "shm_size is ignored when joining another ipc namespace",
	Doc: analyze.Doc{
		Rationale: "`ipc: service:X` and `ipc: container:X` join X's IPC namespace and bind X's /dev/shm. " +
			"The joiner's own `shm_size` is silently ignored: the size is decided by the donor.",
		Problematic: "services:\n  donor:\n    image: app\n    ipc: shareable\n  worker:\n    image: app\n    ipc: service:donor\n    shm_size: 8g\n",
		Correct:     "services:\n  donor:\n    image: app\n    ipc: shareable\n    shm_size: 8g\n  worker:\n    image: app\n    ipc: service:donor\n",
		Exceptions:  "None: the key has no effect.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if (plan.Source != analyze.SourceService && plan.Source != analyze.SourceContainer) || plan.Configured == nil {
			return
		}
		var msg, fix string
		if plan.Source == analyze.SourceContainer {
			msg = fmt.Sprintf("shm_size %s is ignored: ipc joins container %s, whose /dev/shm is used", analyze.FormatSize(*plan.Configured), plan.Donor)
			fix = fmt.Sprintf("Remove shm_size and size /dev/shm on container %s instead.", plan.Donor)
		} else {
			owner := plan.Donor
			if len(plan.Via) > 0 {
				owner = plan.Via[len(plan.Via)-1]
			}
			chain := ""
			if len(plan.Via) > 1 {
				chain = " (through " + strings.Join(plan.Via[:len(plan.Via)-1], ", ") + ")"
			}
			size := effectiveSize(plan)
			if o := p.Project.Plan(owner); o != nil && plan.Predicted == nil {
				size = effectiveSize(o)
			}
			msg = fmt.Sprintf("shm_size %s is ignored: ipc joins service %s%s, whose /dev/shm (%s, %s) is used", analyze.FormatSize(*plan.Configured), owner, chain, p.Project.Owner(plan).Source, size)
			fix = fmt.Sprintf("Remove shm_size here and set shm_size %s on service %s, which owns the namespace.", analyze.ComposeSize(*plan.Configured), owner)
			if plan.Predicted != nil && *plan.Predicted >= *plan.Configured {
				// the owner's /dev/shm already holds what is written here: never size it down
				fix = fmt.Sprintf("Remove shm_size here: the /dev/shm of service %s (%s) is used.", owner, analyze.FormatSize(*plan.Predicted))
			}
		}
		p.Report(analyze.Finding{Pos: p.At(analyze.ShmKey), Message: msg, Remediation: fix, Related: []analyze.Pos{p.At("ipc")}})
	},
}
