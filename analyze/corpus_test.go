package analyze

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// corpusRow is one line of the corpus INDEX.tsv: the facts a reader sees in the file.
type corpusRow struct {
	path, kind, shmSize, ipc, mount, gpu, memLimit string
}

func corpusRows(t *testing.T, dir string) []corpusRow {
	f, err := os.Open(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 10 || c[0] == "local_path" {
			continue
		}
		rows = append(rows, corpusRow{path: c[0], kind: c[4], shmSize: c[5], ipc: c[6], mount: c[7], gpu: c[8], memLimit: c[9]})
	}
	return rows
}

// facts splits "16gb@nim-llm; 2gb@audio" into service -> value.
func facts(col string) map[string]string {
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

// TestCorpus loads every compose file of the corpus alone, as a CI job would check it
// without its secrets, and requires each to be analysed without a load error and to agree
// with the facts the index records: shm_size, ipc, /dev/shm mounts, GPUs, memory limits.
func TestCorpus(t *testing.T) {
	dir := testutil.Corpus(t)
	n := 0
	for _, row := range corpusRows(t, dir) {
		if row.kind != "compose" {
			continue
		}
		n++
		t.Run(row.path, func(t *testing.T) {
			projects := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, row.path)}})
			if len(projects) != 1 {
				t.Fatalf("%d projects", len(projects))
			}
			p := projects[0]
			for _, e := range p.Errors {
				t.Errorf("load error: %v", e)
			}
			if !p.Compose {
				return
			}
			if len(p.Plans) == 0 {
				t.Fatal("no service analysed")
			}
			findings := Check(p, Config{})
			for svc, v := range facts(row.shmSize) {
				plan := p.Plan(svc)
				if plan == nil {
					t.Errorf("service %s not analysed", svc)
					continue
				}
				if strings.HasPrefix(v, "${") {
					_, v, _ = strings.Cut(strings.TrimSuffix(v, "}"), ":-")
				}
				want, err := ParseSize(v)
				if err != nil {
					t.Fatal(err)
				}
				if plan.Configured == nil || *plan.Configured != want {
					t.Errorf("%s: shm_size %v, index says %s", svc, plan.Configured, v)
				}
				if plan.IPC == "host" && !hasFinding(findings, "SHM001", svc) {
					t.Errorf("%s: shm_size under ipc host without SHM001", svc)
				}
			}
			for svc, v := range facts(row.ipc) {
				if plan := p.Plan(svc); plan == nil || plan.IPC != v {
					t.Errorf("%s: ipc is not %s", svc, v)
				}
			}
			if row.mount != "-" && !anyPlan(p, func(s *ShmPlan) bool { return s.Mount != nil && string(s.Mount.Type) == row.mount }) {
				t.Errorf("no %s mount at /dev/shm found", row.mount)
			}
			if row.gpu == "yes" && !anyPlan(p, func(s *ShmPlan) bool { return s.GPU }) {
				t.Error("no GPU service found")
			}
			for svc, v := range facts(row.memLimit) {
				plan := p.Plan(svc)
				_, size, _ := strings.Cut(v, "=")
				switch {
				case plan == nil:
					t.Errorf("service %s not analysed", svc)
				case strings.Contains(size, "${"):
					if plan.MemLimit == nil && plan.DependsOn("mem_limit") == nil {
						t.Errorf("%s: mem_limit %s neither resolved nor marked as depending on a variable", svc, size)
					}
				default:
					want, _ := ParseSize(size)
					if plan.MemLimit == nil || *plan.MemLimit != want {
						t.Errorf("%s: memory limit %v, index says %s", svc, plan.MemLimit, size)
					}
				}
			}
		})
	}
	if n < 50 {
		t.Fatalf("only %d compose files in the corpus index", n)
	}
}

func hasFinding(fs []Finding, rule, service string) bool {
	for _, f := range fs {
		if f.Rule == rule && f.Service == service {
			return true
		}
	}
	return false
}

func anyPlan(p *Project, fn func(*ShmPlan) bool) bool {
	for _, s := range p.Plans {
		if fn(s) {
			return true
		}
	}
	return false
}
