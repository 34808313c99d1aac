package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm011 = analyze.Rule{
	ID:       "SHM011",
	Name:     "shm-below-need",
	Severity: analyze.Warning,
	Title:    "effective /dev/shm is below what the workload needs",
	Doc: analyze.Doc{
		Rationale: "The effective /dev/shm is known (shm_size, a sized tmpfs, or a joined donor's size) and " +
			"smaller than what the workload's parameters need (the formulas of docs/needs.md: NCCL ranks, " +
			"vLLM's queues, a Ray object store) or the declared need (`x-shmdoctor.need`, " +
			"`x-shmdoctor.dataloader`, `--need`). A Ray store that does not fit goes to /tmp, slower: " +
			"info. A PyTorch DataLoader needs " +
			"`(num_workers × prefetch_factor + 2.5) × batch`, one batch less with `persistent_workers` or with " +
			"`start_method` `forkserver` or `spawn`: the batches in flight, the batch the training loop holds, half of one " +
			"being written while the loop holds the one before, and the last batch of an epoch, which the next " +
			"epoch's new workers inherit when they are forked (fork, Linux's default before Python 3.14) and " +
			"keep in /dev/shm until they end. `pin_memory` does not add to it (without CUDA PyTorch turns it off; " +
			"with CUDA the loop's batch is a pinned copy outside /dev/shm). The truth lab (`make lab`, " +
			"docs/lab.md) checks it against Debian's PyTorch 1.13: never below the real peak, at most 15% " +
			"above it. Below a declared need this is an error.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 256m\n    x-shmdoctor:\n      dataloader: {workers: 8, prefetch_factor: 2, batch_bytes: 128MiB}\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 3g\n    x-shmdoctor:\n      dataloader: {workers: 8, prefetch_factor: 2, batch_bytes: 128MiB}\n",
		Exceptions:  "A need read from parameters is a formula over documented buffers (docs/needs.md): where the workload is known to use less, declare the real need with `x-shmdoctor.need`. Where the parameters give no size, this rule says nothing.",
		Sources:     needSources(),
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Predicted == nil || plan.Source == analyze.SourceNone {
			return
		}
		have, target := *plan.Predicted, plan.Target()
		if !plan.Sized() || have >= target {
			return // a need that is not known is never claimed
		}
		sev := plan.Severity()
		if plan.Need == nil && onDefault(plan) {
			return // SHM010 says it
		}
		at, fixKey := p.At(analyze.ShmKey), "shm_size"
		switch {
		case plan.Mount != nil:
			at, fixKey = p.MountPos(), "the /dev/shm tmpfs size"
		case len(plan.Via) > 0:
			at, fixKey = p.At("ipc"), "shm_size on service "+plan.Via[len(plan.Via)-1]
		case plan.Configured == nil:
			at = p.ServicePos()
		}
		size := analyze.Friendly(target)
		f := analyze.Finding{
			Severity:    sev,
			Pos:         at,
			Message:     fmt.Sprintf("/dev/shm is %s, below %s: %s", analyze.FormatSize(have), analyze.FormatSize(target), analyze.NeedBasis(plan)),
			Remediation: fmt.Sprintf("Raise %s to %s.%s", fixKey, analyze.ComposeSize(size), memoryNote(plan, size)),
		}
		switch {
		case plan.Mount != nil && plan.Mount.Type == analyze.SourceTmpfs:
			f.Attach(fixTmpfsSize(p, size))
		case plan.Mount == nil:
			f.Attach(fixShmSize(p, p.Project.Owner(plan), size))
		}
		p.Report(f)
	},
}

// needSources lists the sources of the need formulas, for the rule docs.
func needSources() []string {
	var out []string
	for _, s := range analyze.NeedSources() {
		out = append(out, s.Name+": "+s.URL)
	}
	return out
}
