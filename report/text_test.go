package report

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestTextOneBlockPerService loads a service whose findings come from three files (the
// base it extends in base.yaml, its own compose.yaml, compose.override.yaml) with another
// service's finding between them in file order: the text report prints it as one block,
// its findings sorted by file and line.
func TestTextOneBlockPerService(t *testing.T) {
	t.Chdir(moduleRoot(t))
	rep := &Report{}
	for _, p := range analyze.Load(context.Background(), analyze.Options{Paths: []string{"testdata/report/split"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading: %v", p.Errors[0])
		}
		rep.Projects = append(rep.Projects, &Project{Project: p, Findings: analyze.Check(p, analyze.Config{})})
	}
	var out bytes.Buffer
	if err := Text(&out, rep, Options{Quiet: true}); err != nil {
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
	for _, p := range analyze.Load(context.Background(), analyze.Options{Paths: []string{"testdata/demo"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading: %v", p.Errors[0])
		}
		size := int64(2 << 30)
		reason := "target 2 GiB capped at 96 MiB by the run's memory budget (96 MiB: set by the caller)"
		ms := map[string]*analyze.Measurement{"trainer": {Exists: true, MeasuredBytes: &size, FreeBytes: &size,
			Write: &analyze.Write{Mode: "write", TargetBytes: 96 << 20, WrittenBytes: 96 << 20, Outcome: analyze.WriteOK, GBps: 1, Reason: reason, BudgetCapped: true}}}
		rep.Projects = append(rep.Projects, &Project{Project: p, Measurements: ms, Findings: analyze.Check(p, analyze.Config{})})
	}
	var out bytes.Buffer
	if err := Text(&out, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok 96 MiB @ 1.0 GB/s (capped)",
		"probe: trainer: the write probe did not test the service's full size: target 2 GiB capped at 96 MiB by the run's memory budget"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
