package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm205 = analyze.Rule{
	ID:       "SHM205",
	Name:     "probe-create-failed",
	Severity: analyze.Error,
	Title:    "container could not be created with the service's settings",
	Probe:    true,
	// Docker refuses to join a private donor (SHM006); Podman refuses shm_size with ipc:
	// host (SHM001 under --target podman). Any other refusal stands on its own.
	Reproduces: []analyze.Reproduction{
		{Rule: "SHM006", Match: analyze.CreateErrorHas("non-shareable IPC"), Raises: analyze.Refused},
		{Rule: "SHM001", Match: analyze.CreateErrorHas("cannot set shmsize"), Raises: analyze.Refused},
	},
	Doc: analyze.Doc{
		Rationale: "Docker refused to create or start a container with the service's shared-memory settings, " +
			"so `docker compose up` fails the same way. The finding quotes Docker's own message, for " +
			"example `non-shareable IPC (hint: use IpcMode:shareable for the donor container)`.",
		Problematic: "services:\n  donor:\n    image: app\n  worker:\n    image: app\n    ipc: service:donor\n",
		Correct:     "services:\n  donor:\n    image: app\n    ipc: shareable\n  worker:\n    image: app\n    ipc: service:donor\n",
		Exceptions:  "None.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		m := p.Measurement
		if m == nil || m.CreateError == "" {
			return
		}
		f := analyze.Finding{
			Pos:         sizingPos(p),
			Message:     "docker refused the service's settings: " + m.CreateError,
			Remediation: "Fix the settings Docker names; docker compose up fails the same way.",
		}
		if e := p.Config.Target.Engine(); e.Name != analyze.Docker.Name {
			f.Message = strings.ToLower(e.Name) + " refused the service's settings: " + m.CreateError
			f.Remediation = fmt.Sprintf("Fix the settings %s names; %s compose up fails the same way.", e.Name, strings.ToLower(e.Name))
		}
		p.Report(f)
	},
}
