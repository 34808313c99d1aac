package compose

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// Environment values never reach a report: CI runs the doctor on pull requests from
// strangers, and `shm_size: ${SOME_TOKEN}` would otherwise print the token in an error
// ("parsing "ghp_…": invalid syntax"). Every value the project's files used is registered
// with analyze.Interpolated, which every output is scrubbed of where it leaves the process;
// redact does the same to the project's errors and notes before they are laid out, so that
// the report wraps what it prints, and locates an error about such a value where the
// variable is used.

// redact rewrites every error and note of the project so that no value of a variable the
// files use is printed. An error located at a value written with variables names them; an
// unlocated error that names one is located where the variable is used.
func (p *project) redact() {
	if p.env == nil {
		return
	}
	set := p.env.setValues()
	for _, s := range set {
		p.secrets.Interpolated(s.Name, s.Value)
	}
	for _, plan := range append(slices.Clone(p.Plans), p.All...) {
		plan.Secrets = p.secrets
	}
	if len(set) == 0 {
		return
	}
	for _, e := range p.Errors {
		at := p.setAt(e.Pos)
		e.Msg = p.secrets.Shown(e.Msg, at...)
		if len(at) > 0 && !analyze.MentionsAny(e.Msg, at) {
			e.Msg += fmt.Sprintf(" (the value is written with %s; its value is not shown)", analyze.Vars(at))
		}
		if e.Line == 0 && p.Index != nil {
			for _, s := range set {
				if strings.Contains(e.Msg, "${"+s.Name+"}") {
					if pos, key, ok := p.varUse(s.Name); ok {
						e.Pos, e.Msg = pos, key+": "+e.Msg
						break
					}
				}
			}
		}
	}
	for i, n := range p.Notes {
		p.Notes[i] = p.secrets.Shown(n)
	}
}

// setValues lists the set variables the project's files used, longest value first so that a
// value holding another is redacted whole.
func (e *envTracker) setValues() []analyze.SetVar {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []analyze.SetVar
	for n, v := range e.set {
		out = append(out, analyze.SetVar{Name: n, Value: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Value) != len(out[j].Value) {
			return len(out[i].Value) > len(out[j].Value)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// setAt lists the set variables the value at pos (a key or a list item) is written with.
func (p *project) setAt(pos analyze.Pos) []string {
	var out []string
	if p.Index == nil {
		return nil
	}
	if n := p.Index.nodeAt(pos); n != nil {
		p.env.mu.Lock()
		source.Scalars(n, "", func(_ string, v *yaml.Node) { out = append(out, p.env.setIn[v.Value]...) })
		p.env.mu.Unlock()
	}
	return uniq(out)
}

// varUse finds the first value written with the variable name in the project's files: where
// it is and the path of its key (services.web.ports).
func (p *project) varUse(name string) (analyze.Pos, string, bool) {
	for _, file := range p.Index.Read {
		for _, d := range p.Index.Docs[file] {
			var pos analyze.Pos
			var key string
			paths(d, nil, func(path []string, v *yaml.Node) {
				if pos.File == "" && hasVar(v.Value) && strings.Contains(v.Value, name) && slices.Contains(p.env.setInLocked(v.Value), name) {
					pos, key = p.Index.Pos(file, v), strings.Join(slices.DeleteFunc(slices.Clone(path), func(k string) bool { return k == "[]" }), ".")
				}
			})
			if pos.File != "" {
				return pos, key, true
			}
		}
	}
	return analyze.Pos{}, "", false
}

func (e *envTracker) setInLocked(tmpl string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.setIn[tmpl]
}
