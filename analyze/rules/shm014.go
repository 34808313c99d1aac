package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm014 = analyze.Rule{
	ID:       "SHM014",
	Name:     "host-shm-bind",
	Severity: analyze.Warning,
	Title:    "host /dev/shm bind-mounted into the container",
	Doc: analyze.Doc{
		Rationale: "Binding the host's /dev/shm shares every shared-memory object of the host with the " +
			"container (and leaves what the container writes behind on the host), while sizing nothing " +
			"the stack controls. It is `ipc: host` for /dev/shm without saying so.",
		Problematic: "services:\n  app:\n    image: app\n    volumes:\n      - /dev/shm:/dev/shm\n",
		Correct:     "services:\n  app:\n    image: app\n    shm_size: 2g\n",
		Exceptions:  "Deliberate zero-copy sharing with a process on the host.",
		Sources:     []string{"Docker storage, bind mounts: https://docs.docker.com/engine/storage/bind-mounts/"},
	},
	Check: func(p *analyze.Pass) {
		m := p.Plan.Mount
		if m == nil || m.Type != analyze.SourceBind || m.Source != "/dev/shm" {
			return
		}
		fix := "Remove the bind and set shm_size to " + measured + " to give the service a private /dev/shm."
		if size, ok := adviseSize(p.Plan); ok {
			fix = "Remove the bind and set shm_size: " + analyze.ComposeSize(size) + " to give the service a private /dev/shm."
		}
		p.Report(analyze.Finding{
			Pos:         p.MountPos(),
			Message:     "the host's /dev/shm is bind-mounted at /dev/shm: the container shares and fills the host's shared memory",
			Remediation: fix,
		})
	},
}
