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
			"smaller than the workload profile's recommended minimum or the declared need " +
			"(`x-shmdoctor.need`, `x-shmdoctor.dataloader`, `--need`). A PyTorch DataLoader needs " +
			"`(num_workers × prefetch_factor + 2.5) × batch` (one batch less with `persistent_workers`): " +
			"the batches in flight, the batch the training loop holds, half of one being written while the " +
			"loop holds the one before, and the last batch of an epoch still held while the next epoch's new " +
			"workers fill their queues. `pin_memory` does not add to it (without CUDA PyTorch turns it off; " +
			"with CUDA the loop's batch is a pinned copy outside /dev/shm). The truth lab (`make lab`, " +
			"docs/lab.md) checks it against Debian's PyTorch 1.13: never below the real peak, at most 15% " +
			"above it. Below a declared need this is an error.",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 256m\n    x-shmdoctor:\n      dataloader: {workers: 8, prefetch_factor: 2, batch_bytes: 128MiB}\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 3g\n    x-shmdoctor:\n      dataloader: {workers: 8, prefetch_factor: 2, batch_bytes: 128MiB}\n",
		Exceptions:  "A profile minimum is a public recommendation, not a measurement: declare the real need with `x-shmdoctor.need` when it is smaller.",
		Sources:     profileSources(),
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Predicted == nil || plan.Source == analyze.SourceNone {
			return
		}
		have := *plan.Predicted
		target, sev := int64(0), analyze.Severity(0)
		switch {
		case plan.Need != nil && have < *plan.Need:
			target, sev = *plan.Need, analyze.Error
		case plan.Need == nil && plan.Profile != nil && have < plan.Profile.MinShm:
			target = plan.Profile.MinShm
		default:
			return
		}
		if sev == 0 && onDefault(plan) {
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

// profileSources lists the public sources of the workload profiles, for the rule docs.
func profileSources() []string {
	var out []string
	for _, pr := range analyze.Profiles() {
		size := analyze.FormatSize(pr.MinShm)
		if pr.MinShm == 0 {
			size = "no more than the default"
		}
		out = append(out, pr.Name+" ("+size+"): "+pr.Source+": "+pr.URL)
	}
	return out
}
