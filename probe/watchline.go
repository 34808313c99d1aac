package probe

// WatchLine is one line of `shmdoctor agent watch`: the filesystem's size and use at the
// end of an interval, and the highest use sampled during it.
type WatchLine struct {
	SizeBytes int64  `json:"size_bytes"`
	UsedBytes int64  `json:"used_bytes"`
	PeakBytes int64  `json:"peak_bytes"`
	Error     string `json:"error,omitempty"`
	// Rise marks a line written within an interval because use climbed above every peak
	// reported before: a container that ends before the interval's line (a workload killed
	// when /dev/shm fills) would otherwise take its peak with it. It is no sample of its own.
	Rise bool `json:"rise,omitempty"`
}

// merge keeps the later sample and the higher peak; an error wins until a sample succeeds.
func (l WatchLine) merge(s WatchLine) WatchLine {
	if s.Error != "" {
		return s
	}
	if l.Error == "" {
		s.PeakBytes = max(s.PeakBytes, l.PeakBytes)
	}
	return s
}
