package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm003 = analyze.Rule{
	ID:       "SHM003",
	Name:     "shm-size-ignored-mount",
	Severity: analyze.Warning,
	Title:    "shm_size is ignored when a mount sits on /dev/shm",
	Doc: analyze.Doc{
		Rationale: "A `tmpfs:` entry or a `volumes:` entry (tmpfs, bind or volume) targeting /dev/shm replaces " +
			"the shm mount Docker would size with `shm_size`, in every IPC mode. The mount decides the size; " +
			"`shm_size` is silently ignored.",
		Problematic: "services:\n  app:\n    image: app\n    shm_size: 2g\n    tmpfs:\n      - /dev/shm:size=256m\n",
		Correct:     "services:\n  app:\n    image: app\n    tmpfs:\n      - /dev/shm:size=2g\n",
		Exceptions:  "None: the key has no effect while the mount is there.",
		Sources:     []string{"Docker storage, tmpfs mounts: https://docs.docker.com/engine/storage/tmpfs/"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Mount == nil || plan.Configured == nil {
			return
		}
		fix := "Remove shm_size: the mount at /dev/shm decides its size."
		if m := plan.Mount; m.Type == analyze.SourceTmpfs && (m.Size == nil || *m.Size < *plan.Configured) {
			// a sized mount at least as large works as it is: never size it down to the key
			fix = fmt.Sprintf("Remove shm_size and size the tmpfs mount instead (size=%s).", analyze.ComposeSize(*plan.Configured))
		}
		p.Report(analyze.Finding{
			Pos:         p.At(analyze.ShmKey),
			Message:     fmt.Sprintf("shm_size %s is ignored: a %s mount at /dev/shm of %s replaces it", analyze.FormatSize(*plan.Configured), plan.Mount.Type, mountSize(plan.Mount)),
			Remediation: fix,
			Related:     []analyze.Pos{p.MountPos()},
		})
	},
}

func mountSize(m *analyze.Mount) string {
	switch {
	case m.Size != nil:
		return analyze.FormatSize(*m.Size)
	case m.Type == analyze.SourceTmpfs:
		return "half the host's memory"
	case m.Type == analyze.SourceBind:
		return "whatever " + m.Source + " holds"
	}
	return "whatever volume " + m.Source + " holds"
}
