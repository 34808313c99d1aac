package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

func n64(v int64) *int64 { return &v }

// watchSummary is a summary as watch builds it: a rising service whose shm_size is right,
// replicas whose memory limit cannot hold the recommendation, an IPC joiner, a service
// that needs shm_size added, and one read by df whose low readings advise no reduction.
func watchSummary() *analyze.WatchSummary {
	const mib = 1 << 20
	cs := []analyze.WatchedContainer{
		{Name: "p-rise-1", Service: "rise", Number: 1, Running: true, Method: analyze.WatchAgent, SizeBytes: n64(128 * mib), UsedBytes: n64(16 * mib), PeakBytes: n64(48 * mib), Samples: 60},
		{Name: "p-scaled-1", Service: "scaled", Number: 1, Running: true, Method: analyze.WatchAgent, SizeBytes: n64(64 * mib), UsedBytes: n64(40 * mib), PeakBytes: n64(40 * mib), MemLimitBytes: n64(64 * mib), Samples: 60},
		{Name: "p-scaled-2", Service: "scaled", Number: 2, Running: true, Method: analyze.WatchAgent, SizeBytes: n64(64 * mib), UsedBytes: n64(40 * mib), PeakBytes: n64(40 * mib), MemLimitBytes: n64(64 * mib), Samples: 60},
		{Name: "p-donor-1", Service: "donor", Number: 1, Running: true, Method: analyze.WatchAgent, SizeBytes: n64(64 * mib), UsedBytes: n64(24 * mib), PeakBytes: n64(24 * mib)},
		{Name: "p-joiner-1", Service: "joiner", Number: 1, Running: true, Method: analyze.WatchAgent, SharesWith: "p-donor-1", SharesService: "donor", SizeBytes: n64(64 * mib), UsedBytes: n64(24 * mib), PeakBytes: n64(24 * mib)},
		{Name: "p-grow-1", Service: "grow", Number: 1, Running: false, Method: analyze.WatchAgent, SizeBytes: n64(64 * mib), PeakBytes: n64(60 * mib)},
		{Name: "p-held-1", Service: "held", Number: 1, Running: true, Method: analyze.WatchDf, SizeBytes: n64(256 * mib), UsedBytes: n64(0), PeakBytes: n64(0), Samples: 9},
	}
	s := &analyze.WatchSummary{Type: "summary", Project: "p", Duration: 9 * time.Second, Seconds: 9,
		Containers: cs, Services: analyze.SummarizeServices(cs), Methods: []analyze.WatchMethod{analyze.WatchAgent, analyze.WatchDf}}
	agent := []analyze.WatchMethod{analyze.WatchAgent}
	rise := analyze.Recommend(nil, "rise", 48*mib, n64(128*mib), nil, 1.5, agent)
	rise.Pos, rise.Set = analyze.Pos{File: "compose.yaml", Line: 5, Column: 5}, true
	grow := analyze.Recommend(nil, "grow", 60*mib, n64(64*mib), nil, 1.5, agent)
	grow.Pos = analyze.Pos{File: "compose.yaml", Line: 20, Column: 3}
	grow.Diff = "--- a/compose.yaml\n+++ b/compose.yaml\n@@ -20,2 +20,3 @@\n   grow:\n     image: loader\n+    shm_size: 128m\n"
	s.Recommendations = []analyze.ShmRecommendation{
		analyze.Recommend(nil, "donor", 24*mib, n64(64*mib), nil, 1.5, agent),
		grow,
		analyze.Recommend(nil, "held", 0, n64(256*mib), nil, 1.5, []analyze.WatchMethod{analyze.WatchDf}),
		rise,
		analyze.Recommend(nil, "scaled", 40*mib, n64(64*mib), n64(64*mib), 1.5, agent),
	}
	s.Notes = append([]string{analyze.SharedNote(s.Services[3])}, analyze.WatchNotes(s.Methods)...)
	return s
}

func TestWatchText(t *testing.T) {
	var b bytes.Buffer
	if err := WatchText(&b, watchSummary(), Options{}); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "watch.txt"), b.String(), *update, "go test ./report -update")
}

// TestWatchTextDaemonError: a watch the daemon ended says so, not "ended by --duration".
func TestWatchTextDaemonError(t *testing.T) {
	s := watchSummary()
	s.DaemonError = "the Docker daemon at unix:///var/run/docker.sock stopped answering"
	var b bytes.Buffer
	if err := WatchText(&b, s, Options{}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if !strings.Contains(first, "(ended by the daemon: the Docker daemon at unix:///var/run/docker.sock stopped answering)") || strings.Contains(first, "--duration") {
		t.Errorf("first line %q, want it to say the daemon ended the watch", first)
	}
}

func TestWatchLive(t *testing.T) {
	s := watchSummary()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := analyze.WatchSample{Type: "sample", Time: start.Add(7 * time.Second), Project: s.Project, Services: s.Services, Containers: s.Containers}
	got := strings.Join(liveLines(sample, start, time.Second, newPalette(false), 120), "\n") + "\n"
	testutil.Golden(t, filepath.Join("testdata", "watch-live.txt"), got, *update, "go test ./report -update")

	// On a terminal each drawing goes back over the previous one.
	var b bytes.Buffer
	v := NewLiveView(&b, false)
	v.size = func() (int, int) { return 120, 40 }
	for range 2 {
		if err := v.Draw(sample, start, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(b.String(), "\x1b[8F"); n != 1 {
		t.Errorf("the second drawing moved back over the first %d times, want once:\n%q", n, b.String())
	}
}

// TestWatchLive80 draws the live view on an 80-column terminal: the headroom, the verdict
// of the memory limit column, is never cut ("64 MiB, 2…" was all that showed).
func TestWatchLive80(t *testing.T) {
	s := watchSummary()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := analyze.WatchSample{Type: "sample", Time: start.Add(7 * time.Second), Project: s.Project, Services: s.Services, Containers: s.Containers}
	got := strings.Join(liveLines(sample, start, time.Second, newPalette(false), 80), "\n") + "\n"
	testutil.Golden(t, filepath.Join("testdata", "watch-live-80.txt"), got, *update, "go test ./report -update")
	var b bytes.Buffer
	v := NewLiveView(&b, true)
	v.size = func() (int, int) { return 80, 24 }
	for range 3 {
		if err := v.Draw(sample, start, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	screen, scrollback := testutil.Terminal(b.String(), 80, 24)
	text := strings.Join(screen, "\n")
	if len(scrollback) > 0 || !strings.Contains(text, "24 MiB headroom") || strings.Contains(text, "…") {
		t.Errorf("screen:\n%s\nscrollback:\n%s", text, strings.Join(scrollback, "\n"))
	}
}

// TestWatchLiveNarrow draws on a terminal narrower and shorter than the view: the view moves
// back over what it drew by counting lines, so no line may wrap and none may scroll away.
func TestWatchLiveNarrow(t *testing.T) {
	s := watchSummary()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := analyze.WatchSample{Type: "sample", Time: start.Add(7 * time.Second), Project: s.Project, Services: s.Services, Containers: s.Containers}
	const width, height = 40, 6
	var b bytes.Buffer
	v := NewLiveView(&b, true)
	v.size = func() (int, int) { return width, height }
	for range 2 {
		if err := v.Draw(sample, start, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	screen, scrollback := testutil.Terminal(b.String(), width, height)
	if len(scrollback) > 0 || len(screen) > height-1 || v.lines != len(screen) {
		t.Errorf("%d lines on screen, %d counted, %d in the scrollback, on a terminal of %d rows:\n%s", len(screen), v.lines, len(scrollback), height, strings.Join(screen, "\n"))
	}
	drawn := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range drawn {
		if w := lipgloss.Width(l); w > width {
			t.Errorf("a line of %d columns on a terminal of %d wraps: %q", w, width, l)
		}
	}
}

func TestWatchJSON(t *testing.T) {
	var b bytes.Buffer
	s := watchSummary()
	if err := WatchJSONSample(&b, analyze.WatchSample{Type: "sample", Project: "p", Services: s.Services, Containers: s.Containers}); err != nil {
		t.Fatal(err)
	}
	if err := WatchJSONSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per object", len(lines))
	}
	for i, want := range []string{"sample", "summary"} {
		var doc map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &doc); err != nil || doc["type"] != want {
			t.Errorf("line %d: type %v, %v", i+1, doc["type"], err)
		}
	}
	var sum map[string]any
	_ = json.Unmarshal([]byte(lines[1]), &sum)
	recs, _ := sum["recommendations"].([]any)
	if len(recs) != 5 || recs[4].(map[string]any)["fits_memory_limit"] != false || recs[3].(map[string]any)["shm_size"] != "128m" ||
		!strings.Contains(fmt.Sprint(recs[2].(map[string]any)["no_reduction"]), "df reads") {
		t.Errorf("recommendations: %v", sum["recommendations"])
	}
}
