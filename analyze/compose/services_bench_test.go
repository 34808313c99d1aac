package compose

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// BenchmarkPerService times the doctor's own work on generated stacks (scripts/genstack) of
// 100, 1,000 and 5,000 services, compose-go's load left out: finding each service's
// definitions in the files (layers), scoping the suppression comments (directives) and every
// rule (check). The commented stacks have a # shmdoctor-ignore comment above each service.
// ns/service stays flat when that work grows linearly with the number of services.
func BenchmarkPerService(b *testing.B) {
	serviceKey := regexp.MustCompile(`(?m)^  [a-z]+-[0-9]+:$`)
	for _, commented := range []bool{false, true} {
		for _, n := range []int{100, 1000, 5000} {
			name := fmt.Sprintf("n=%d", n)
			if commented {
				name += "/commented"
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				cmd := exec.Command("go", "run", "./scripts/genstack", "-n", fmt.Sprint(n), "-o", dir)
				cmd.Dir = filepath.Join("..", "..")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("generating a %d-service stack: %v\n%s", n, err, out)
				}
				if commented {
					path := filepath.Join(dir, "compose.yaml")
					src, err := os.ReadFile(path)
					if err != nil {
						b.Fatal(err)
					}
					src = serviceKey.ReplaceAll(src, []byte("  # shmdoctor-ignore SHM090 kept for the benchmark\n$0"))
					if err := os.WriteFile(path, src, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				m := Load(context.Background(), Options{Paths: []string{dir}})[0]
				p := m.Doc.(*project)
				if len(p.Errors) > 0 || len(p.Plans) != n {
					b.Fatalf("loading %s: %d services, errors %v", dir, len(p.Plans), p.Errors)
				}
				perService := func(b *testing.B) {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/service")
				}
				b.Run("layers", func(b *testing.B) {
					for b.Loop() {
						p.Index.layerCache = nil
						for _, plan := range p.Plans {
							p.Index.layers(plan.Service)
						}
					}
					perService(b)
				})
				b.Run("directives", func(b *testing.B) {
					sups := p.Suppressors
					for b.Loop() {
						p.Suppressors = nil
						p.resolveDirectives()
					}
					p.Suppressors = sups
					perService(b)
				})
				b.Run("check", func(b *testing.B) {
					for b.Loop() {
						rules.Check(m, analyze.Config{})
					}
					perService(b)
				})
			})
		}
	}
}
