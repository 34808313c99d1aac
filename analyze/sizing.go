package analyze

// RecommendedSize is the shm_size to suggest for a plan: its target rounded up to a size
// people write; 1 GiB, NVIDIA's --shm-size=1g for its containers, where no need is known and
// a rule must still name a size (only rules whose point is not the need do).
func RecommendedSize(p *ShmPlan) int64 {
	n := p.Target()
	if n <= 0 {
		n = 1 << 30
	}
	return Friendly(n)
}

// Friendly rounds up: to a power of two MiB below 1 GiB, to whole GiB above.
func Friendly(n int64) int64 {
	if n >= 1<<30 {
		return (n + 1<<30 - 1) / (1 << 30) * (1 << 30)
	}
	f := int64(128 << 20)
	for f < n {
		f *= 2
	}
	return f
}

// NeedBasis names what a recommendation rests on: the declared need, or the workload's
// formula with its sources and the parameters it was read from.
func NeedBasis(p *ShmPlan) string {
	switch {
	case p.Need != nil:
		return "the declared need (" + p.NeedFrom + ") is " + FormatSize(*p.Need)
	case p.Use != nil:
		return p.Use.Describe()
	}
	return ""
}

// ExceedsLimit is SHM012's condition: a /dev/shm of size bytes at or above the memory limit.
// watch applies it to the sizes it recommends.
func ExceedsLimit(size, limit int64) bool { return size > 0 && size >= limit }
