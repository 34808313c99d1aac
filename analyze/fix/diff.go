package fix

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around each change, as diff -u prints.
const diffContext = 3

// UnifiedDiff renders the change from a to b as a unified diff with three lines of context,
// under the names from and to. It is empty when a and b are equal. A last line without a
// line ending is marked as diff marks it, so that patch and git apply restore it exactly.
func UnifiedDiff(from, to string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// a hunk: from diffContext lines before this change to diffContext lines after the
		// last change that is at most 2*diffContext unchanged lines further
		start := max(0, i-diffContext)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
				continue
			}
			if j-end-1 > 2*diffContext {
				break
			}
		}
		end = min(len(ops), end+1+diffContext)
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
		}
		writeHunk(&out, ops[start:end])
		i = end
	}
	return out.String()
}

// op is one line of a diff: ' ' kept, '-' removed, '+' added; ax and by are the line's
// 0-based index in a and in b (the next line's where it is absent).
type op struct {
	kind   byte
	line   string
	ax, by int
}

func writeHunk(out *strings.Builder, ops []op) {
	var na, nb int
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(ops[0].ax, na), hunkRange(ops[0].by, nb))
	for _, o := range ops {
		out.WriteByte(o.kind)
		out.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is "start,count" with GNU diff's conventions: a count of one is left out, and
// an empty range starts at the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits after each line ending, keeping it, so that a missing final one shows.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines is Myers' O(ND) difference algorithm over lines, after the common head and
// tail are set aside: fixes change a few lines of a file.
func diffLines(a, b []string) []op {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var ops []op
	for i := 0; i < head; i++ {
		ops = append(ops, op{' ', a[i], i, i})
	}
	for _, o := range myers(a[head:len(a)-tail], b[head:len(b)-tail]) {
		o.ax, o.by = o.ax+head, o.by+head
		ops = append(ops, o)
	}
	for i := 0; i < tail; i++ {
		ai, bi := len(a)-tail+i, len(b)-tail+i
		ops = append(ops, op{' ', a[ai], ai, bi})
	}
	return ops
}

// maxDiffEdits bounds the edit distance the search follows, and with it the memory of its
// trace; beyond it the differing middle is shown as removed and added whole.
const maxDiffEdits = 1000

func myers(a, b []string) []op {
	n, m := len(a), len(b)
	maxD := min(n+m, maxDiffEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace, d, off)
			}
		}
	}
	var ops []op
	for i, l := range a {
		ops = append(ops, op{'-', l, i, 0})
	}
	for i, l := range b {
		ops = append(ops, op{'+', l, n, i})
	}
	return ops
}

// backtrack walks the saved frontiers back from the end to list the operations in order.
func backtrack(a, b []string, trace [][]int, d, off int) []op {
	var rev []op
	x, y := len(a), len(b)
	for ; d > 0; d-- {
		prev := trace[d]
		k := x - y
		var pk int
		if k == -d || k != d && prev[off+k-1] < prev[off+k+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := prev[off+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, op{' ', a[x], x, y})
		}
		if x == px {
			y--
			rev = append(rev, op{'+', b[y], x, y})
		} else {
			x--
			rev = append(rev, op{'-', a[x], x, y})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{' ', a[x], x, y})
	}
	ops := make([]op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}
