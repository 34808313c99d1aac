package analyze_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/largegen"
)

// BenchmarkDemo times what one run of the doctor does to the bundled demo stack, less
// process start-up and rendering: load, resolve and every rule.
func BenchmarkDemo(b *testing.B) {
	dir := filepath.Join("..", "testdata", "demo")
	if _, err := os.Stat(filepath.Join(dir, "compose.yaml")); err != nil {
		b.Skipf("no demo stack: %v", err)
	}
	benchProject(b, dir)
}

// BenchmarkServices times the same work on generated stacks of growing size; ns/service
// stays flat when the doctor grows linearly with the number of services.
func BenchmarkServices(b *testing.B) {
	for _, n := range []int{50, 100, 250, 500} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			genStack(b, n, dir)
			benchProject(b, dir)
		})
	}
}

func benchProject(b *testing.B, dir string) {
	ctx := context.Background()
	opts := compose.Options{Paths: []string{dir}}
	services := 0
	for _, p := range compose.Load(ctx, opts) {
		if len(p.Errors) > 0 {
			b.Fatalf("loading %s: %v", dir, p.Errors[0])
		}
		services += len(p.Plans)
	}
	if services == 0 {
		b.Fatalf("loading %s: no services", dir)
	}
	b.ReportAllocs()
	findings := 0
	for b.Loop() {
		findings = 0
		for _, p := range compose.Load(ctx, opts) {
			findings += len(rules.Check(p, analyze.Config{}))
		}
	}
	if findings == 0 {
		b.Fatalf("%s: no findings, the stack no longer exercises the rules", dir)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*services), "ns/service")
}

// genStack writes a stack of n services with scripts/genstack, the generator that
// scripts/bench.sh times docker compose against, so both measure the same files.
func genStack(b *testing.B, n int, dir string) {
	b.Helper()
	cmd := exec.Command("go", "run", "./scripts/genstack", "-n", fmt.Sprint(n), "-o", dir)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("generating a %d-service stack: %v\n%s", n, err, out)
	}
}

// BenchmarkLoadLarge times load, resolve and every rule on single compose files of 1, 2, 4
// and 8 MiB, of each shape internal/largegen writes; ns/byte stays flat when the doctor is
// linear in its input. A file the doctor refuses (a mapping too large for docker compose's
// decoder to load in reasonable time) is timed to its refusal and reported as refused=1.
func BenchmarkLoadLarge(b *testing.B) {
	for _, kind := range largegen.Kinds {
		for _, mib := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/%dMiB", kind, mib), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "compose.yaml")
				if _, err := largegen.WriteFile(path, kind, mib<<20); err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				opts := compose.Options{Paths: []string{path}}
				b.ReportAllocs()
				b.SetBytes(int64(mib << 20))
				refused := 0
				for b.Loop() {
					refused = 0
					for _, p := range compose.Load(ctx, opts) {
						if len(p.Errors) > 0 {
							if !strings.Contains(p.Errors[0].Msg, "refusing the file") {
								b.Fatalf("loading %s: %v", path, p.Errors[0])
							}
							refused = 1
							continue
						}
						rules.Check(p, analyze.Config{})
					}
				}
				b.ReportMetric(float64(refused), "refused")
			})
		}
	}
}
