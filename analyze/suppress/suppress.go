package suppress

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"go.yaml.in/yaml/v3"
)

// ruleIDShape is what a rule ID looks like; a known shape with an unknown number is a typo
// to report, not the start of the reason.
var ruleIDShape = regexp.MustCompile(`^(?i)shm\d{3}$`)

// nextComment is a " # " that starts another comment after a reason ("#12" does not).
var nextComment = regexp.MustCompile(`\s#(\s|$)`)

// ParseIgnore splits "SHM020,SHM012 reason" (commas or blanks between IDs; a rule's name,
// ipc-host, in place of its ID) into rule IDs
// and the reason, which ends where another " # " comment starts. At least one ID is
// required: a bare ignore would silence rules no one named, including those added later.
func ParseIgnore(s string) (ids []string, reason string, err error) {
	rest := strings.TrimLeft(s, ", \t")
	for rest != "" {
		tok := rest
		if i := strings.IndexAny(rest, ", \t"); i >= 0 {
			tok = rest[:i]
		}
		var id string
		switch r := rules.ByName(tok); {
		case r != nil:
			id = r.ID // a rule's name reads better in a review than its number
		case ruleIDShape.MatchString(tok):
			id = strings.ToUpper(tok)
			if rules.ByID(id) == nil {
				return nil, "", fmt.Errorf("%s is not a rule ID (see shmdoctor rules)", tok)
			}
		}
		if id == "" {
			break
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		rest = strings.TrimLeft(rest[len(tok):], ", \t")
	}
	if len(ids) == 0 {
		if tok, _, _ := strings.Cut(strings.TrimSpace(rest), " "); tok != "" {
			return nil, "", fmt.Errorf("%s is not a rule ID (see shmdoctor rules)", tok)
		}
		return nil, "", fmt.Errorf("name the rules to ignore, such as SHM020")
	}
	if m := nextComment.FindStringIndex(rest); m != nil {
		rest = rest[:m[0]]
	}
	return ids, strings.TrimSpace(rest), nil
}

// Directive is a # shmdoctor-ignore comment of a source file.
type Directive struct {
	Line, Col int // the comment's
	Target    int // the line it applies to: its own, or the next one for a comment line; PastEnd when the file ends first
	IDs       []string
	Reason    string
	Err       error
}

// Problem is the located error of a malformed directive in file (as displayed), nil when
// the directive is well formed: a typo in a suppression would otherwise silence nothing,
// or the wrong rule.
func (d Directive) Problem(file string) *analyze.LoadError {
	if d.Err == nil {
		return nil
	}
	return &analyze.LoadError{Pos: analyze.Pos{File: file, Line: d.Line, Column: d.Col}, Msg: fmt.Sprintf("%s: %v", analyze.IgnoreDirective, d.Err)}
}

// Suppressor is the suppression a well-formed directive in file (as displayed) writes, covering
// the findings on its target line; the loader scopes it to whole services where the line
// holds a service's key.
func (d Directive) Suppressor(file string) *analyze.Suppressor {
	return &analyze.Suppressor{
		Suppression: analyze.Suppression{Kind: analyze.SuppressComment, Reason: d.Reason, Pos: analyze.Pos{File: file, Line: d.Line, Column: d.Col}},
		Rules:       d.IDs, OnFile: file, OnLine: d.Target, Analysed: true,
	}
}

var directiveRe = regexp.MustCompile(`^#\s*` + analyze.IgnoreDirective + `(?:\s+(.*))?$`)

// ScanDirectives finds the # shmdoctor-ignore comments of a file. Lines are scanned for
// the position; only text that the YAML parser also saw as a comment counts, so a "#"
// inside a quoted string or a block scalar is not a directive.
func ScanDirectives(content []byte, docs []*yaml.Node) []Directive {
	if !strings.Contains(string(content), analyze.IgnoreDirective) {
		return nil
	}
	comments := map[string]bool{}
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 10000 {
			return
		}
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, l := range strings.Split(c, "\n") {
				if l = strings.TrimSpace(l); strings.Contains(l, analyze.IgnoreDirective) {
					comments[l] = true
				}
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	for _, d := range docs {
		walk(d, 0)
	}
	lines := strings.Split(string(content), "\n")
	last := len(lines) // the file's last line; a final newline starts no line
	if last > 0 && lines[last-1] == "" {
		last--
	}
	var out []Directive
	for i, l := range lines {
		col := commentStart(l)
		if col < 0 {
			continue
		}
		text := strings.TrimSpace(l[col:])
		m := directiveRe.FindStringSubmatch(text)
		if m == nil || !comments[text] {
			continue
		}
		d := Directive{Line: i + 1, Col: col + 1, Target: i + 1}
		if strings.TrimSpace(l[:col]) == "" {
			// A comment line applies to the next line that is not a comment: several
			// directives may stack above one key.
			d.Target = i + 2
			for j := i + 1; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "#"); j++ {
				d.Target = j + 2
			}
			if d.Target > last {
				d.Target = analyze.PastEnd
			}
		}
		d.IDs, d.Reason, d.Err = ParseIgnore(m[1])
		out = append(out, d)
	}
	return out
}

// commentStart is the byte offset of a line's first "#" that can start a YAML comment (at
// the start or after a blank), -1 when none.
func commentStart(l string) int {
	for i := 0; i < len(l); i++ {
		if l[i] == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t') {
			return i
		}
	}
	return -1
}
