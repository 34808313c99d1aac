package compose

import (
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestDataloaderNeedCoversLabPeaks checks the DataLoader formula against the peaks the truth
// lab measured with Debian's PyTorch 1.13 (make lab; shmdoctor watch, agent method, over two
// epochs): the estimate is never below a real peak and at most 15% above it. Workers started
// by forkserver keep no batch of the epoch before: the fork formula is 17% above their peak.
func TestDataloaderNeedCoversLabPeaks(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		workers, prefetch, batchMiB int64
		persistent                  bool
		start                       string  // start_method, fork when empty
		peak                        float64 // MiB
	}{
		{4, 2, 24, false, "", 243.26},
		{4, 2, 24, true, "", 220.34},
		{2, 4, 16, true, "", 145.60},
		{1, 2, 32, false, "", 129.95},
		{1, 2, 32, true, "", 98.35},
		{1, 2, 8, false, "", 32.04},
		{1, 2, 64, false, "", 256.04},
		{2, 2, 4, false, "", 24.06},
		{4, 2, 24, false, "forkserver", 216.1},
	}
	for _, tt := range tests {
		v := map[string]any{"workers": tt.workers, "prefetch_factor": tt.prefetch,
			"batch_bytes": tt.batchMiB * mib, "persistent_workers": tt.persistent}
		if tt.start != "" {
			v["start_method"] = tt.start
		}
		need, err := dataloaderNeed(v)
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(need) / (tt.peak * mib)
		if ratio < 1 || ratio > 1.15 {
			t.Errorf("workers %d × prefetch %d × %d MiB (persistent %v, start %q): need %s is %.3f× the measured peak %.2f MiB, want 1 to 1.15",
				tt.workers, tt.prefetch, tt.batchMiB, tt.persistent, tt.start, analyze.FormatSize(need), ratio, tt.peak)
		}
	}
}

func TestDataloaderNeedErrors(t *testing.T) {
	for _, tt := range []struct {
		v    map[string]any
		want string
	}{
		{map[string]any{"workers": 2, "batch_bytes": "8m", "persistent_workers": "yes"}, "persistent_workers must be true or false"},
		{map[string]any{"workers": 2, "batch_bytes": "8m", "pin_memory": true}, "pin_memory is not a known key"},
		{map[string]any{"workers": 2, "batch_bytes": "8m", "start_method": "thread"}, "start_method must be fork, forkserver or spawn"},
	} {
		if _, err := dataloaderNeed(tt.v); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dataloaderNeed(%v) = %v, want an error with %q", tt.v, err, tt.want)
		}
	}
}
