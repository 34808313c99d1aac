package rules_test

import (
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/reference"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

var updateFixes = flag.Bool("update-fixes", false, "rewrite the golden diffs of testdata/fix")

// findingKey names a finding across runs, whose lines move as fixes add and remove lines.
func findingKey(f analyze.Finding) string { return f.Rule + " " + f.Service }

// fixRound loads a project, checks it and applies the fixes, writing the patched files
// back. It returns the findings, the fixes applied and each service's /dev/shm before
// them, and checks that no remediation advises less /dev/shm than a service has.
func fixRound(t *testing.T, path string, cfg analyze.Config, need *int64, k *keepStats) ([]analyze.Finding, []*analyze.Fix, map[string]shmNow) {
	t.Helper()
	var findings []analyze.Finding
	var applied []*analyze.Fix
	plans := map[string]shmNow{}
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{path}, Need: need, Target: cfg.Target}) {
		for _, e := range p.Errors {
			t.Fatalf("load error: %v", e)
		}
		fs := rules.Check(p, cfg)
		findings = append(findings, fs...)
		checkAdvice(t, k, p, fs)
		maps.Copy(plans, plansOf(p))
		var fixes []*analyze.Fix
		for _, f := range fs {
			if f.Fix != nil {
				fixes = append(fixes, f.Fix)
			}
		}
		pt, err := fix.Apply(p, fixes)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pt.Files {
			if err := os.WriteFile(c.Path, c.After, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		applied = append(applied, pt.Applied...)
	}
	return findings, applied, plans
}

// fixCase is a project to fix in a folder of its own.
type fixCase struct {
	dir    string // a copy the test may change
	path   string // what to load: dir, or a file in it
	cfg    analyze.Config
	need   *int64
	ref    string // the reference docker compose, "" for Kubernetes manifests
	golden string // the golden diff, "" for none
	keep   *keepStats
}

// checkFixes applies every fix of a project, round after round until none is left, and
// checks each round against the last: the fixed findings are gone and no finding appears
// that was not there. With a golden file the whole change is held in it; for compose the
// reference docker compose must load the fixed project with nothing changed but the keys
// the fixes name. No remediation and no round of fixes may leave a service with less
// /dev/shm than it had (keep_test.go). It returns the number of fixes applied.
func checkFixes(t *testing.T, c fixCase) int {
	t.Helper()
	original := readTree(t, c.dir)
	var refBefore map[string]any
	if c.ref != "" && anyFix(c) { // docker compose runs are the slow part
		refBefore = composeConfig(t, c.ref, c.dir, c.path)
	}
	var all []*analyze.Fix
	findings, applied, plans := fixRound(t, c.path, c.cfg, c.need, c.keep)
	for round := 1; len(applied) > 0; round++ {
		if round > 3 {
			t.Fatalf("fixes still apply after %d rounds", round)
		}
		all = append(all, applied...)
		before, fixed := map[string]int{}, map[string]int{}
		for _, f := range findings {
			before[findingKey(f)]++
			if f.Fix != nil && slices.Contains(applied, f.Fix) {
				fixed[findingKey(f)]++
			}
		}
		next, nextApplied, nextPlans := fixRound(t, c.path, c.cfg, c.need, c.keep)
		checkKept(t, c.keep, plans, nextPlans, applied)
		after := map[string]int{}
		for _, f := range next {
			after[findingKey(f)]++
		}
		for k, n := range after {
			if n > before[k]-fixed[k] {
				t.Errorf("round %d: %d %s after the fixes, %d before of which %d fixed", round, n, k, before[k], fixed[k])
			}
		}
		findings, applied, plans = next, nextApplied, nextPlans
	}
	for _, f := range findings {
		if f.Fix != nil {
			t.Errorf("%s %s still has a fix after the fixes: %s", f.Pos, f.Rule, f.Fix.Description)
		}
	}

	diff := diffTree(original, readTree(t, c.dir))
	switch {
	case c.golden == "":
	case diff == "":
		if *updateFixes {
			os.Remove(c.golden)
		}
		if _, err := os.Stat(c.golden); err == nil {
			t.Errorf("%s exists but nothing was fixed", c.golden)
		}
	default:
		testutil.Golden(t, c.golden, diff, *updateFixes, "go test ./analyze -run TestFixes -update-fixes")
	}

	if refBefore == nil {
		return len(all)
	}
	refAfter := composeConfig(t, c.ref, c.dir, c.path)
	if refAfter == nil {
		t.Fatalf("docker compose loads the project but not the fixed files:\n%s", diff)
	}
	paths := func(f *analyze.Fix) [][]string {
		var out [][]string
		for _, k := range f.Keys {
			out = append(out, append([]string{"services", f.Service}, strings.Split(k, ".")...))
		}
		return out
	}
	for _, f := range all {
		changed := false
		for _, path := range paths(f) {
			changed = changed || !reflect.DeepEqual(lookupJSON(refBefore, path), lookupJSON(refAfter, path))
		}
		if !changed {
			t.Errorf("docker compose sees no change from fix %q", f.Description)
		}
	}
	for _, f := range all {
		for _, path := range paths(f) {
			deleteJSON(refBefore, path)
			deleteJSON(refAfter, path)
		}
	}
	if !reflect.DeepEqual(refBefore, refAfter) {
		b, _ := json.MarshalIndent(refBefore, "", "  ")
		a, _ := json.MarshalIndent(refAfter, "", "  ")
		t.Errorf("the fixes changed more than their keys:\n%s", fix.UnifiedDiff("before", "after", b, a))
	}
	return len(all)
}

// anyFix reports whether the project has a finding with a fix.
func anyFix(c fixCase) bool {
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{c.path}, Need: c.need, Target: c.cfg.Target}) {
		for _, f := range rules.Check(p, c.cfg) {
			if f.Fix != nil {
				return true
			}
		}
	}
	return false
}

// TestFixes applies every fix to the fixture of its rule (checkFixes says how it is
// judged) and holds the change of each fixture in a golden diff under testdata/fix.
func TestFixes(t *testing.T) {
	ref := reference.ComposeFor(t)
	rules, _ := filepath.Glob("../../testdata/rules/*")
	k8s, _ := filepath.Glob("../../testdata/k8s/*")
	total, keep := 0, &keepStats{}
	for _, dir := range append(rules, k8s...) {
		kind := filepath.Base(filepath.Dir(dir))
		t.Run(kind+"/"+filepath.Base(dir), func(t *testing.T) {
			c := fixCase{golden: filepath.Join("..", "..", "testdata", "fix", kind+"-"+filepath.Base(dir)+".diff"), keep: keep}
			c.dir = testutil.CopyTree(t, dir)
			c.path = c.dir
			if kind == "rules" {
				c.cfg, c.need = fixtureConfig(t, dir)
				c.ref = ref
			} else {
				c.cfg, c.need = k8sFixtureConfig(t, dir)
			}
			total += checkFixes(t, c)
		})
	}
	if total < 30 {
		t.Errorf("only %d fixes over every fixture", total)
	}
	t.Logf("/dev/shm kept over the fixtures: %s", keep)
	if keep.remediations < 30 {
		t.Errorf("only %d remediations named a size: the pattern misses how they are written", keep.remediations)
	}
}

// TestFixCorpus applies the fixes to every file of the corpus of real compose files and
// manifests, both policies, with the same checks as the fixtures but no golden. The files
// are fixed in parallel, each in a copy of its own; the totals are judged once all are done.
func TestFixCorpus(t *testing.T) {
	ref := reference.ComposeFor(t)
	dir := testutil.Corpus(t)
	var total atomic.Int64
	keep := &keepStats{}
	t.Cleanup(func() {
		t.Logf("%d fixes over the corpus; /dev/shm kept: %s", total.Load(), keep)
		if total.Load() < 50 {
			t.Errorf("only %d fixes over the corpus", total.Load())
		}
	})
	for _, row := range testutil.CorpusRows(t, dir) {
		for _, policy := range []analyze.Policy{analyze.PolicyStability, analyze.PolicyIsolation} {
			t.Run(row.Path+"/"+string(policy), func(t *testing.T) {
				t.Parallel()
				// the repository's whole folder: includes and extends reach across it
				parts := strings.SplitN(row.Path, "/", 3)
				c := fixCase{cfg: analyze.Config{Policy: policy}, keep: keep}
				c.dir = testutil.CopyTree(t, filepath.Join(dir, parts[0], parts[1]))
				// a checkout: its reads are confined to the repository
				if err := os.Mkdir(filepath.Join(c.dir, ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
				c.path = filepath.Join(c.dir, parts[2])
				if row.Kind == "compose" {
					c.ref = ref
				}
				total.Add(int64(checkFixes(t, c)))
			})
		}
	}
}

// readTree reads every file under dir, by relative name.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTree is the unified diff of two readings of a folder, file by file.
func diffTree(before, after map[string][]byte) string {
	var names []string
	for n := range before {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(fix.UnifiedDiff("a/"+n, "b/"+n, before[n], after[n]))
	}
	return b.String()
}

// composeConfig is docker compose config --format json of the project at path (a folder,
// or a file) run from dir, nil when docker compose refuses it.
func composeConfig(t *testing.T, ref, dir, path string) map[string]any {
	t.Helper()
	args := []string{"--profile", "*", "config", "--format", "json"}
	if path != dir {
		args = append([]string{"-f", path}, args...)
	}
	cmd := exec.Command(ref, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("docker compose config: %v", err)
	}
	return m
}

func lookupJSON(m any, path []string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func deleteJSON(m any, path []string) {
	parent, ok := lookupJSON(m, path[:len(path)-1]).(map[string]any)
	if ok {
		delete(parent, path[len(path)-1])
	}
}
