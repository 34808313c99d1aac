package analyze

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SuppressionKind says where a suppression is written.
type SuppressionKind string

// The kinds of suppression. Every kind but SuppressConfig is written in the source it
// silences.
const (
	SuppressComment    SuppressionKind = "comment"    // # shmdoctor-ignore in a compose file or manifest
	SuppressExtension  SuppressionKind = "extension"  // x-shmdoctor.ignore of a compose service
	SuppressAnnotation SuppressionKind = "annotation" // shmdoctor.io/ignore of a Kubernetes object
	SuppressConfig     SuppressionKind = "config"     // ignore or ignore-paths of the config file
	SuppressBaseline   SuppressionKind = "baseline"   // a finding recorded in the --baseline file
)

// IgnoreDirective starts a suppression comment: # shmdoctor-ignore SHM020,SHM012 reason.
const IgnoreDirective = "shmdoctor-ignore"

// Suppression is what silenced a finding: the kind, the reason written with it, and where
// it is written.
type Suppression struct {
	Kind   SuppressionKind `json:"kind"`
	Reason string          `json:"reason,omitempty"`
	Pos
}

// InSource reports whether the suppression is written in the analysed files themselves.
func (s *Suppression) InSource() bool { return s.Kind != SuppressConfig && s.Kind != SuppressBaseline }

// suppressor is one written suppression and the findings it covers: the rules it names,
// in whole services, on one line, or (config entries) everywhere or in matching files.
type suppressor struct {
	Suppression
	rules    []string
	services []string // plan services covered whole
	file     string   // display file and line covered, when services is nil
	line     int
	// owner is the service a covered line belongs to ("" outside services); analysed is
	// false when that service was not analysed (a profile left it out), so the suppressor
	// cannot be judged unused.
	owner    string
	analysed bool
	all      bool   // config ignore: every finding of the rules
	glob     string // config ignore-paths: findings in files matching glob, below dir
	dir      string
}

// covers reports whether the suppressor applies to a finding, its rules aside.
func (s *suppressor) covers(f *Finding) bool {
	switch {
	case s.all:
		return true
	case s.glob != "":
		return pathIgnored(s.glob, s.dir, f.File)
	case s.services != nil:
		return slices.Contains(s.services, f.Service)
	}
	return f.File == s.file && f.Line == s.line
}

func (s *suppressor) matches(f *Finding) bool {
	return (s.glob != "" || slices.Contains(s.rules, f.Rule)) && s.covers(f)
}

// what names the suppressor in a message: the comment, key or annotation written.
func (s *suppressor) what() string {
	switch s.Kind {
	case SuppressExtension:
		return IntentKey + ".ignore"
	case SuppressAnnotation:
		return AnnotationIgnore
	}
	return IgnoreDirective
}

// scope says which findings the suppressor was written for, in a message.
func (s *suppressor) scope() string {
	switch {
	case s.Kind == SuppressAnnotation:
		return "of the containers it annotates"
	case len(s.services) == 1:
		return "of " + s.services[0]
	case s.services != nil:
		return "of " + strings.Join(s.services, ", ")
	}
	if s.line == pastEnd {
		return "below it: the file ends there"
	}
	return fmt.Sprintf("on line %d", s.line)
}

// ruleIDShape is what a rule ID looks like; a known shape with an unknown number is a typo
// to report, not the start of the reason.
var ruleIDShape = regexp.MustCompile(`^(?i)shm\d{3}$`)

// nextComment is a " # " that starts another comment after a reason ("#12" does not).
var nextComment = regexp.MustCompile(`\s#(\s|$)`)

// parseIgnore splits "SHM020,SHM012 reason" (commas or blanks between IDs; a rule's name,
// ipc-host, in place of its ID) into rule IDs
// and the reason, which ends where another " # " comment starts. At least one ID is
// required: a bare ignore would silence rules no one named, including those added later.
func parseIgnore(s string) (ids []string, reason string, err error) {
	rest := strings.TrimLeft(s, ", \t")
	for rest != "" {
		tok := rest
		if i := strings.IndexAny(rest, ", \t"); i >= 0 {
			tok = rest[:i]
		}
		var id string
		switch r := RuleByName(tok); {
		case r != nil:
			id = r.ID // a rule's name reads better in a review than its number
		case ruleIDShape.MatchString(tok):
			id = strings.ToUpper(tok)
			if RuleByID(id) == nil {
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

// directive is a # shmdoctor-ignore comment of a source file.
type directive struct {
	line, col int // the comment's
	target    int // the line it applies to: its own, or the next one for a comment line; pastEnd when the file ends first
	ids       []string
	reason    string
	err       error
}

// pastEnd is the target of a comment line that no line follows: it covers nothing.
const pastEnd = -1

var directiveRe = regexp.MustCompile(`^#\s*` + IgnoreDirective + `(?:\s+(.*))?$`)

// scanDirectives finds the # shmdoctor-ignore comments of a file. Lines are scanned for
// the position; only text that the YAML parser also saw as a comment counts, so a "#"
// inside a quoted string or a block scalar is not a directive.
func scanDirectives(content []byte, docs []*yaml.Node) []directive {
	if !strings.Contains(string(content), IgnoreDirective) {
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
				if l = strings.TrimSpace(l); strings.Contains(l, IgnoreDirective) {
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
	var out []directive
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
		d := directive{line: i + 1, col: col + 1, target: i + 1}
		if strings.TrimSpace(l[:col]) == "" {
			// A comment line applies to the next line that is not a comment: several
			// directives may stack above one key.
			d.target = i + 2
			for j := i + 1; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "#"); j++ {
				d.target = j + 2
			}
			if d.target > last {
				d.target = pastEnd
			}
		}
		d.ids, d.reason, d.err = parseIgnore(m[1])
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

// directiveErrors turns malformed directives into located errors: a typo in a
// suppression would otherwise silence nothing, or the wrong rule.
func (p *Project) directiveErrors() {
	ix := p.Index
	for _, file := range ix.files() {
		for _, d := range ix.directives[file] {
			if d.err != nil {
				p.fail(Pos{File: ix.display(file), Line: d.line, Column: d.col}, "%s: %v", IgnoreDirective, d.err)
			}
		}
	}
}

// resolveDirectives turns the comments of every file into suppressors, once the plans are
// known: a comment on or above a service key (or a Kubernetes container's name) covers the
// whole service, one on or above any other line covers the findings on that line.
func (p *Project) resolveDirectives() {
	ix := p.Index
	for _, file := range ix.files() {
		for _, d := range ix.directives[file] {
			if d.err != nil {
				continue
			}
			s := &suppressor{
				Suppression: Suppression{Kind: SuppressComment, Reason: d.reason, Pos: Pos{File: ix.display(file), Line: d.line, Column: d.col}},
				rules:       d.ids, file: ix.display(file), line: d.target, analysed: true,
			}
			if p.Kubernetes {
				p.k8sScope(s)
			} else {
				p.composeScope(s, file, d.target)
			}
			p.suppressors = append(p.suppressors, s)
		}
	}
}

// composeScope decides what a comment covers in a compose file: the services whose
// definition (in any layer: override, extends, include) has its key on the line, else the
// line, owned by the service whose block holds it.
func (p *Project) composeScope(s *suppressor, file string, line int) {
	key := p.Index.serviceKeyAround(file, line)
	for _, plan := range p.Plans {
		for _, l := range p.Index.layers(plan.Service) {
			if l.file != file || l.key == nil || l.key != key {
				continue
			}
			if key.Line == line {
				s.services = append(s.services, plan.Service)
			} else if s.owner == "" {
				s.owner = plan.Service
			}
		}
	}
	// A line inside a service no plan owns (left out by --profile) cannot be judged.
	s.analysed = key == nil || s.services != nil || s.owner != ""
}

// k8sScope decides what a comment covers in a manifest: the containers whose name is on
// the line, else the line.
func (p *Project) k8sScope(s *suppressor) {
	best := 0
	for _, plan := range p.Plans {
		cp := plan.K8s.ContainerPos
		if cp.File != s.file {
			continue
		}
		if cp.Line == s.line {
			s.services = append(s.services, plan.Service)
		}
		if cp.Line <= s.line && cp.Line > best {
			best, s.owner = cp.Line, plan.Service
		}
	}
}

// serviceKeyAround is the key of the service whose block in file holds line, nil when the
// line is outside every service.
func (ix *Index) serviceKeyAround(file string, line int) *yaml.Node {
	docs := ix.docs[file]
	for d, doc := range docs {
		end := int(^uint(0) >> 1)
		if d+1 < len(docs) {
			end = docs[d+1].Line
		}
		doc = deref(doc)
		if doc == nil || doc.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value != "services" {
				continue
			}
			blockEnd := end
			if i+2 < len(doc.Content) {
				blockEnd = doc.Content[i+2].Line
			}
			svcs := deref(doc.Content[i+1])
			if svcs == nil || svcs.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(svcs.Content); j += 2 {
				next := blockEnd
				if j+2 < len(svcs.Content) {
					next = svcs.Content[j+2].Line
				}
				if k := svcs.Content[j]; k.Line <= line && line < next {
					return k
				}
			}
		}
	}
	return nil
}

// files lists the indexed files in a stable order.
func (ix *Index) files() []string {
	out := make([]string, 0, len(ix.docs))
	for f := range ix.docs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// suppress marks the findings their suppressors cover and reports, as SHM090 findings,
// every rule a suppressor written in the source names that matched nothing. Suppressors
// written closest to the finding win: a line comment over a service comment, over
// x-shmdoctor.ignore or an annotation, over the config file. ms is nil for the static
// rules; in the probe's pass, a suppressor of a probe rule is judged only where the probe
// measured.
func suppress(p *Project, cfg Config, out []Finding, ms map[string]*Measurement) []Finding {
	sups := slices.Clone(p.suppressors)
	slices.SortStableFunc(sups, func(a, b *suppressor) int { return rank(a) - rank(b) })
	sups = append(sups, cfg.suppressors()...)
	used := map[*suppressor]map[string]bool{}
	mark := func(fs []Finding) {
		for i := range fs {
			f := &fs[i]
			for _, s := range sups {
				if !s.matches(f) {
					continue
				}
				if used[s] == nil {
					used[s] = map[string]bool{}
				}
				used[s][f.Rule] = true
				if f.Suppressed == nil {
					sup := s.Suppression
					f.Suppressed = &sup
				}
			}
		}
	}
	mark(out)
	var unused []Finding
	for _, s := range sups {
		for _, id := range s.rules {
			if used[s][id] || id == shm090.ID || RuleByID(id).Probe != (ms != nil) || !judged(s, ms) {
				continue
			}
			what := s.what()
			f := Finding{
				Rule: shm090.ID, Name: shm090.Name, Severity: shm090.Severity,
				Service: firstOr(s.services, s.owner), Pos: s.Pos,
				Message:     fmt.Sprintf("%s %s matches no finding %s", what, id, s.scope()),
				Remediation: fmt.Sprintf("Remove %s from the %s: nothing there triggers it any more.", id, what),
			}
			if slices.Contains(s.rules, shm090.ID) {
				// A suppression that names SHM090 too is kept on purpose.
				sup := s.Suppression
				f.Suppressed = &sup
			}
			unused = append(unused, f)
		}
	}
	// Comments and the config file may silence the unused reports themselves.
	mark(unused)
	out = append(out, unused...)
	for i := range out {
		if sev, ok := cfg.Severity[out[i].Rule]; ok {
			out[i].Severity = sev
		}
	}
	return out
}

// rank orders suppressors by how close to the finding they are written.
func rank(s *suppressor) int {
	switch {
	case s.Kind == SuppressComment && s.services == nil:
		return 0
	case s.Kind == SuppressComment:
		return 1
	case s.Kind == SuppressConfig:
		return 3
	}
	return 2
}

// judged reports whether a suppressor's rules ran over what it covers in this pass, so
// that one matching nothing is stale rather than out of scope.
func judged(s *suppressor, ms map[string]*Measurement) bool {
	if s.Kind == SuppressConfig || !s.analysed {
		return false
	}
	if ms == nil {
		return true
	}
	for _, svc := range append(slices.Clone(s.services), s.owner) {
		if ms[svc] != nil {
			return true
		}
	}
	return s.services == nil && s.owner == "" && len(ms) > 0
}

func firstOr(ss []string, or string) string {
	if len(ss) > 0 {
		return ss[0]
	}
	return or
}

// suppressors are the config file's ignore and ignore-paths entries.
func (c Config) suppressors() []*suppressor {
	var out []*suppressor
	for _, e := range c.Ignore {
		s := &suppressor{Suppression: Suppression{Kind: SuppressConfig, Reason: e.Reason, Pos: e.Pos}, rules: e.Rules, glob: e.Glob, dir: e.Dir}
		s.all = e.Glob == ""
		out = append(out, s)
	}
	return out
}

// pathIgnored reports whether a finding's file matches an ignore-paths glob, relative to
// the config file's folder dir.
func pathIgnored(glob, dir, file string) bool {
	if file == "" || file == StdinName {
		return false
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	return globMatch(strings.Split(strings.Trim(glob, "/"), "/"), strings.Split(filepath.ToSlash(rel), "/"))
}

// globMatch matches path segments: * and ? within a segment, ** across any number of
// them. A pattern that matches a folder covers everything below it.
func globMatch(pat, name []string) bool {
	if len(pat) == 0 {
		return true // the pattern named a folder that holds name
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if globMatch(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], name[0]); !ok {
		return false
	}
	return globMatch(pat[1:], name[1:])
}
