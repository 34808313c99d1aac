package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm006 = analyze.Rule{
	ID:       "SHM006",
	Name:     "ipc-donor-not-shareable",
	Severity: analyze.Error,
	Title:    "ipc: service donor is not shareable",
	Doc: analyze.Doc{
		Rationale: "Joining another container's IPC namespace needs the donor to run with `ipc: shareable` " +
			"(or `ipc: host`). With the daemon's default private IPC mode, creating the joiner fails with " +
			"\"non-shareable IPC (hint: use IpcMode:shareable for the donor container)\". docker compose " +
			"does not make donors shareable for you.",
		Problematic: "services:\n  donor:\n    image: app\n  worker:\n    image: app\n    ipc: service:donor\n",
		Correct:     "services:\n  donor:\n    image: app\n    ipc: shareable\n  worker:\n    image: app\n    ipc: service:donor\n",
		Exceptions:  "A daemon configured with `\"default-ipc-mode\": \"shareable\"` accepts private donors; the probe shows which applies. Podman's default IPC mode is shareable: with `--target podman` (inferred when the probe finds Podman) only a donor set to `ipc: private` is reported.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Source != analyze.SourceService || len(plan.Via) == 0 {
			return
		}
		donor := p.Project.Plan(plan.Via[0])
		if donor == nil || donor.IPC == "shareable" || donor.IPC == "host" {
			return
		}
		engine := p.Config.Target.Engine()
		if donor.IPC == "" && engine.DefaultIPC == "shareable" {
			return // the engine makes every container shareable unless it says otherwise
		}
		mode := donor.IPC
		if mode == "" {
			mode = "private (the default)"
		}
		f := analyze.Finding{
			Pos:         p.At("ipc"),
			Message:     fmt.Sprintf("ipc joins service %s, whose ipc is %s: container creation fails with non-shareable IPC", donor.Service, mode),
			Remediation: fmt.Sprintf("Set ipc: shareable on service %s.", donor.Service),
			Related:     []analyze.Pos{p.Project.Doc.ServicePos(donor.Service)},
		}
		f.Attach(fixShareable(p, donor))
		p.Report(f)
	},
}
