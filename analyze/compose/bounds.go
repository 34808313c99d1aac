package compose

import (
	"fmt"
	"sync/atomic"
)

// Interpolation is where a few bytes of hostile input become gigabytes or minutes: a .env of
// 40 lines each doubling the one before grows past 1 GiB, ${A:-${A:-…}} nested thousands
// deep takes seconds per thousand, and ${A:-x} written ten thousand times takes compose-go's
// template package 24 s, its pattern scanning to the end of the text once per reference with
// a default. The doctor reads a template once, before any of it is expanded, and refuses one
// that would go past these bounds, at the line that holds it and saying why. Real stacks stay
// far below them: a few references, two levels deep, a value of a few kilobytes.
const (
	// maxExpanded is the most a value may expand to.
	maxExpanded = 1 << 20
	// maxNesting is how deep ${ may be written inside ${.
	maxNesting = 16
	// maxTemplateWork bounds what compose-go's template package scans for a template: for
	// each reference with a default, an error message or an alternative (${A:-x}, ${A:?x},
	// ${A:+x}), the text from it to the end. At the bound a template takes some 40 ms.
	maxTemplateWork = 1 << 21
	// maxTotalWork and maxTotalExpanded bound the same over all the values of a project or
	// of an env file: each value within its bounds, ten thousand of them would not be.
	maxTotalWork     = 1 << 24
	maxTotalExpanded = 64 << 20
)

// expansionBudget is what a project's (or an env file's) values may cost to expand, in all.
type expansionBudget struct{ work, bytes atomic.Int64 }

// reset starts a load afresh: compose-go may load a project more than once.
func (b *expansionBudget) reset() {
	b.work.Store(0)
	b.bytes.Store(0)
}

// charge takes a value's work and the bytes its variables bring from the budget.
func (b *expansionBudget) charge(work, bytes int64) error {
	if b.work.Add(work) > maxTotalWork {
		return fmt.Errorf("the values take too long to expand in all (references with a default or a message over long text): refusing an expansion bomb")
	}
	if b.bytes.Add(bytes) > maxTotalExpanded {
		return fmt.Errorf("the values would expand to more than %d MiB in all: refusing an expansion bomb", maxTotalExpanded>>20)
	}
	return nil
}

// templateCost reads a template once: how deep its ${ are nested, the work compose-go's
// template package does for it (see maxTemplateWork), and the names it refers to, once per
// reference, defaults included.
func templateCost(s string) (depth int, work int64, refs []string) {
	open := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '}':
			if open > 0 {
				open--
			}
			continue
		case '$':
		default:
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch c := s[i+1]; {
		case c == '$':
			i++ // $$ is a $
		case c == '{':
			open++
			depth = max(depth, open)
			end := nameEnd(s, i+2)
			refs = append(refs, s[i+2:end])
			if end < len(s) && (s[end] == ':' || s[end] == '-' || s[end] == '+' || s[end] == '?') {
				work += int64(len(s) - i)
			}
			i++
		case isNameStart(c):
			end := nameEnd(s, i+1)
			refs = append(refs, s[i+1:end])
			i = end - 1
		}
	}
	return depth, work, refs
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func nameEnd(s string, i int) int {
	for i < len(s) && (isNameStart(s[i]) || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return i
}

// templateBound checks a template against the bounds before it is expanded. size is the
// most a variable may hold (its length when set, what the env file gives it, 0 when unset);
// the bound of the expansion is the text plus, for each reference, its variable's size,
// defaults counted in full whichever branch is taken. It returns that bound.
func templateBound(s string, size func(name string) int64, budget *expansionBudget) (int64, error) {
	depth, work, refs := templateCost(s)
	if depth > maxNesting {
		return 0, fmt.Errorf("variables are nested %d deep, more than %d: refusing an expansion bomb", depth, maxNesting)
	}
	if work > maxTemplateWork {
		return 0, fmt.Errorf("%d references with a default or a message over %d bytes take too long to expand: refusing an expansion bomb", countModified(s), len(s))
	}
	bound := int64(len(s))
	for _, name := range refs {
		if bound += size(name); bound > maxExpanded {
			return bound, fmt.Errorf("the value would expand to more than %d MiB: refusing an expansion bomb", maxExpanded>>20)
		}
	}
	return bound, budget.charge(work, bound-int64(len(s)))
}

// countModified counts the references with a default, a message or an alternative, for the
// message: the work itself says little to a reader.
func countModified(s string) int {
	n := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && s[i+1] == '$' {
			i++
			continue
		}
		if s[i] == '$' && s[i+1] == '{' {
			if end := nameEnd(s, i+2); end < len(s) && (s[end] == ':' || s[end] == '-' || s[end] == '+' || s[end] == '?') {
				n++
			}
		}
	}
	return n
}
