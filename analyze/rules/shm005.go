package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm005 = analyze.Rule{
	ID:       "SHM005",
	Name:     "ipc-none",
	Severity: analyze.Info,
	Title:    "ipc: none leaves the container without /dev/shm",
	Doc: analyze.Doc{
		Rationale: "`ipc: none` gives the container a private IPC namespace with no /dev/shm mounted at all. " +
			"POSIX shared memory (shm_open), PyTorch DataLoader workers and NCCL fail at once. It is an " +
			"error for a shared-memory workload and worth knowing for anything else.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    ipc: none\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 2g\n",
		Exceptions:  "Hardened services that never use shared memory. Podman refuses `shm_size` with `ipc: none`: with `--target podman` (inferred when the probe finds Podman) that is an error.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		if p.Plan.IPC != "none" || p.Plan.Mount != nil {
			return
		}
		f := analyze.Finding{
			Pos:         p.At("ipc"),
			Message:     "ipc is none: the container has no /dev/shm at all",
			Remediation: "Remove ipc: none if the service uses shared memory.",
		}
		if p.Plan.Workload() {
			f.Severity = analyze.Error
			f.Message = "ipc is none: " + workloadName(p.Plan) + " has no /dev/shm at all"
			if size, ok := adviseSize(p.Plan); ok {
				f.Remediation = "Remove ipc: none and set shm_size: " + analyze.ComposeSize(size) + "."
				f.Attach(fixPrivate(p))
			} else {
				f.Remediation = "Remove ipc: none and set shm_size to " + measured + "."
			}
		}
		if e := p.Config.Target.Engine(); e.Refuses("none") && p.Plan.Configured != nil && *p.Plan.Configured > 0 {
			f.Severity = analyze.Error
			f.Message = fmt.Sprintf("%s, and with shm_size %s %s refuses to create the container (cannot set shmsize in the none IPC namespace)", f.Message, analyze.FormatSize(*p.Plan.Configured), strings.ToLower(e.Name))
			if !p.Plan.Workload() {
				f.Remediation = "Remove shm_size, which Podman refuses with ipc: none, or remove ipc: none if the service uses shared memory."
			}
		}
		p.Report(f)
	},
}

func workloadName(p *analyze.ShmPlan) string {
	if p.Profile != nil {
		return "this " + p.Profile.Name + " service"
	}
	return "a service that declares a need of " + analyze.FormatSize(*p.Need)
}
