package analyze

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Environment values never reach a report: CI runs the doctor on pull requests from
// strangers, and `shm_size: ${SOME_TOKEN}` would otherwise print the token in an error
// ("parsing "ghp_…": invalid syntax"). Every message of a project's errors and notes goes
// through redact, which writes each value as the variable it came from, ${NAME}.

// minRedacted is the shortest value redacted wherever it appears; a shorter one ("1",
// "host") is redacted only in an error about a value written with its variable, where it
// cannot be mistaken for a word of the message.
const minRedacted = 6

// quoted finds the quoted strings of a message: decoders quote the value they refuse, at
// times only a part of it (go-units quotes "ghp1SECRE" of "ghp1SECRET").
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// redact rewrites every error and note of the project so that no value of a variable the
// files use is printed. An error located at a value written with variables names them; an
// unlocated error that names one is located where the variable is used.
func (p *Project) redact() {
	if p.env == nil {
		return
	}
	set := p.env.setValues()
	if len(set) == 0 {
		return
	}
	for _, e := range p.Errors {
		at := p.setAt(e.Pos)
		e.Msg = redactMsg(e.Msg, set, at)
		if len(at) > 0 && !mentionsAny(e.Msg, at) {
			e.Msg += fmt.Sprintf(" (the value is written with %s; its value is not shown)", vars(at))
		}
		if e.Line == 0 && p.Index != nil {
			for _, s := range set {
				if strings.Contains(e.Msg, "${"+s.name+"}") {
					if pos, key, ok := p.varUse(s.name); ok {
						e.Pos, e.Msg = pos, key+": "+e.Msg
						break
					}
				}
			}
		}
	}
	for i, n := range p.Notes {
		p.Notes[i] = redactMsg(n, set, nil)
	}
	for _, plan := range append(slices.Clone(p.Plans), p.all...) {
		plan.secrets = set
	}
}

// Shown returns s, a text of the plan's (its ipc, a mount's source), as a report may print
// it: the value of a variable the project's files use is written as ${NAME}. Rules read
// the values themselves.
func (p *ShmPlan) Shown(s string) string { return redactMsg(s, p.secrets, nil) }

// shown redacts a finding's texts before it is reported.
func (f *Finding) shown(plan *ShmPlan) {
	f.Message, f.Remediation = plan.Shown(f.Message), plan.Shown(f.Remediation)
}

// setVar is a set variable and its value.
type setVar struct{ name, value string }

// setValues lists the set variables the project's files used, longest value first so that a
// value holding another is redacted whole.
func (e *envTracker) setValues() []setVar {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []setVar
	for n, v := range e.set {
		out = append(out, setVar{n, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].value) != len(out[j].value) {
			return len(out[i].value) > len(out[j].value)
		}
		return out[i].name < out[j].name
	})
	return out
}

// redactMsg writes each value of set in msg as ${NAME}: a quoted string that holds a part of
// a value of at least 3 characters, then the value wherever it appears. Values shorter than
// minRedacted are only redacted when their variable is in only, the variables of the value the
// message is about.
func redactMsg(msg string, set []setVar, only []string) string {
	for _, s := range set {
		short := len(s.value) < minRedacted
		if short && !slices.Contains(only, s.name) {
			continue
		}
		ref := "${" + s.name + "}"
		msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
			u, err := strconv.Unquote(q)
			if err != nil {
				u = q[1 : len(q)-1]
			}
			if u != "" && (len(u) >= 3 || short) && (strings.Contains(s.value, u) || strings.Contains(u, s.value)) {
				return ref
			}
			return q
		})
		if short {
			msg = replaceWord(msg, s.value, ref)
		} else {
			msg = strings.ReplaceAll(msg, s.value, ref)
		}
	}
	return msg
}

// replaceWord replaces old in s where it is not part of a longer word.
func replaceWord(s, old, repl string) string {
	word := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			break
		}
		end := i + len(old)
		if (i > 0 && word(s[i-1])) || (end < len(s) && word(s[end])) {
			b.WriteString(s[:end])
		} else {
			b.WriteString(s[:i] + repl)
		}
		s = s[end:]
	}
	return b.String() + s
}

// setAt lists the set variables the value at pos (a key or a list item) is written with.
func (p *Project) setAt(pos Pos) []string {
	var out []string
	if p.Index == nil {
		return nil
	}
	if n := p.Index.nodeAt(pos); n != nil {
		p.env.mu.Lock()
		scalars(n, "", func(_ string, v *yaml.Node) { out = append(out, p.env.setIn[v.Value]...) })
		p.env.mu.Unlock()
	}
	return uniq(out)
}

// varUse finds the first value written with the variable name in the project's files: where
// it is and the path of its key (services.web.ports).
func (p *Project) varUse(name string) (Pos, string, bool) {
	for _, file := range p.Index.read {
		for _, d := range p.Index.docs[file] {
			var pos Pos
			var key string
			paths(d, nil, func(path []string, v *yaml.Node) {
				if pos.File == "" && hasVar(v.Value) && strings.Contains(v.Value, name) && slices.Contains(p.env.setInLocked(v.Value), name) {
					pos, key = p.Index.pos(file, v), strings.Join(slices.DeleteFunc(slices.Clone(path), func(k string) bool { return k == "[]" }), ".")
				}
			})
			if pos.File != "" {
				return pos, key, true
			}
		}
	}
	return Pos{}, "", false
}

func (e *envTracker) setInLocked(tmpl string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.setIn[tmpl]
}

func mentionsAny(msg string, names []string) bool {
	for _, n := range names {
		if strings.Contains(msg, n) {
			return true
		}
	}
	return false
}

func vars(names []string) string {
	refs := make([]string, len(names))
	for i, n := range names {
		refs[i] = "${" + n + "}"
	}
	return strings.Join(refs, ", ")
}
