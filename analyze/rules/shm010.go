package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm010 = analyze.Rule{
	ID:       "SHM010",
	Name:     "workload-on-default-shm",
	Severity: analyze.Warning,
	Title:    "shared-memory workload left on the 64 MiB default",
	Doc: analyze.Doc{
		Rationale: "Docker gives every container a private 64 MiB /dev/shm. PyTorch DataLoader workers, " +
			"NCCL, vLLM, TGI, Triton, Ray, Chromium and PostgreSQL pass data through it and die with " +
			"`Bus error`, `No space left on device` or `DataLoader worker (pid N) is killed by signal: Bus error` " +
			"once it is full. `shm_size: 0` also means the daemon default.",
		Problematic: "services:\n  vllm:\n    image: vllm/vllm-openai\n",
		Correct:     "services:\n  vllm:\n    image: vllm/vllm-openai\n    shm_size: 2g\n",
		Exceptions:  "A declared need (`x-shmdoctor.need`, `x-shmdoctor.dataloader`) that fits in 64 MiB: the truth lab runs a DataLoader and a PostgreSQL parallel join that pass on the default. A workload configured not to use shared memory (for example `num_workers=0`, `NCCL_SHM_DISABLE=1`); silence it with `x-shmdoctor: {ignore: [SHM010]}`.",
		Sources:     profileSources(),
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if !plan.Workload() || !onDefault(plan) {
			return
		}
		if plan.Need != nil && *plan.Need <= analyze.DefaultShmSize {
			return // the declared need fits the default
		}
		size := analyze.RecommendedSize(plan)
		what := "shm_size is not set"
		if plan.Configured != nil {
			what = "shm_size is 0 (the daemon default)"
		}
		at := p.ServicePos()
		if plan.Configured != nil {
			at = p.At(analyze.ShmKey)
		}
		f := analyze.Finding{
			Pos:         at,
			Message:     fmt.Sprintf("%s: /dev/shm is the %s default, and %s", what, analyze.FormatSize(p.Config.Target.Engine().DefaultShm), analyze.NeedBasis(plan)),
			Remediation: fmt.Sprintf("Set shm_size: %s on the service.%s", analyze.ComposeSize(size), memoryNote(plan, size)),
		}
		f.Attach(fixShmSize(p, plan, size))
		p.Report(f)
	},
}

// onDefault reports whether a plan's /dev/shm is Docker's default private one.
func onDefault(p *analyze.ShmPlan) bool {
	return (p.Source == analyze.SourcePrivate || p.Source == analyze.SourceShareable) &&
		(p.Configured == nil && p.DependsOn(analyze.ShmKey) == nil || p.Configured != nil && *p.Configured == 0)
}
