package report

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// TestTextOneBlockPerService loads a service whose findings come from three files (the
// base it extends in base.yaml, its own compose.yaml, compose.override.yaml) with another
// service's finding between them in file order: the text report prints it as one block,
// its findings sorted by file and line.
func TestTextOneBlockPerService(t *testing.T) {
	t.Chdir(moduleRoot(t))
	rep := &Report{}
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{"testdata/report/split"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading: %v", p.Errors[0])
		}
		rep.Projects = append(rep.Projects, &Project{Project: p, Findings: rules.Check(p, analyze.Config{})})
	}
	var out bytes.Buffer
	if err := Text(&out, rep, Options{Width: 1000}); err != nil { // every finding, info too, on one line
		t.Fatal(err)
	}
	header := regexp.MustCompile(`^  (\S+)$`)
	finding := regexp.MustCompile(`^    \S+ +SHM\d+ (\S+?):(\d+):(\d+) `)
	blocks := map[string]int{}
	files := map[string]map[string]bool{}
	var service, lastFile string
	lastLine := 0
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		if m := header.FindSubmatch(l); m != nil {
			service, lastFile, lastLine = string(m[1]), "", 0
			blocks[service]++
			continue
		}
		m := finding.FindSubmatch(l)
		if m == nil {
			continue
		}
		file, line := string(m[1]), atoi(t, m[2])
		if file < lastFile || file == lastFile && line < lastLine {
			t.Errorf("%s: %s:%d listed after %s:%d", service, file, line, lastFile, lastLine)
		}
		lastFile, lastLine = file, line
		if files[service] == nil {
			files[service] = map[string]bool{}
		}
		files[service][file] = true
	}
	for s, n := range blocks {
		if n != 1 {
			t.Errorf("service %s is printed in %d blocks:\n%s", s, n, out.String())
		}
	}
	if len(files["trainer"]) != 3 || blocks["browser"] != 1 {
		t.Errorf("the fixture no longer splits trainer's findings over three files around browser's: %v\n%s", files, out.String())
	}
}

func atoi(t *testing.T, b []byte) int {
	t.Helper()
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTextBudgetCapped: a write probe the run's memory budget capped passed at the lower
// target only: the table marks it and a note says what was tested instead.
func TestTextBudgetCapped(t *testing.T) {
	t.Chdir(moduleRoot(t))
	rep := &Report{}
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{"testdata/demo"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading: %v", p.Errors[0])
		}
		size := int64(2 << 30)
		reason := "target 2 GiB capped at 96 MiB by the run's memory budget (96 MiB: set by the caller)"
		ms := map[string]*analyze.Measurement{"trainer": {Exists: true, MeasuredBytes: &size, FreeBytes: &size,
			Write: &analyze.Write{Mode: "write", TargetBytes: 96 << 20, WrittenBytes: 96 << 20, Outcome: analyze.WriteOK, GBps: 1, Reason: reason, BudgetCapped: true}}}
		rep.Projects = append(rep.Projects, &Project{Project: p, Measurements: ms, Findings: rules.Check(p, analyze.Config{})})
	}
	var out bytes.Buffer
	// wide enough that no line wraps: this test is about what is said
	if err := Text(&out, rep, Options{Width: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok 96 MiB @ 1.0 GB/s (capped)",
		"probe: trainer: the write probe did not test the service's full size: target 2 GiB capped at 96 MiB by the run's memory budget"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// measuredDemo is the demo with the measurements of a real probe run on the development
// machine (Docker 20.10, 23.5 GiB of RAM), written out: the figures of a live run (host
// memory, GB/s) differ on every machine and run.
func measuredDemo(t *testing.T) *Report {
	t.Helper()
	rep := demoReport(t)
	size := func(n int64) *int64 { return &n }
	write := func(o analyze.WriteOutcome, written, target int64, gbps float64) *analyze.Write {
		return &analyze.Write{Mode: "write", Outcome: o, WrittenBytes: written, TargetBytes: target, GBps: gbps}
	}
	rep.Projects[0].Measurements = map[string]*analyze.Measurement{
		"embedder":  {Exists: true, MeasuredBytes: size(64 << 20), Write: write(analyze.WriteOK, 64<<20, 64<<20, 0.6)},
		"evaluator": {CreateError: "Error response from daemon: can't join IPC of container trainer: non-shareable IPC"},
		"gateway":   {Exists: true, MeasuredBytes: size(64 << 20), Write: write(analyze.WriteOK, 64<<20, 64<<20, 0.5)},
		"pgvector":  {Exists: true, MeasuredBytes: size(12083 << 20), Write: write(analyze.WriteOK, 128<<20, 128<<20, 0.4)},
		"scraper":   {Exists: true, MeasuredBytes: size(64 << 20), Write: write(analyze.WriteENOSPC, 64<<20, 2<<30, 0.9)},
		"trainer":   {Exists: true, MeasuredBytes: size(2 << 30), Write: write(analyze.WriteOOMKilled, 1536<<20, 2252<<20, 0.7)},
		"vllm":      {Exists: true, MeasuredBytes: size(24064 << 20), Write: write(analyze.WriteOK, 256<<20, 256<<20, 0.4)},
	}
	return rep
}

// TestTextWidths holds the measured demo's report at 80 and 120 columns: no line wider,
// lines broken between words only, the verdicts whole.
func TestTextWidths(t *testing.T) {
	rep := measuredDemo(t)
	full := renderWith(t, "text", rep, Options{Width: 100000})
	for _, width := range []int{80, 120} {
		got := renderWith(t, "text", rep, Options{Width: width})
		golden(t, fmt.Sprintf("demo-measured-%d.txt", width), got)
		for _, l := range strings.Split(got, "\n") {
			if n := lipgloss.Width(l); n > width {
				t.Errorf("%d columns: a line of %d: %q", width, n, l)
			}
		}
		// Every word of the unwrapped findings is there, whole, in the same order.
		findings := func(s string) string {
			before, _, _ := strings.Cut(s, "\n\n")
			return strings.Join(strings.Fields(before), " ")
		}
		if findings(full) != findings(got) {
			t.Errorf("%d columns: the words of the findings differ from the unwrapped report", width)
		}
		for _, verdict := range []string{"enospc 64 MiB", "oom_killed 1.5 GiB", "create failed"} {
			if !strings.Contains(got, verdict) {
				t.Errorf("%d columns: %q is cut", width, verdict)
			}
		}
	}
}

// TestTextColourFollowsOutcome: a size whose write hit ENOSPC is red, not green.
func TestTextColourFollowsOutcome(t *testing.T) {
	pal := newPalette(true)
	got := renderWith(t, "text", measuredDemo(t), Options{Width: 200, Color: true})
	var scraper string
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "  scraper ") {
			scraper = l
		}
	}
	if !strings.Contains(scraper, pal.Severity[analyze.Error].Render("64 MiB")) || strings.Contains(scraper, pal.OK.Render("64 MiB")) {
		t.Errorf("the scraper's measured size is not red after ENOSPC: %q", scraper)
	}
}

// TestPlainWords: the raw engine errors the doctor knows get plain words; others none.
func TestPlainWords(t *testing.T) {
	for raw, want := range map[string]string{
		"docker refused the service's settings: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 8: operation not permitted: unknown": "the engine refused the memlock ulimit (rlimit type 8)",
		"error setting rlimit type 3: operation not permitted":                                                         "the engine refused the stack ulimit (rlimit type 3)",
		"can't join IPC of container trainer: non-shareable IPC (hint: use IpcMode:shareable for the donor container)": "(trainer) does not share it: it needs ipc: shareable",
		"error setting rlimit type 99: operation not permitted":                                                        "",
		"no space left on device": "",
	} {
		if got := plainWords(raw); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("plainWords(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestWriteNeverAboveSize: the WRITE column shows no more than /dev/shm holds, whatever the
// agent counted when ENOSPC stopped it.
func TestWriteNeverAboveSize(t *testing.T) {
	size := int64(64 << 20)
	m := &analyze.Measurement{Exists: true, MeasuredBytes: &size,
		Write: &analyze.Write{Outcome: analyze.WriteENOSPC, WrittenBytes: 66 << 20, TargetBytes: 2 << 30}}
	if got := measured(m); got[1] != "enospc 64 MiB" {
		t.Errorf("WRITE %q, want enospc 64 MiB", got[1])
	}
}
