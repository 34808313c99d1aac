//go:build linux

package agent

import (
	"io"
	"sort"
	"testing"
	"time"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestParseMemAvailable reads the line out of a /proc/meminfo text.
func TestParseMemAvailable(t *testing.T) {
	text := []byte("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   12345678 kB\nBuffers: 1 kB\n")
	if got, ok := parseMemAvailable(text); !ok || got != 12345678<<10 {
		t.Errorf("parseMemAvailable: %d %v", got, ok)
	}
	if _, ok := parseMemAvailable([]byte("MemTotal: 1 kB\n")); ok {
		t.Error("parseMemAvailable found a line that is not there")
	}
}

// TestFloorBeforeFirstChunk: on a host below the memory floor no worker gets a chunk, the
// first included (the probe's TestMeasuredBudget once saw 1 MiB written past a floor no host
// reaches, by a worker that lost the race to make the first reading); the writers then write
// nothing into the folder, and say the floor stopped them.
func TestFloorBeforeFirstChunk(t *testing.T) {
	const floor = 1 << 62
	c := newClaimer(1<<30, floor)
	for range 4 {
		if _, _, ok := c.claim(nil); ok {
			t.Fatal("a worker claimed a chunk on a host below the floor")
		}
	}
	if c.lowMem.Load() == 0 {
		t.Error("the claimer did not record the reading that stopped it")
	}
	p := newProgressWriter(io.Discard)
	if res := writeFiles(t.TempDir(), newClaimer(64<<20, floor), 4, p); p.written.Load() != 0 {
		t.Errorf("wrote %d bytes below the floor: %+v", p.written.Load(), res)
	}
	if c := newClaimer(1<<20, 1); c.stop.Load() {
		t.Error("a floor of one byte stopped the writers")
	}
}

// BenchmarkWriterMemFloor is the cost of reading MemAvailable before every chunk: the write
// probe's write(2) leg, 256 MiB into the host's /dev/shm (unlinked files: nothing stays), with
// and without the floor check, interleaved; it reports both medians and their ratio.
func BenchmarkWriterMemFloor(b *testing.B) {
	const target = 256 << 20
	var with, without []float64
	for b.Loop() {
		for _, floor := range []int64{0, DefaultMemFloor} {
			p := newProgressWriter(io.Discard)
			c := &claimer{target: target, floor: floor}
			start := time.Now()
			res := writeFiles("/dev/shm", c, 4, p)
			ms := float64(time.Since(start).Microseconds()) / 1000
			p.finish(res)
			if res.Outcome != analyze.WriteOK {
				b.Fatalf("floor %d: %+v", floor, res)
			}
			if floor == 0 {
				without = append(without, ms)
			} else {
				with = append(with, ms)
			}
		}
	}
	sort.Float64s(with)
	sort.Float64s(without)
	mw, mo := with[len(with)/2], without[len(without)/2]
	b.ReportMetric(mo, "ms-no-floor")
	b.ReportMetric(mw, "ms-floor")
	b.ReportMetric(mw/mo, "floor/no-floor")
}
