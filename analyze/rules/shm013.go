package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm013 = analyze.Rule{
	ID:       "SHM013",
	Name:     "tmpfs-shm-unsized",
	Severity: analyze.Warning,
	Title:    "tmpfs at /dev/shm without a size",
	Doc: analyze.Doc{
		Rationale: "A tmpfs mounted at /dev/shm without `size=` gets the kernel default, half of the host's " +
			"RAM: far more than the container's memory limit usually allows, so a runaway writer is " +
			"OOM-killed instead of getting ENOSPC, and the size changes from host to host.",
		Problematic: "services:\n  app:\n    image: app\n    tmpfs:\n      - /dev/shm\n",
		Correct:     "services:\n  app:\n    image: app\n    tmpfs:\n      - /dev/shm:size=2g\n",
		Exceptions:  "None.",
		Sources:     []string{"Linux kernel, tmpfs (size defaults to half of RAM): https://docs.kernel.org/filesystems/tmpfs.html"},
	},
	Check: func(p *analyze.Pass) {
		m := p.Plan.Mount
		if m == nil || m.Type != analyze.SourceTmpfs || m.Size != nil || p.Plan.DependsOn(m.Entry) != nil {
			return
		}
		size, ok := adviseSize(p.Plan) // a shm_size written beside the mount says what was meant
		fix := "Add size=" + analyze.ComposeSize(size) + " to the /dev/shm tmpfs entry (/dev/shm:size=" + analyze.ComposeSize(size) + ")."
		if m.Entry == "volumes" {
			fix = "Add tmpfs: {size: " + analyze.ComposeSize(size) + "} to the /dev/shm volumes entry."
		}
		if !ok {
			fix = "Size the /dev/shm tmpfs entry to " + measured + "."
		}
		f := analyze.Finding{
			Pos:         p.MountPos(),
			Message:     "tmpfs at /dev/shm has no size: it is bounded only by half the host's memory",
			Remediation: fix,
		}
		if ok {
			f.Remediation += memoryNote(p.Plan, size)
			f.Attach(fixTmpfsSize(p, size))
		}
		p.Report(f)
	},
}
