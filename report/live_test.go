package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"github.com/shmdoctor/shmdoctor/probe"
)

// TestLiveBlockTopRow replays a probe's progress on a virtual 80×24 terminal with the
// block starting on the top row, as in a fresh tmux pane: every redraw must stay in place.
// Erasing below from the top-left cell makes tmux push the whole screen into its
// scrollback, so a redraw that erased that way left one copy of the block per redraw.
func TestLiveBlockTopRow(t *testing.T) {
	var out bytes.Buffer
	services := []string{"embedder", "trainer", "db"}
	p := NewProgress(&out, true, "probing llm", services)
	p.block.size = func() (int, int) { return 80, 24 }
	for i := range 20 {
		p.Update(probe.Event{Service: services[i%3], Stage: probe.StageMeasuring})
		p.Tick()
	}
	size := int64(64 << 20)
	p.Update(probe.Event{Service: "db", Stage: probe.StageDone, Measurement: &analyze.Measurement{Exists: true, MeasuredBytes: &size}})
	screen, scrollback := testutil.Terminal(out.String(), 80, 24)
	if len(scrollback) > 0 {
		t.Fatalf("%d lines went into the scrollback:\n%s", len(scrollback), strings.Join(scrollback, "\n"))
	}
	if len(screen) != 4 || screen[0] != "probing llm" || !strings.Contains(screen[3], "64 MiB") {
		t.Fatalf("screen:\n%s", strings.Join(screen, "\n"))
	}
	p.Clear()
	fmt.Fprint(&out, "report\n")
	screen, scrollback = testutil.Terminal(out.String(), 80, 24)
	if len(scrollback) > 0 || strings.Join(screen, "\n") != "report" {
		t.Fatalf("after Clear, screen:\n%s\nscrollback:\n%s", strings.Join(screen, "\n"), strings.Join(scrollback, "\n"))
	}
}

// TestLiveBlockShrinks: a drawing shorter than the one before leaves none of it behind.
func TestLiveBlockShrinks(t *testing.T) {
	var out bytes.Buffer
	b := newLiveBlock(&out, "… %d more")
	b.size = func() (int, int) { return 80, 24 }
	_ = b.draw([]string{"one", "two", "three"})
	_ = b.draw([]string{"four"})
	_ = b.draw([]string{"five", "six"})
	screen, scrollback := testutil.Terminal(out.String(), 80, 24)
	if got := strings.Join(screen, "\n"); got != "five\nsix" || len(scrollback) > 0 {
		t.Fatalf("screen:\n%s\nscrollback:\n%s", got, strings.Join(scrollback, "\n"))
	}
}
