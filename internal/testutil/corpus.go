package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Corpus is the corpus of real public compose files and manifests. SHMDOCTOR_CORPUS names
// it (.ci/run sets it, so CI always reads it); without it, ../shared/corpus beside the
// checkout is used when there is one, and the test is skipped when there is none: a clone
// anywhere still passes make test on its own fixtures.
func Corpus(t testing.TB) string {
	t.Helper()
	dir := FindCorpus(t)
	if dir == "" {
		t.Skip("no corpus beside the checkout and SHMDOCTOR_CORPUS is not set")
	}
	return dir
}

// FindCorpus returns the corpus folder, "" when SHMDOCTOR_CORPUS is unset and none sits
// beside the checkout; a SHMDOCTOR_CORPUS without an INDEX.tsv is a mistake, not a reason
// to skip.
func FindCorpus(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SHMDOCTOR_CORPUS")
	if dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return ""
		}
		dir = filepath.Join(root, "..", "shared", "corpus")
		if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
			return ""
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
		t.Fatalf("SHMDOCTOR_CORPUS=%s holds no INDEX.tsv: %v", dir, err)
	}
	return dir
}
