package analyze

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// minRedacted is the shortest value redacted wherever it appears; a shorter one ("1",
// "host") is redacted only in an error about a value written with its variable, where it
// cannot be mistaken for a word of the message.
const minRedacted = 6

// quoted finds the quoted strings of a message: decoders quote the value they refuse, at
// times only a part of it (go-units quotes "ghp1SECRE" of "ghp1SECRET").
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// Shown returns s, a text of the plan's (its ipc, a mount's source), as a report may print
// it: the value of a variable the project's files use is written as ${NAME}. Rules read
// the values themselves.
func (p *ShmPlan) Shown(s string) string { return p.Secrets.Shown(s) }

// shown redacts a finding's texts before it is reported.
func (f *Finding) shown(plan *ShmPlan) {
	f.Message, f.Remediation = plan.Shown(f.Message), plan.Shown(f.Remediation)
}

// SetVar is a set variable and its value.
type SetVar struct{ Name, Value string }

// sortVars orders vars longest value first, then by name.
func sortVars(vars []SetVar) {
	slices.SortFunc(vars, func(a, b SetVar) int {
		if len(a.Value) != len(b.Value) {
			return len(b.Value) - len(a.Value)
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// RedactMsg writes each value of set in msg as ${NAME}: a quoted string that holds a part of
// a value of at least 3 characters, then the value wherever it appears. Values shorter than
// minRedacted are only redacted when their variable is in only, the variables of the value the
// message is about.
func RedactMsg(msg string, set []SetVar, only []string) string {
	for _, s := range set {
		short := len(s.Value) < minRedacted
		if short && !slices.Contains(only, s.Name) {
			continue
		}
		ref := "${" + s.Name + "}"
		msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
			u, err := strconv.Unquote(q)
			if err != nil {
				u = q[1 : len(q)-1]
			}
			if u != "" && (len(u) >= 3 || short) && (strings.Contains(s.Value, u) || strings.Contains(u, s.Value)) {
				return ref
			}
			return q
		})
		if short {
			msg = replaceWord(msg, s.Value, ref)
		} else {
			msg = strings.ReplaceAll(msg, s.Value, ref)
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

func MentionsAny(msg string, names []string) bool {
	for _, n := range names {
		if strings.Contains(msg, n) {
			return true
		}
	}
	return false
}

func Vars(names []string) string {
	refs := make([]string, len(names))
	for i, n := range names {
		refs[i] = "${" + n + "}"
	}
	return strings.Join(refs, ", ")
}
