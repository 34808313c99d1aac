package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm004 = analyze.Rule{
	ID:       "SHM004",
	Name:     "build-shm-size-only",
	Severity: analyze.Warning,
	Title:    "build.shm_size only sizes /dev/shm of build steps",
	Doc: analyze.Doc{
		Rationale: "`build.shm_size` is passed to the builder for `RUN` steps. The running container " +
			"still gets the 64 MiB default unless the service itself sets `shm_size`.",
		Problematic: "services:\n  trainer:\n    build:\n      context: .\n      shm_size: 4g\n",
		Correct:     "services:\n  trainer:\n    build:\n      context: .\n    shm_size: 4g\n",
		Exceptions:  "A build that needs the space in its own RUN steps: keep it, and add the service's `shm_size` as well.",
		Sources:     []string{"Compose build specification, shm_size: https://docs.docker.com/reference/compose-file/build/#shm_size"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.BuildShmSize == nil || plan.Configured != nil {
			return
		}
		f := analyze.Finding{
			Pos:         p.At("build", analyze.ShmKey),
			Message:     fmt.Sprintf("build.shm_size %s sizes /dev/shm of build steps only: the container gets %s", analyze.FormatSize(*plan.BuildShmSize), sizeOrUnknown(plan.Predicted)),
			Remediation: fmt.Sprintf("Set shm_size: %s on the service itself (keep build.shm_size only if the build needs it).", analyze.ComposeSize(*plan.BuildShmSize)),
		}
		f.Attach(fixMoveBuild(p))
		p.Report(f)
	},
}
