package analyze

import "fmt"

// Rules is the registry, sorted by ID. Each rule lives in its own file.
var Rules = []Rule{
	shm001, shm002, shm003, shm004, shm005, shm006,
	shm010, shm011, shm012, shm013, shm014, shm015,
	shm020, shm030, shm040, shm090,
	shm101, shm102, shm103, shm104, shm105, shm106, shm111,
	shm201, shm202, shm203, shm204, shm205,
}

// recommend is the shm_size to suggest for a plan: its target rounded up to a size people
// write, never below what the profile asks.
func recommend(p *ShmPlan) int64 {
	n := p.Target()
	if n <= 0 {
		n = 1 << 30
	}
	return friendly(n)
}

// keepSize is the shm_size to advise where a private /dev/shm replaces one that ipc: host,
// ipc: none or a mount decides: the shm_size written, when it is set and covers the target,
// else the recommendation. Advice never goes below what the stack writes.
func keepSize(p *ShmPlan) int64 {
	if p.Configured != nil && *p.Configured > 0 && *p.Configured >= p.Target() {
		return *p.Configured
	}
	return recommend(p)
}

// friendly rounds up: to a power of two MiB below 1 GiB, to whole GiB above.
func friendly(n int64) int64 {
	if n >= 1<<30 {
		return (n + 1<<30 - 1) / (1 << 30) * (1 << 30)
	}
	f := int64(128 << 20)
	for f < n {
		f *= 2
	}
	return f
}

// why names what a recommendation rests on: the declared need or the profile's source.
func why(p *ShmPlan) string {
	switch {
	case p.Need != nil:
		return "the declared need (" + p.NeedFrom + ") is " + FormatSize(*p.Need)
	case p.Profile != nil:
		return p.Profile.Name + " needs at least " + FormatSize(p.Profile.MinShm) + " (" + p.Profile.Source + ")"
	}
	return ""
}

// memoryNote warns that a suggested size must stay below the memory limit.
func memoryNote(p *ShmPlan, size int64) string {
	if p.MemLimit != nil && size >= *p.MemLimit {
		return " Raise the memory limit above " + FormatSize(size) + " too: /dev/shm pages count against it."
	}
	return ""
}

// effectiveSize describes a plan's /dev/shm size in words, where no number is known.
func effectiveSize(p *ShmPlan) string {
	switch {
	case p.Predicted != nil:
		return FormatSize(*p.Predicted)
	case p.HostShared():
		return "the host's size"
	case p.Mount != nil && p.Mount.Type == SourceTmpfs && p.DependsOn(p.Mount.Entry) == nil:
		return "half the host's memory"
	}
	return "an unknown size"
}

func sizeOrUnknown(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return FormatSize(*n)
}

// writeFailure is the shared check of the write-probe rules: the probe's outcome, the
// message that names it and the fix.
func writeFailure(p *Pass, outcome WriteOutcome, what string) {
	m := p.Measurement
	if m == nil || m.Write == nil || m.Write.Outcome != outcome {
		return
	}
	w := m.Write
	size := friendly(max(w.TargetBytes, p.Plan.Target()))
	fix := fmt.Sprintf("Give /dev/shm at least %s (shm_size: %s).%s", FormatSize(w.TargetBytes), ComposeSize(size), memoryNote(p.Plan, size))
	if outcome == WriteOOMKilled {
		fix = fmt.Sprintf("Raise the memory limit well above /dev/shm (at least %s plus what the process needs), or lower /dev/shm below the limit.", FormatSize(w.TargetBytes))
	}
	p.Report(Finding{
		Pos:         sizingPos(p),
		Message:     fmt.Sprintf("%s after writing %s of %s to /dev/shm", what, FormatSize(w.WrittenBytes), FormatSize(w.TargetBytes)),
		Remediation: fix,
	})
}
