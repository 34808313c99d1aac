package report

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Visible returns text that came from the input (a file name, a project, service or
// container name, a value, an engine's error) as the doctor prints it, in every format:
// escaped so that it can neither steer a terminal, nor start a line of its own, nor be read
// by a CI runner as a command, and so that a JSON consumer reads the escapes a terminal
// shows.
//
//   - A character strconv.IsPrint rejects, but the ASCII space, is written as in a Go
//     string literal: C0 controls (\n, \t, \r, \a, \x1b), DEL (\x7f), C1 controls (\u0085,
//     \u009b), the line and paragraph separators (\u2028), bidi and other format
//     characters (\u202e), every other space (\u00a0). A byte that is not UTF-8 is \xff.
//   - "::" at the start or after a space is written ":\x3a": a GitHub Actions runner reads
//     a line that starts with "::" (after white space) as a workflow command, and a line
//     wraps at spaces.
//   - "##[" and "##vso[" are written "#\x23[" and "#\x23vso[": runners read them anywhere
//     in a line (GitHub's legacy commands, Azure Pipelines' logging commands).
//
// A backslash is written as it is, so that paths stay readable: a backslash and an n
// written in the input read as the escape of a line break. Visible is idempotent.
func Visible(s string) string { return escape(s, 0) }

// keep is what escape leaves alone, besides what Visible does.
type keep uint8

const (
	// keepSGR keeps the colour codes the palette writes (ESC [ digits m), in a whole line
	// the doctor composed.
	keepSGR keep = 1 << iota
	// keepTab keeps tabs: a patch's lines are a file's, and must still apply.
	keepTab
)

// escape is Visible with the exceptions k.
func escape(s string, k keep) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	wordStart := true // where a line may start: the start, or after a space
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		space := false
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\x1b' && k&keepSGR != 0 && sgrLen(s[i:]) > 0:
			n = sgrLen(s[i:])
			b.WriteString(s[i : i+n])
			space = wordStart // a colour code does not move where the line's text starts
		case r == '\t' && k&keepTab != 0:
			b.WriteByte('\t')
			space = true
		case r == ':' && wordStart && strings.HasPrefix(s[i:], "::"):
			b.WriteString(`:\x3a`)
			n = 2
		case r == '#' && (strings.HasPrefix(s[i:], "##[") || strings.HasPrefix(s[i:], "##vso[")):
			b.WriteString(`#\x23`)
			n = 2
		case r != ' ' && !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
			space = r == ' '
		}
		wordStart = space
		i += n
	}
	return b.String()
}

// plain reports whether s is printable ASCII holding no "::" and no "##": nothing to escape.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || (c == ':' || c == '#') && i+1 < len(s) && s[i+1] == c {
			return false
		}
	}
	return true
}

// sgrLen is the length of the colour code s starts with, 0 when it starts with none.
func sgrLen(s string) int {
	if !strings.HasPrefix(s, "\x1b[") {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'm':
			return i + 1
		case c != ';' && c != ':' && (c < '0' || c > '9'):
			return 0
		}
	}
	return 0
}

// visibleFix is Visible for a remediation, keeping the line breaks of the YAML snippets the
// rules write into one: the blank lines around a snippet, and its lines, indented by four
// spaces. Any other line break came from the input (a service name in a sentence) and is
// escaped, so that a value cannot add a line of its own under a finding.
func visibleFix(s string) string {
	if !strings.Contains(s, "\n") {
		return Visible(s)
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	part := lines[0]
	for i, l := range lines[1:] {
		if l == "" || lines[i] == "" || strings.HasPrefix(l, "    ") {
			out = append(out, Visible(part))
			part = l
			continue
		}
		part += "\n" + l
	}
	return strings.Join(append(out, Visible(part)), "\n")
}

// VisiblePatch is a unified diff (or a YAML snippet) of the input's files as the doctor
// prints it: each line escaped as Visible escapes it but for its tabs and a final carriage
// return (a CRLF file's), so that a patch of an ordinary file applies as printed, while no
// line of a hostile one is a command or a control sequence (that patch no longer applies).
func VisiblePatch(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cr := strings.HasSuffix(l, "\r")
		l = escape(strings.TrimSuffix(l, "\r"), keepTab)
		if cr {
			l += "\r"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// lineWriter writes a report for people one line at a time, each line escaped whole
// (keeping the palette's colour codes when it has them): whatever part of a line was not
// escaped where it was composed, nothing written through it breaks a line, steers a
// terminal or reads as a runner's command. A line's own text is the doctor's, which holds
// none of what Visible escapes, so it is written unchanged.
type lineWriter struct {
	w    io.Writer
	keep keep
	err  error
}

func newLineWriter(w io.Writer, o Options) *lineWriter {
	lw := &lineWriter{w: w}
	if o.Color {
		lw.keep = keepSGR
	}
	return lw
}

// line writes one line.
func (l *lineWriter) line(s string) { l.write(escape(s, l.keep) + "\n") }

// lines writes each line.
func (l *lineWriter) lines(ls []string) {
	for _, s := range ls {
		l.line(s)
	}
}

// patch writes a patch or a snippet, indented by indent: see VisiblePatch.
func (l *lineWriter) patch(s, indent string) {
	for _, line := range strings.SplitAfter(VisiblePatch(s), "\n") {
		if line != "" {
			l.write(indent + line)
		}
	}
}

func (l *lineWriter) write(s string) {
	if l.err == nil {
		_, l.err = io.WriteString(l.w, s)
	}
}

// How the strings of a field are escaped when a report is encoded (visibleCopy), by the
// field's visible tag. A field without one, or a struct of the model that has none, holds
// input text, escaped as Visible escapes it.
const (
	ownText   = "own"   // the doctor's own text (rule documentation): written as it is
	fixText   = "fix"   // a remediation, or a message that ends with one: visibleFix
	linesText = "lines" // lines the renderer joined: each escaped, the breaks kept
	patchText = "patch" // a patch or a snippet of a file: VisiblePatch
)

// modelTexts are the visible tags of the model's fields, which report cannot tag.
var modelTexts = map[reflect.Type]map[string]string{
	reflect.TypeFor[analyze.Finding]():           {"Remediation": fixText},
	reflect.TypeFor[analyze.ShmRecommendation](): {"Diff": patchText, "Snippet": patchText},
}

// escapeAs escapes s as the visible tag how says.
func escapeAs(s, how string) string {
	switch how {
	case fixText:
		return visibleFix(s)
	case patchText:
		return VisiblePatch(s)
	case linesText:
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = Visible(l)
		}
		return strings.Join(lines, "\n")
	}
	return Visible(s)
}

// visibleCopy returns a deep copy of v (what a structured format encodes) with every string
// escaped, as its field's visible tag says: the one place where the values of JSON, SARIF,
// Code Climate, JUnit and baseline files are made safe, so that a field added to any of
// them, or to the model they embed, is escaped without anyone remembering to. Fields an
// encoder skips (tagged "-") are copied as they are.
func visibleCopy(v any) any {
	src := reflect.ValueOf(v)
	if !src.IsValid() {
		return v
	}
	dst := reflect.New(src.Type()).Elem()
	c := copier{seen: map[seenPtr]reflect.Value{}}
	c.copy(dst, src, "")
	return dst.Interface()
}

type seenPtr struct {
	p uintptr
	t reflect.Type
}

// copier copies a value once per pointer, so that shared values stay shared.
type copier struct{ seen map[seenPtr]reflect.Value }

func (c *copier) copy(dst, src reflect.Value, how string) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(escapeAs(src.String(), how))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		key := seenPtr{src.Pointer(), src.Type()}
		p, ok := c.seen[key]
		if !ok {
			p = reflect.New(src.Type().Elem())
			c.seen[key] = p
			c.copy(p.Elem(), src.Elem(), how)
		}
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		c.copy(e, src.Elem(), how)
		dst.Set(e)
	case reflect.Struct:
		dst.Set(src)
		t := src.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("json") == "-" || f.Tag.Get("xml") == "-" {
				continue
			}
			if !f.IsExported() {
				if f.Anonymous && holdsStrings(f.Type) {
					// Its fields are encoded, but reflect cannot set them: a test of every
					// format meets this at once.
					panic(fmt.Sprintf("report: %s embeds the unexported %s, whose strings cannot be escaped", t, f.Type))
				}
				continue
			}
			h := how
			if tag, ok := f.Tag.Lookup("visible"); ok {
				h = tag
			} else if m := modelTexts[t][f.Name]; m != "" {
				h = m
			}
			if h != ownText {
				c.copy(dst.Field(i), src.Field(i), h)
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			c.copy(s.Index(i), src.Index(i), how)
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			c.copy(dst.Index(i), src.Index(i), how)
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k, e := reflect.New(src.Type().Key()).Elem(), reflect.New(src.Type().Elem()).Elem()
			c.copy(k, it.Key(), how)
			c.copy(e, it.Value(), how)
			m.SetMapIndex(k, e)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}

// holdsStrings reports whether a value of type t can hold a string.
func holdsStrings(t reflect.Type) bool {
	return holds(t, map[reflect.Type]bool{})
}

func holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holds(t.Elem(), seen)
	case reflect.Map:
		return holds(t.Key(), seen) || holds(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holds(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// encodeJSON writes v as JSON, each string escaped by visibleCopy; indent "" writes it on
// one line (a stream of samples).
func encodeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	return enc.Encode(visibleCopy(v))
}

// WriteJSON writes v as indented JSON with every string escaped as a report's are, for a
// command whose output is not a report (host).
func WriteJSON(w io.Writer, v any) error { return encodeJSON(w, v, "  ") }
