package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm001 = analyze.Rule{
	ID:       "SHM001",
	Name:     "shm-size-ignored-ipc-host",
	Severity: analyze.Warning,
	Title:    "shm_size is ignored under ipc: host",
	Doc: analyze.Doc{
		Rationale: "With `ipc: host` the container shares the host's IPC namespace and gets the host's " +
			"own /dev/shm bind-mounted. Docker silently ignores `shm_size`, and `docker inspect` still shows " +
			"it in HostConfig.ShmSize, so the value looks applied while the real size is the host's tmpfs. " +
			"Podman refuses the combination outright: with `--target podman` (inferred when the probe finds Podman) this is an error.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    ipc: host\n    shm_size: 16g\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    ipc: host   # policy stability: keep the host's /dev/shm\n",
		Exceptions:  "None: the key has no effect. With `--policy isolation` the fix drops `ipc: host` instead and keeps `shm_size`.",
		Sources:     []string{"Docker run reference, --ipc and --shm-size: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		if p.Plan.IPC != "host" || p.Plan.Configured == nil {
			return
		}
		sev := analyze.Severity(0)
		msg := fmt.Sprintf("shm_size %s is ignored: ipc is host, so the host's /dev/shm is used", analyze.FormatSize(*p.Plan.Configured))
		if e := p.Config.Target.Engine(); e.Refuses("host") && *p.Plan.Configured > 0 {
			sev = analyze.Error
			msg = fmt.Sprintf("shm_size %s with ipc: host: %s refuses to create the container (cannot set shmsize in the host IPC namespace)", analyze.FormatSize(*p.Plan.Configured), strings.ToLower(e.Name))
		}
		fix := "Remove shm_size: with ipc: host the container uses the host's /dev/shm."
		if p.Config.Policy == analyze.PolicyIsolation {
			fix = fmt.Sprintf("Remove ipc: host and keep shm_size %s, so the service gets a private /dev/shm of that size.", analyze.ComposeSize(*p.Plan.Configured))
		}
		f := analyze.Finding{
			Severity:    sev,
			Pos:         p.At(analyze.ShmKey),
			Message:     msg,
			Remediation: fix,
			Related:     []analyze.Pos{p.At("ipc")},
		}
		if p.Config.Policy == analyze.PolicyIsolation {
			f.Attach(fixPrivate(p))
		} else {
			f.Attach(fixRemove(p, "Remove shm_size, which ipc: host ignores.", analyze.ShmKey))
		}
		p.Report(f)
	},
}
