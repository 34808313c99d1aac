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
		Rationale: "Docker gives every container a private 64 MiB /dev/shm. A workload whose parameters say it " +
			"passes data through it (several NCCL ranks, vLLM's queues, a Ray object store, DataLoader workers) " +
			"dies with `Bus error`, `No space left on device` or a failed NCCL initialisation once it is full, " +
			"or falls back to slower storage. The need comes from those parameters, with the formula and its " +
			"source in the message (see docs/needs.md); the finding is a warning where the workload crashes " +
			"and info where it only slows down. Where the parameters do not give a size (a join's rows, a " +
			"browser's pages, a model repository), the finding is info: it says the workload uses /dev/shm " +
			"and how to learn how much, and names no size. `shm_size: 0` also means the daemon default.",
		Problematic: "services:\n  vllm:\n    image: vllm/vllm-openai\n    command: --model m --tensor-parallel-size 4\n",
		Correct:     "services:\n  vllm:\n    image: vllm/vllm-openai\n    command: --model m --tensor-parallel-size 4\n    shm_size: 2g\n",
		Exceptions:  "A need that fits in 64 MiB: one process on one GPU, two NCCL ranks (36.8 MiB), `NCCL_SHM_DISABLE=1`, `num_workers=0`, `max_parallel_workers_per_gather=0`, `--disable-dev-shm-usage`, or a declared need (`x-shmdoctor.need`, `x-shmdoctor.dataloader`) that fits; silence it with `x-shmdoctor: {ignore: [SHM010]}`.",
		Sources:     needSources(),
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if !plan.Workload() || !onDefault(plan) {
			return
		}
		if plan.Sized() && plan.Target() <= analyze.DefaultShmSize {
			return // the need fits the default
		}
		what := "shm_size is not set"
		if plan.Configured != nil {
			what = "shm_size is 0 (the daemon default)"
		}
		at := p.ServicePos()
		if plan.Configured != nil {
			at = p.At(analyze.ShmKey)
		}
		def := analyze.FormatSize(p.Config.Target.Engine().DefaultShm)
		if !plan.Sized() {
			p.Report(analyze.Finding{
				Severity:    analyze.Info,
				Pos:         at,
				Message:     fmt.Sprintf("%s: /dev/shm is the %s default, and %s", what, def, analyze.NeedBasis(plan)),
				Remediation: "Measure the peak with shmdoctor watch and declare it with x-shmdoctor.need; the doctor then checks shm_size against it.",
			})
			return
		}
		size := analyze.RecommendedSize(plan)
		f := analyze.Finding{
			Severity:    defaultSeverity(plan),
			Pos:         at,
			Message:     fmt.Sprintf("%s: /dev/shm is the %s default, and %s", what, def, analyze.NeedBasis(plan)),
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
