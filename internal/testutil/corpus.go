package testutil

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
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

// CorpusRow is one line of the corpus INDEX.tsv: the facts a reader sees in the file.
type CorpusRow struct {
	Path, Kind, ShmSize, Ipc, Mount, Gpu, MemLimit string
}

// CorpusRows reads the corpus INDEX.tsv.
func CorpusRows(t *testing.T, dir string) []CorpusRow { return CorpusIndex(t, dir, "INDEX.tsv") }

// CorpusIndex reads one index of the corpus: INDEX.tsv, or INDEX-new.tsv, which lists the
// files added since and is gone once its rows are moved into INDEX.tsv (no rows then).
func CorpusIndex(t *testing.T, dir, index string) []CorpusRow {
	f, err := os.Open(filepath.Join(dir, index))
	if errors.Is(err, fs.ErrNotExist) && index != "INDEX.tsv" {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []CorpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 10 || c[0] == "local_path" {
			continue
		}
		rows = append(rows, CorpusRow{Path: c[0], Kind: c[4], ShmSize: c[5], Ipc: c[6], Mount: c[7], Gpu: c[8], MemLimit: c[9]})
	}
	return rows
}

// facts splits "16gb@nim-llm; 2gb@audio" into service -> value.
func Facts(col string) map[string]string {
	out := map[string]string{}
	if col == "-" || col == "" {
		return out
	}
	for _, f := range strings.Split(col, "; ") {
		v, svc, ok := strings.Cut(f, "@")
		if ok {
			out[svc] = v
		}
	}
	return out
}

func HasFinding(fs []analyze.Finding, rule, service string) bool {
	for _, f := range fs {
		if f.Rule == rule && f.Service == service {
			return true
		}
	}
	return false
}

func AnyPlan(p *analyze.Project, fn func(*analyze.ShmPlan) bool) bool {
	for _, s := range p.Plans {
		if fn(s) {
			return true
		}
	}
	return false
}
