package probe

import (
	"fmt"
	"sync"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// memBudget is one run's write budget, shared by all its services: half of the host's
// MemAvailable as the first agent measured it (or Options.WriteBudget). Each service gets
// the smaller of its target and what is left; what is granted is not given back, so the
// targets of a run add up to the budget at most.
type memBudget struct {
	mu      sync.Mutex
	total   int64 // -1: unknown (no measurement): the agents' own cap applies alone
	set     bool
	from    string
	granted int64
}

// grant takes at most want bytes from the budget; note says why less was given, "" when
// want was given in full.
func (b *memBudget) grant(want int64, fixed int64, avail *int64) (int64, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set {
		b.set = true
		switch {
		case fixed > 0:
			b.total, b.from = fixed, "set by the caller"
		case avail != nil:
			b.total = *avail / 2
			b.total -= b.total % (1 << 20)
			b.from = "half of the host's available memory, " + analyze.FormatSize(*avail)
		default:
			b.total = -1
		}
	}
	if b.total < 0 {
		return want, ""
	}
	left := max(b.total-b.granted, 0)
	got := min(want, left)
	b.granted += got
	if got == want {
		return got, ""
	}
	note := fmt.Sprintf("target %s capped at %s by the run's memory budget (%s: %s", analyze.FormatSize(want), analyze.FormatSize(got), analyze.FormatSize(b.total), b.from)
	if before := b.granted - got; before > 0 {
		note += fmt.Sprintf("; %s went to the services probed before", analyze.FormatSize(before))
	}
	return got, note + ")"
}
