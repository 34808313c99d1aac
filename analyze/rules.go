package analyze

// Rules is the registry, sorted by ID. Each rule lives in its own file.
var Rules = []Rule{
	shm001, shm002, shm003, shm004, shm005, shm006,
	shm010, shm011, shm012, shm013, shm014,
	shm020, shm030, shm040,
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
