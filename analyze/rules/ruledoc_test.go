package rules_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/rules from the rule registry")

// TestRuleDocs keeps docs/rules/<ID>.md equal to the registry's own documentation, the text
// `shmdoctor explain` prints and SARIF help URIs point to: a stale page fails, and
// `go test ./analyze -run TestRuleDocs -update-docs` (make docs) rewrites them.
func TestRuleDocs(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "rules")
	if *updateDocs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for i := range rules.All {
		r := &rules.All[i]
		name := r.ID + ".md"
		want[name] = true
		path := filepath.Join(dir, name)
		if *updateDocs {
			if err := os.WriteFile(path, []byte(r.Markdown()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (make docs writes it)", r.ID, err)
			continue
		}
		if string(got) != r.Markdown() {
			t.Errorf("%s is stale: make docs rewrites it from the registry", path)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range pages {
		if !want[filepath.Base(p)] {
			t.Errorf("%s documents no rule of the registry", p)
		}
	}
}

// TestRuleDocsKeepTitles: a rule's page states its title as written. Titles start with
// compose keys (shm_size, ipc: none, tmpfs) that are lowercase in every compose file:
// "Shm_size is ignored" names a key that does not exist.
func TestRuleDocsKeepTitles(t *testing.T) {
	for _, r := range rules.All {
		if !strings.Contains(r.Markdown(), "\n\n"+r.Title+". Default severity") {
			t.Errorf("%s: the page does not state the title %q as written", r.ID, r.Title)
		}
	}
}
