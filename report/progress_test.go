package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"github.com/shmdoctor/shmdoctor/probe"
)

// TestProgress replays the block a probe run draws, as a terminal shows it: one line per
// service rewritten in place, and nothing left once cleared.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := NewProgress(&out, false, "probing llm", []string{"trainer", "db", "trainer"})
	p.now = func() time.Time { return clock }
	screen := func() string { return strings.Join(testutil.Screen(out.String()), "\n") }

	p.Update(probe.Event{Service: "trainer", Stage: probe.StageWaiting})
	p.Update(probe.Event{Service: "db", Stage: probe.StageWaiting})
	p.Update(probe.Event{Service: "trainer", Stage: probe.StageMeasuring})
	clock = clock.Add(2500 * time.Millisecond)
	p.Tick()
	want := "probing llm\n  trainer  measuring 2.5s\n  db       waiting"
	if got := screen(); got != want {
		t.Fatalf("screen:\n%s\nwant:\n%s", got, want)
	}
	// The write probe's progress updates the line; its clock runs from the first report.
	p.Update(probe.Event{Service: "trainer", Stage: probe.StageWriting, Write: &analyze.Write{Mode: "write", TargetBytes: 8 << 30, WrittenBytes: 1 << 30}})
	clock = clock.Add(time.Second)
	p.Update(probe.Event{Service: "trainer", Stage: probe.StageWriting, Write: &analyze.Write{Mode: "write", TargetBytes: 8 << 30, WrittenBytes: 3 << 30}})
	want = "probing llm\n  trainer  writing 3 GiB of 8 GiB (write) 1.0s\n  db       waiting"
	if got := screen(); got != want {
		t.Fatalf("screen:\n%s\nwant:\n%s", got, want)
	}

	size := int64(64 << 20)
	p.Update(probe.Event{Service: "trainer", Stage: probe.StageDone, Measurement: &analyze.Measurement{
		Exists: true, MeasuredBytes: &size,
		Write: &analyze.Write{Outcome: analyze.WriteENOSPC, WrittenBytes: size},
	}})
	p.Update(probe.Event{Service: "db", Stage: probe.StageDone, Measurement: &analyze.Measurement{CreateError: "conflicting options"}})
	p.Update(probe.Event{Service: "unknown", Stage: probe.StageStarting})
	want = "probing llm\n  trainer  64 MiB  write enospc 64 MiB\n  db       docker refused the container"
	if got := screen(); got != want {
		t.Fatalf("screen:\n%s\nwant:\n%s", got, want)
	}

	p.Clear()
	p.Update(probe.Event{Service: "db", Stage: probe.StageMeasuring})
	if got := screen(); got != "" {
		t.Fatalf("screen after Clear:\n%s", got)
	}
}

// TestProgressNarrow: on a terminal smaller than the block, lines are cut to its width and
// the services that do not fit are counted, so that redrawing never leaves lines behind.
func TestProgressNarrow(t *testing.T) {
	var out bytes.Buffer
	p := NewProgress(&out, false, "probing a-long-project-name", []string{"trainer", "db", "cache", "web"})
	p.block.size = func() (int, int) { return 20, 4 }
	p.Update(probe.Event{Service: "trainer", Stage: probe.StageMeasuring})
	p.Update(probe.Event{Service: "db", Stage: probe.StageMeasuring})
	got := strings.Join(testutil.Screen(out.String()), "\n")
	want := "probing a-long-proj…\n  trainer  measurin…\n  … 3 more services"
	if got != want {
		t.Fatalf("screen:\n%s\nwant:\n%s", got, want)
	}
}

// TestProgressColourFollowsOutcome: a finished line shows its size in green only when the
// write probe filled what it aimed at; after ENOSPC the size is red.
func TestProgressColourFollowsOutcome(t *testing.T) {
	var out bytes.Buffer
	p := NewProgress(&out, true, "probing llm", []string{"scraper"})
	size := int64(64 << 20)
	p.Update(probe.Event{Service: "scraper", Stage: probe.StageDone, Measurement: &analyze.Measurement{
		Exists: true, MeasuredBytes: &size, Write: &analyze.Write{Outcome: analyze.WriteENOSPC, WrittenBytes: size},
	}})
	if strings.Contains(out.String(), p.pal.OK.Render("64 MiB")) || !strings.Contains(out.String(), p.pal.Severity[analyze.Error].Render("64 MiB")) {
		t.Errorf("the size after ENOSPC is not red: %q", out.String())
	}
}

// TestProgressLongName80: on an 80-column terminal a long service name is shortened, not
// the verdict after it.
func TestProgressLongName80(t *testing.T) {
	var out bytes.Buffer
	long := "a-service-name-of-forty-characters-long1"
	p := NewProgress(&out, false, "probing llm", []string{long})
	p.block.size = func() (int, int) { return 80, 24 }
	size, limit := int64(2<<30), int64(1536<<20)
	p.Update(probe.Event{Service: long, Stage: probe.StageDone, Measurement: &analyze.Measurement{
		Exists: true, MeasuredBytes: &size,
		Write: &analyze.Write{Outcome: analyze.WriteOOMKilled, WrittenBytes: limit, GBps: 0.7, BudgetCapped: true},
	}})
	screen, _ := testutil.Terminal(out.String(), 80, 24)
	if len(screen) != 2 || !strings.HasSuffix(screen[1], "write oom_killed 1.5 GiB @ 0.7 GB/s (capped)") {
		t.Errorf("screen:\n%s", strings.Join(screen, "\n"))
	}
}

// TestProgressSharedPrefix: at a narrow width, two services whose names share a long
// prefix keep lines that tell them apart: the name is shortened in its middle, its end kept.
func TestProgressSharedPrefix(t *testing.T) {
	var out bytes.Buffer
	a, b := "inference-worker-replica-primary", "inference-worker-replica-secondary"
	p := NewProgress(&out, false, "probing llm", []string{a, b})
	p.block.size = func() (int, int) { return 70, 24 }
	p.Update(probe.Event{Service: a, Stage: probe.StageMeasuring})
	p.Update(probe.Event{Service: b, Stage: probe.StageMeasuring})
	screen, _ := testutil.Terminal(out.String(), 70, 24)
	if len(screen) != 3 {
		t.Fatalf("screen:\n%s", strings.Join(screen, "\n"))
	}
	name := func(l string) string { return strings.Fields(l)[0] }
	na, nb := name(screen[1]), name(screen[2])
	for _, c := range []struct{ shown, full string }{{na, a}, {nb, b}} {
		head, tail, cut := strings.Cut(c.shown, "…")
		if !cut || !strings.HasPrefix(c.full, head) || !strings.HasSuffix(c.full, tail) || len(tail) < len(head) {
			t.Errorf("%q is not %q shortened in its middle, keeping its end", c.shown, c.full)
		}
	}
	if na == nb {
		t.Errorf("the two services both read %q:\n%s", na, strings.Join(screen, "\n"))
	}
	for _, l := range screen {
		if n := len([]rune(l)); n > 70 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
}
