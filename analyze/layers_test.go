package analyze_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// layers is what each package of analyze may import of the others and of YAML, lowest
// first: no package imports one above it. The model knows no YAML and reads no file; the
// rules see the files only through Pass.
var layers = []struct {
	dir     string
	imports []string // analyze packages, relative to analyze ("." is analyze itself)
	yaml    bool
}{
	{dir: "."},
	{dir: "rules", imports: []string{"."}},
	{dir: "source", imports: []string{"."}, yaml: true},
	{dir: "fix", imports: []string{".", "source"}, yaml: true},
	{dir: "suppress", imports: []string{".", "rules", "source"}, yaml: true},
	{dir: "kube", imports: []string{".", "fix", "source", "suppress"}, yaml: true},
	{dir: "compose", imports: []string{".", "fix", "kube", "source", "suppress"}, yaml: true},
}

// TestLayers reads the imports of every package of analyze and fails on one that reaches a
// package it may not: an upward arrow, or YAML where the layer table keeps it out.
func TestLayers(t *testing.T) {
	const module = "github.com/shmdoctor/shmdoctor/analyze"
	seen := map[string]bool{}
	for _, l := range layers {
		seen[l.dir] = true
		imports := testutil.ImportsOf(t, l.dir)
		if len(imports) == 0 {
			t.Errorf("%s: no imports read: the table names a folder that holds no package", l.dir)
		}
		for _, imp := range imports {
			switch {
			case imp == "go.yaml.in/yaml/v3" && !l.yaml:
				t.Errorf("analyze/%s imports YAML: it must reach the files through the layer below", l.dir)
			case imp == module || strings.HasPrefix(imp, module+"/"):
				rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				if rel == "" {
					rel = "."
				}
				if !slices.Contains(l.imports, rel) {
					t.Errorf("analyze/%s imports %s, which its layer may not: allowed %v", l.dir, imp, l.imports)
				}
			case strings.HasPrefix(imp, "github.com/shmdoctor/shmdoctor/"):
				t.Errorf("analyze/%s imports %s: analyze is below every other package of the module", l.dir, imp)
			}
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" && !seen[e.Name()] {
			t.Errorf("analyze/%s is not in the layer table", e.Name())
		}
	}
}
