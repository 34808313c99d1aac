package compose

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// corpusRepo is the repository folder of a corpus file: the corpus keeps each repository's
// files under compose/owner__name without its .git, and a checkout's root is its repository.
func corpusRepo(dir, path string) string {
	parts := strings.SplitN(path, "/", 3)
	return filepath.Join(dir, parts[0], parts[1])
}

// TestCorpus loads every compose file of the corpus alone, as a CI job would check it
// without its secrets, and requires each to be analysed without a load error and to agree
// with the facts the index records: shm_size, ipc, /dev/shm mounts, GPUs, memory limits.
func TestCorpus(t *testing.T) {
	dir := testutil.Corpus(t)
	n := 0
	for _, row := range testutil.CorpusRows(t, dir) {
		if row.Kind != "compose" {
			continue
		}
		n++
		t.Run(row.Path, func(t *testing.T) {
			projects := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, row.Path)}, AllowOutside: []string{corpusRepo(dir, row.Path)}})
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
			findings := rules.Check(p, analyze.Config{})
			for svc, v := range testutil.Facts(row.ShmSize) {
				plan := p.Plan(svc)
				if plan == nil {
					t.Errorf("service %s not analysed", svc)
					continue
				}
				if strings.HasPrefix(v, "${") {
					_, v, _ = strings.Cut(strings.TrimSuffix(v, "}"), ":-")
				}
				want, err := analyze.ParseSize(v)
				if err != nil {
					t.Fatal(err)
				}
				if plan.Configured == nil || *plan.Configured != want {
					t.Errorf("%s: shm_size %v, index says %s", svc, plan.Configured, v)
				}
				if plan.IPC == "host" && !testutil.HasFinding(findings, "SHM001", svc) {
					t.Errorf("%s: shm_size under ipc host without SHM001", svc)
				}
			}
			for svc, v := range testutil.Facts(row.Ipc) {
				if plan := p.Plan(svc); plan == nil || plan.IPC != v {
					t.Errorf("%s: ipc is not %s", svc, v)
				}
			}
			if row.Mount != "-" && !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.Mount != nil && string(s.Mount.Type) == row.Mount }) {
				t.Errorf("no %s mount at /dev/shm found", row.Mount)
			}
			if row.Gpu == "yes" && !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.GPU }) {
				t.Error("no GPU service found")
			}
			for svc, v := range testutil.Facts(row.MemLimit) {
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
					want, _ := analyze.ParseSize(size)
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
