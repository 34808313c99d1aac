package fix

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnifiedDiff applies each diff with the real patch and compares the result, and holds
// the number of changed lines to GNU diff's, which is minimal on inputs this small.
func TestUnifiedDiff(t *testing.T) {
	for _, tool := range []string{"patch", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	lines := func(n int, prefix string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%s%d\n", prefix, i)
		}
		return b.String()
	}
	base := lines(30, "line ")
	rng := rand.New(rand.NewPCG(1, 2))
	shuffled := func() string {
		ls := strings.SplitAfter(base, "\n")
		var out []string
		for _, l := range ls {
			switch rng.IntN(6) {
			case 0: // dropped
			case 1:
				out = append(out, "new "+l, l)
			default:
				out = append(out, l)
			}
		}
		return strings.Join(out, "")
	}
	cases := []struct{ name, a, b string }{
		{"insert at the start", base, "first\n" + base},
		{"delete at the end", base, strings.TrimSuffix(base, "line 30\n")},
		{"new last line without newline", base, base + "tail"},
		{"last line loses its newline", base, strings.TrimSuffix(base, "\n")},
		{"last line gains its newline", strings.TrimSuffix(base, "\n"), base},
		{"from empty", "", "a\nb\n"},
		{"to empty", "a\nb\n", ""},
		{"two hunks", base, strings.Replace(strings.Replace(base, "line 3\n", "three\n", 1), "line 25\n", "", 1)},
		{"six lines apart: one hunk", base, strings.Replace(strings.Replace(base, "line 10\n", "ten\n", 1), "line 17\n", "seventeen\n", 1)},
		{"seven lines apart: two hunks", base, strings.Replace(strings.Replace(base, "line 10\n", "ten\n", 1), "line 18\n", "eighteen\n", 1)},
		{"shuffled 1", base, shuffled()},
		{"shuffled 2", shuffled(), shuffled()},
		{"repeated lines", "a\nb\na\nb\na\n", "b\na\nb\nb\na\nc\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := UnifiedDiff("a/f", "b/f", []byte(c.a), []byte(c.b))
			if c.a == c.b {
				if d != "" {
					t.Fatalf("diff of equal files: %q", d)
				}
				return
			}
			dir := t.TempDir()
			f := filepath.Join(dir, "f")
			if err := os.WriteFile(f, []byte(c.a), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("patch", "-p1", "--quiet", "--force")
			cmd.Dir, cmd.Stdin = dir, strings.NewReader(d)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("patch: %v\n%s\n%s", err, out, d)
			}
			got, _ := os.ReadFile(f)
			if string(got) != c.b {
				t.Fatalf("patched file is %q, want %q\n%s", got, c.b, d)
			}

			g := filepath.Join(dir, "g")
			os.WriteFile(f, []byte(c.a), 0o644)
			os.WriteFile(g, []byte(c.b), 0o644)
			gnu, _ := exec.Command("diff", "-u", f, g).Output()
			if want, have := changed(string(gnu)), changed(d); want != have {
				t.Errorf("%d changed lines, GNU diff has %d\n%s\n%s", have, want, d, gnu)
			}
		})
	}
}

// changed counts the removed and added lines of a unified diff.
func changed(d string) int {
	n := 0
	for _, l := range strings.Split(d, "\n") {
		if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			n++
		}
	}
	return n
}

// TestUnifiedDiffLarge bounds the search: a file rewritten whole still gives a diff that
// patch applies.
func TestUnifiedDiffLarge(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d := UnifiedDiff("a/f", "b/f", []byte(a.String()), []byte(b.String()))
	if changed(d) != 6000 {
		t.Fatalf("%d changed lines, want 6000", changed(d))
	}
}
