package analyze

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
)

// The kinds of suppression. Every kind but SuppressConfig, SuppressBaseline and
// SuppressFlag is written in the source it silences.
const (
	SuppressComment    SuppressionKind = "comment"    // # shmdoctor-ignore in a compose file or manifest
	SuppressExtension  SuppressionKind = "extension"  // x-shmdoctor.ignore of a compose service
	SuppressAnnotation SuppressionKind = "annotation" // shmdoctor.io/ignore of a Kubernetes object
	SuppressConfig     SuppressionKind = "config"     // ignore or ignore-paths of the config file
	SuppressBaseline   SuppressionKind = "baseline"   // a finding recorded in the --baseline file
	SuppressFlag       SuppressionKind = "flag"       // --ignore on the command line
)

// SuppressionKind says where a suppression is written.
type SuppressionKind string

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
func (s *Suppression) InSource() bool {
	return s.Kind != SuppressConfig && s.Kind != SuppressBaseline && s.Kind != SuppressFlag
}

// Suppressor is one written suppression and the findings it covers: the rules it names,
// in whole services, on one line, or (config entries) everywhere or in matching files.
type Suppressor struct {
	Suppression
	Rules    []string
	Services []string // plan services covered whole
	OnFile   string   // display file and line covered, when Services is nil
	OnLine   int
	// Owner is the service a covered line belongs to ("" outside services); Analysed is
	// false when that service was not analysed (a profile left it out), so the Suppressor
	// cannot be judged unused.
	Owner    string
	Analysed bool
	all      bool   // config ignore: every finding of the rules
	glob     string // config ignore-paths: findings in files matching glob, below dir
	dir      string
}

// covers reports whether the Suppressor applies to a finding, its rules aside.
func (s *Suppressor) covers(f *Finding) bool {
	switch {
	case s.all:
		return true
	case s.glob != "":
		return PathIgnored(s.glob, s.dir, f.File)
	case s.Services != nil:
		return slices.Contains(s.Services, f.Service)
	}
	return f.File == s.OnFile && f.Line == s.OnLine
}

func (s *Suppressor) matches(f *Finding) bool {
	return (s.glob != "" || slices.Contains(s.Rules, f.Rule)) && s.covers(f)
}

// what names the Suppressor in a message: the comment, key or annotation written.
func (s *Suppressor) what() string {
	switch s.Kind {
	case SuppressExtension:
		return IntentKey + ".ignore"
	case SuppressAnnotation:
		return AnnotationIgnore
	}
	return IgnoreDirective
}

// scope says which findings the Suppressor was written for, in a message.
func (s *Suppressor) scope() string {
	switch {
	case s.Kind == SuppressAnnotation:
		return "of the containers it annotates"
	case len(s.Services) == 1:
		return "of " + s.Services[0]
	case s.Services != nil:
		return "of " + strings.Join(s.Services, ", ")
	}
	if s.OnLine == PastEnd {
		return "below it: the file ends there"
	}
	return fmt.Sprintf("on line %d", s.OnLine)
}

// PastEnd is the target of a comment line that no line follows: it covers nothing.
const PastEnd = -1

// suppress marks the findings their Suppressors cover and reports, as SHM090 findings,
// every rule a Suppressor written in the source names that matched nothing. Suppressors
// written closest to the finding win: a line comment over a service comment, over
// x-shmdoctor.ignore or an annotation, over the config file. ms is nil for the static
// rules; in the probe's pass, a Suppressor of a probe rule is judged only where the probe
// measured.
func suppress(p *Project, rules []Rule, cfg Config, out []Finding, ms map[string]*Measurement) []Finding {
	unusedRule := FindRule(rules, UnusedSuppression)
	sups := slices.Clone(p.Suppressors)
	slices.SortStableFunc(sups, func(a, b *Suppressor) int { return rank(a) - rank(b) })
	sups = append(sups, cfg.Suppressors()...)
	used := map[*Suppressor]map[string]bool{}
	idx := newSupIndex(sups)
	mark := func(fs []Finding) {
		for i := range fs {
			f := &fs[i]
			for _, s := range idx.candidates(f) {
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
		for _, id := range s.Rules {
			r := FindRule(rules, id)
			if used[s][id] || unusedRule == nil || id == UnusedSuppression || r == nil || r.Probe != (ms != nil) || !judged(s, ms) {
				continue
			}
			what := s.what()
			f := Finding{
				Rule: unusedRule.ID, Name: unusedRule.Name, Severity: unusedRule.Severity,
				Service: firstOr(s.Services, s.Owner), Pos: s.Pos,
				Message:     fmt.Sprintf("%s %s matches no finding %s", what, id, s.scope()),
				Remediation: fmt.Sprintf("Remove %s from the %s: nothing there triggers it any more.", id, what),
			}
			if slices.Contains(s.Rules, UnusedSuppression) {
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

// rank orders Suppressors by how close to the finding they are written.
func rank(s *Suppressor) int {
	switch {
	case s.Kind == SuppressComment && s.Services == nil:
		return 0
	case s.Kind == SuppressComment:
		return 1
	case s.Kind == SuppressConfig:
		return 3
	}
	return 2
}

// judged reports whether a Suppressor's rules ran over what it covers in this pass, so
// that one matching nothing is stale rather than out of scope.
func judged(s *Suppressor, ms map[string]*Measurement) bool {
	if s.Kind == SuppressConfig || s.Kind == SuppressFlag || !s.Analysed {
		return false
	}
	if ms == nil {
		return true
	}
	for _, svc := range append(slices.Clone(s.Services), s.Owner) {
		if ms[svc] != nil {
			return true
		}
	}
	return s.Services == nil && s.Owner == "" && len(ms) > 0
}

func firstOr(ss []string, or string) string {
	if len(ss) > 0 {
		return ss[0]
	}
	return or
}

// Suppressors are the config file's ignore and ignore-paths entries, and the --ignore
// flags.
func (c Config) Suppressors() []*Suppressor {
	var out []*Suppressor
	for _, e := range c.Ignore {
		kind := cmp.Or(e.Kind, SuppressConfig)
		s := &Suppressor{Suppression: Suppression{Kind: kind, Reason: e.Reason, Pos: e.Pos}, Rules: e.Rules, glob: e.Glob, dir: e.Dir}
		s.all = e.Glob == ""
		out = append(out, s)
	}
	return out
}

// PathIgnored reports whether a finding's file matches an ignore-paths glob, relative to
// the config file's folder dir.
func PathIgnored(glob, dir, file string) bool {
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

// A stack can carry a suppression for each of its services (x-shmdoctor.ignore, or a
// # shmdoctor-ignore comment above each). Matching every finding against every suppressor,
// and every comment against every service, made Check and the load grow with the square of
// the services: 3.8 µs a service for 100 services with a comment each, 320 µs for 5,000.
// These indexes are made once, and each lookup reads only what can match.

// SuppressionWork counts what scoping and matching suppressions read: suppressors tried on a
// finding, service definitions and blocks. The tests hold it to grow linearly with the
// services.
var SuppressionWork atomic.Int64

// supIndex finds the suppressors that may cover a finding: those of its service, those of
// its line, and those that cover whatever matches (config entries), in their order.
type supIndex struct {
	sups      []*Suppressor
	byService map[string][]int
	byLine    map[Pos][]int
	any       []int
}

func newSupIndex(sups []*Suppressor) *supIndex {
	x := &supIndex{sups: sups, byService: map[string][]int{}, byLine: map[Pos][]int{}}
	for i, s := range sups {
		switch { // as covers decides
		case s.all, s.glob != "":
			x.any = append(x.any, i)
		case s.Services != nil:
			for _, svc := range s.Services {
				if l := x.byService[svc]; len(l) == 0 || l[len(l)-1] != i {
					x.byService[svc] = append(l, i)
				}
			}
		default:
			at := Pos{File: s.OnFile, Line: s.OnLine}
			x.byLine[at] = append(x.byLine[at], i)
		}
	}
	return x
}

// candidates are the suppressors that may cover f, in the order of the list indexed.
func (x *supIndex) candidates(f *Finding) []*Suppressor {
	idx := slices.Concat(x.byService[f.Service], x.byLine[Pos{File: f.File, Line: f.Line}], x.any)
	slices.Sort(idx)
	SuppressionWork.Add(int64(len(idx)))
	out := make([]*Suppressor, len(idx))
	for i, j := range idx {
		out[i] = x.sups[j]
	}
	return out
}
