package rules_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// want is an expected finding: a rule at a line, optionally with a severity, or
// "suppressed" for a finding a suppression silences.
type want struct {
	file     string
	line     int
	rule     string
	severity string
}

var wantComment = regexp.MustCompile(`#\s*want\s+(.+)$`)

// fixtureWants reads the "# want SHM001[=severity|=suppressed] ..." comments of every YAML
// file of a fixture folder.
func fixtureWants(t *testing.T, dir string) []want {
	t.Helper()
	var out []want
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		abs, _ := filepath.Abs(path)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			m := wantComment.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			for _, w := range strings.Fields(m[1]) {
				rule, sev, _ := strings.Cut(w, "=")
				out = append(out, want{file: abs, line: line, rule: rule, severity: sev})
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fixtureConfig reads a "# shmdoctor: --target swarm --policy isolation --need 1g" header.
func fixtureConfig(t *testing.T, dir string) (analyze.Config, *int64) {
	t.Helper()
	return fixtureHeader(t, filepath.Join(dir, "compose.yaml"))
}

// fixtureHeader reads the "# shmdoctor: ..." header of one fixture file.
func fixtureHeader(t *testing.T, file string) (analyze.Config, *int64) {
	t.Helper()
	var cfg analyze.Config
	var need *int64
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	args, ok := strings.CutPrefix(first, "# shmdoctor:")
	if !ok {
		return cfg, nil
	}
	f := strings.Fields(args)
	for i := 0; i+1 < len(f); i += 2 {
		switch f[i] {
		case "--target":
			cfg.Target = analyze.Target(f[i+1])
		case "--policy":
			cfg.Policy = analyze.Policy(f[i+1])
		case "--need":
			n, err := analyze.ParseSize(f[i+1])
			if err != nil {
				t.Fatal(err)
			}
			need = &n
		default:
			t.Fatalf("unknown fixture flag %s", f[i])
		}
	}
	return cfg, need
}

// TestRules runs the rules over every fixture under testdata/rules and matches findings to
// the want comments: an unexpected finding and an unmatched want both fail.
func TestRules(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/rules/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, need := fixtureConfig(t, dir)
			projects := compose.Load(context.Background(), compose.Options{Paths: []string{dir}, Need: need, Target: cfg.Target})
			if len(projects) != 1 {
				t.Fatalf("loaded %d projects, want 1", len(projects))
			}
			p := projects[0]
			for _, e := range p.Errors {
				t.Fatalf("load error: %v", e)
			}
			checkWants(t, rules.Check(p, cfg), fixtureWants(t, dir))
		})
	}
}

func checkWants(t *testing.T, findings []analyze.Finding, wants []want) {
	t.Helper()
	used := make([]bool, len(wants))
	for _, f := range findings {
		file, _ := filepath.Abs(f.File)
		found := false
		for i, w := range wants {
			if used[i] || w.file != file || w.line != f.Line || w.rule != f.Rule {
				continue
			}
			switch {
			case (w.severity == "suppressed") != (f.Suppressed != nil):
				t.Errorf("%s: %s suppressed by %+v, want %q", f.Pos, f.Rule, f.Suppressed, w.severity)
			case w.severity != "" && w.severity != "suppressed" && w.severity != f.Severity.String():
				t.Errorf("%s: %s has severity %s, want %s", f.Pos, f.Rule, f.Severity, w.severity)
			}
			used[i], found = true, true
			break
		}
		if !found && f.Suppressed != nil {
			t.Errorf("unexpected suppressed finding %s %s (%s): %s (want %s=suppressed)", f.Pos, f.Rule, f.Service, f.Message, f.Rule)
		} else if !found {
			t.Errorf("unexpected finding %s %s (%s): %s", f.Pos, f.Rule, f.Service, f.Message)
		}
	}
	for i, w := range wants {
		if !used[i] {
			t.Errorf("%s:%d: no %s finding", filepath.Base(w.file), w.line, w.rule)
		}
	}
}

// TestRegistry enforces the text conventions and that every rule has a fixture and a doc.
func TestRegistry(t *testing.T) {
	if !sort.SliceIsSorted(rules.All, func(i, j int) bool { return rules.All[i].ID < rules.All[j].ID }) {
		t.Error("Rules is not sorted by ID")
	}
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, r := range rules.All {
		if seen[r.ID] || seen[r.Name] {
			t.Errorf("%s: duplicate ID or name", r.ID)
		}
		seen[r.ID], seen[r.Name] = true, true
		if !regexp.MustCompile(`^SHM\d{3}$`).MatchString(r.ID) {
			t.Errorf("%s: ID is not SHMnnn", r.ID)
		}
		if !kebab.MatchString(r.Name) {
			t.Errorf("%s: name %q is not kebab-case", r.ID, r.Name)
		}
		if len(r.Title) > 60 || strings.HasSuffix(r.Title, ".") || hasUpperStart(r.Title) {
			t.Errorf("%s: title %q must be lowercase, without a period, at most 60 characters", r.ID, r.Title)
		}
		if r.Severity == 0 || r.Check == nil {
			t.Errorf("%s: missing severity or check", r.ID)
		}
		d := r.Doc
		if d.Rationale == "" || d.Problematic == "" || d.Correct == "" || d.Exceptions == "" || len(d.Sources) == 0 {
			t.Errorf("%s: doc needs rationale, problematic, correct, exceptions and sources", r.ID)
		}
		for _, s := range d.Sources {
			if !strings.Contains(s, "https://") {
				t.Errorf("%s: source %q has no https link", r.ID, s)
			}
		}
		switch {
		case r.Kubernetes:
			if m, _ := filepath.Glob("../../testdata/k8s/" + r.ID + "*"); len(m) == 0 {
				t.Errorf("%s: no fixture folder testdata/k8s/%s", r.ID, r.ID)
			}
		case !r.Probe:
			if m, _ := filepath.Glob("../../testdata/rules/" + r.ID + "*"); len(m) == 0 {
				t.Errorf("%s: no fixture folder testdata/rules/%s", r.ID, r.ID)
			}
		}
	}
}

// TestFindingText checks the message and remediation conventions on every finding the
// fixtures produce: messages lowercase without a final period, remediations full sentences.
func TestFindingText(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/rules/*")
	k8sDirs, _ := filepath.Glob("../../testdata/k8s/*")
	n := 0
	for _, dir := range append(dirs, k8sDirs...) {
		var cfg analyze.Config
		var need *int64
		if strings.Contains(dir, "rules") {
			cfg, need = fixtureConfig(t, dir)
		} else {
			cfg, need = k8sFixtureConfig(t, dir)
		}
		for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{dir}, Need: need}) {
			for _, f := range rules.Check(p, cfg) {
				n++
				where := fmt.Sprintf("%s %s", f.Pos, f.Rule)
				if hasUpperStart(f.Message) || strings.HasSuffix(f.Message, ".") {
					t.Errorf("%s: message %q must start lowercase and have no final period", where, f.Message)
				}
				if !hasUpperStart(f.Remediation) || !strings.HasSuffix(f.Remediation, ".") {
					t.Errorf("%s: remediation %q must be a sentence ending with a period", where, f.Remediation)
				}
				if f.Line == 0 || f.Column == 0 {
					t.Errorf("%s: finding without line and column", where)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d findings in the fixtures", n)
	}
}

func hasUpperStart(s string) bool {
	for _, r := range s {
		return unicode.IsUpper(r)
	}
	return false
}
