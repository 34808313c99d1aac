package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/shmdoctor/shmdoctor/internal/largegen"
)

// TestLargeLinear loads and checks valid compose files of each shape internal/largegen
// writes at two sizes, the second four times the first, and counts work rather than time:
// the mapping keys the doctor's own lookups read, and the allocations of the whole load,
// compose-go's included. Linear work grows about 4x; the test allows 5x. Scanning the
// services mapping once per service, or comparing the keys of a mapping pairwise, grows
// 16x.
func TestLargeLinear(t *testing.T) {
	const small, factor = 32 << 10, 4
	for _, kind := range largegen.Kinds {
		t.Run(kind, func(t *testing.T) {
			var keys, allocs [2]int64
			for i, size := range []int{small, small * factor} {
				keys[i], allocs[i] = loadWork(t, kind, size)
			}
			for _, c := range []struct {
				what string
				n    [2]int64
			}{{"mapping keys read", keys}, {"allocations", allocs}} {
				ratio := float64(c.n[1]) / float64(c.n[0])
				t.Logf("%s: %d -> %d for %dx the input: %.2fx", c.what, c.n[0], c.n[1], factor, ratio)
				if ratio > factor*1.25 {
					t.Errorf("%s grew %.2fx for %dx the input (%d -> %d): not linear", c.what, ratio, factor, c.n[0], c.n[1])
				}
			}
		})
	}
}

// loadWork loads a generated file of size bytes and checks it, and returns the mapping
// keys read and the allocations made.
func loadWork(t *testing.T, kind string, size int) (keys, allocs int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "compose.yaml")
	if _, err := largegen.WriteFile(path, kind, size); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	source.KeysScanned.Store(0)
	ps := Load(context.Background(), Options{Paths: []string{path}})
	for _, p := range ps {
		if len(p.Errors) > 0 {
			t.Fatalf("%s of %d bytes: %v", kind, size, p.Errors[0])
		}
		if len(p.Plans) == 0 {
			t.Fatalf("%s of %d bytes: no services", kind, size)
		}
		rules.Check(p, analyze.Config{})
	}
	keys = source.KeysScanned.Load()
	runtime.ReadMemStats(&after)
	return keys, int64(after.Mallocs - before.Mallocs)
}

// TestLargeRefused gives the loader valid files that docker compose's own loader would take
// quadratic time on: each is refused at once, with an error at the construct that costs,
// rather than loaded for minutes.
func TestLargeRefused(t *testing.T) {
	var mapping strings.Builder
	mapping.WriteString("services:\n  a:\n    image: busybox\n    labels:\n")
	for i := range 12_000 {
		fmt.Fprintf(&mapping, "      k%d: v\n", i)
	}
	var mappings strings.Builder
	mappings.WriteString("services:\n")
	for s := range 60 {
		fmt.Fprintf(&mappings, "  s%d:\n    image: busybox\n    labels:\n", s)
		for i := range 2_000 {
			fmt.Fprintf(&mappings, "      k%d: v\n", i)
		}
	}
	var anchor strings.Builder
	anchor.WriteString("x-base: &base\n  image: busybox\nservices:\n")
	for i := range 4_100 {
		fmt.Fprintf(&anchor, "  s%d: *base\n", i)
	}
	var reset strings.Builder
	reset.WriteString("services:\n")
	for i := range 50 {
		fmt.Fprintf(&reset, "  s%d:\n    image: busybox\n    labels: !reset {}\n", i)
	}
	reset.WriteString("x-data:\n")
	for range 100_000 {
		reset.WriteString("  - 1\n")
	}
	cases := []struct {
		name, content string
		line          int
		msg           string
	}{
		{"one huge mapping", mapping.String(), 5, "12000 keys in one mapping: refusing the file"},
		{"many large mappings", mappings.String(), 5, "mappings whose keys need 119941830 comparisons to load, 2000 keys in the largest: refusing the file"},
		{"one anchor used everywhere", anchor.String(), 1, "anchor &base is used 4100 times: refusing the file"},
		{"many reset tags", reset.String(), 4, "50 !reset or !override tags in a file of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "compose.yaml")
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			ps := Load(context.Background(), Options{Paths: []string{path}})
			if len(ps) != 1 || len(ps[0].Errors) != 1 {
				t.Fatalf("want one project with one error, got %d projects: %+v", len(ps), ps)
			}
			e := ps[0].Errors[0]
			if e.File != path && !strings.HasSuffix(e.File, "compose.yaml") || e.Line != c.line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %s, want line %d and %q", e, c.line, c.msg)
			}
		})
	}
}

// TestManyNodesNoAlias: a valid file of more than a million nodes, and no alias, is no alias
// bomb. The bound on expansion is four times the nodes written, or a million; the doctor's
// index is what refused it, so the index alone is built (compose-go would take a minute).
func TestManyNodesNoAlias(t *testing.T) {
	var b strings.Builder
	b.WriteString("services:\n  a:\n    image: busybox\nx-list: [")
	for range 1_100_000 {
		b.WriteString("1,")
	}
	b.WriteString("1]\n")
	ix := newIndex(t.TempDir(), nil)
	if err := ix.add(filepath.Join(t.TempDir(), "compose.yaml"), []byte(b.String())); err != nil {
		t.Fatalf("a file of 1,100,000 values without aliases: %v", err)
	}
	// Aliases that expand past four times what is written still are a bomb.
	bomb := "x-a: &a [" + strings.Repeat("1,", 999) + "1]\nx-b: [" + strings.Repeat("*a,", 1_199) + "*a]\n"
	err := ix.add(filepath.Join(t.TempDir(), "compose.yaml"), []byte(bomb))
	if err == nil || !strings.Contains(err.Error(), "alias bomb") || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("want an alias bomb at line 2, got %v", err)
	}
}
