package fix

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// source is a file's bytes with a table of line starts. Fixes edit YAML as text, so that
// the comments, key order, quoting and indentation of everything they do not touch stay
// byte-identical; yaml.v3 would rewrite the whole file.
type File struct {
	path  string
	name  string // as displayed, for reasons
	b     []byte
	start []int  // byte offset of each line; start[0] is line 1
	nl    string // the file's line ending
	bom   int    // bytes of a byte order mark, which yaml.v3 does not count as a column
	odd   bool   // lone carriage returns: yaml.v3 breaks lines there and this table does not
	// inside marks the lines that continue a value begun on an earlier line: block scalar
	// content (which may look like a comment, or be blank and kept), quoted strings and
	// flow collections written over several lines (which may be less indented than their
	// key). A block ends only where such a value has ended.
	inside map[int]bool
}

func newSource(path, name string, b []byte) *File {
	s := &File{path: path, name: name, b: b, nl: "\n", start: []int{0}}
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
		s.bom = 3
	}
	for i, c := range b {
		switch {
		case c == '\n' && i+1 < len(b):
			s.start = append(s.start, i+1)
		case c == '\r' && (i+1 == len(b) || b[i+1] != '\n'):
			s.odd = true
		}
	}
	if bytes.Contains(b, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	return s
}

func (s *File) count() int { return len(s.start) }

// lineStart is the offset of line l; one past the last line it is the end of the file.
func (s *File) lineStart(l int) int {
	if l > len(s.start) {
		return len(s.b)
	}
	return s.start[l-1]
}

// line is the text of line l without its line ending.
func (s *File) line(l int) string {
	end := s.lineStart(l + 1)
	t := string(s.b[s.lineStart(l):end])
	t = strings.TrimSuffix(t, "\n")
	return strings.TrimSuffix(t, "\r")
}

// offset turns a yaml.v3 position (columns count characters) into a byte offset, never
// past the end of that line.
func (s *File) offset(line, col int) int {
	off, end := s.lineStart(line), s.lineStart(line)+len(s.line(line))
	if line == 1 {
		off = min(off+s.bom, end)
	}
	for i := 1; i < col && off < end; i++ {
		_, n := utf8.DecodeRune(s.b[off:])
		off += n
	}
	return off
}

func (s *File) indent(l int) int {
	t := s.line(l)
	return len(t) - len(strings.TrimLeft(t, " "))
}

func (s *File) blankOrComment(l int) bool {
	t := strings.TrimLeft(s.line(l), " \t")
	return t == "" || t[0] == '#'
}

func (s *File) At(n *yaml.Node) string {
	return analyze.Pos{File: s.name, Line: n.Line, Column: n.Column}.String()
}

// blockEnd is the last line of the block that starts on line first: the lines after it
// indented deeper than ind, and with dash also "- " items at ind (a sequence written at
// its key's indentation). Blank and comment lines after the block belong to what follows.
func (s *File) blockEnd(first, ind int, dash bool) int {
	last := first
	for l := first + 1; l <= s.count(); l++ {
		if s.inside[l] {
			last = l
			continue
		}
		if s.blankOrComment(l) {
			continue
		}
		in := s.indent(l)
		t := s.line(l)[in:]
		if in > ind || dash && in == ind && (t == "-" || strings.HasPrefix(t, "- ")) {
			last = l
			continue
		}
		break
	}
	return last
}

// markInside fills s.inside from the parsed documents of the file.
func (s *File) markInside(docs []*yaml.Node) {
	s.inside = map[int]bool{}
	var walk func(n *yaml.Node, ind, depth int)
	walk = func(n *yaml.Node, ind, depth int) {
		if n == nil || n.Kind == yaml.AliasNode || depth > 10000 || n.Line < 1 || n.Line > s.count() {
			return
		}
		last := n.Line
		switch {
		case n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
			last = s.blockScalarEnd(n, ind)
		case n.Kind == yaml.ScalarNode && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0,
			n.Style&yaml.FlowStyle != 0 && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode):
			last = s.flowEnd(s.offset(n.Line, n.Column))
		}
		for l := n.Line + 1; l <= last; l++ {
			s.inside[l] = true
		}
		if n.Style&yaml.FlowStyle != 0 {
			return // the closing bracket bounds everything in it
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, -1, depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i], n.Content[i].Column-1, depth+1)
				walk(n.Content[i+1], n.Content[i].Column-1, depth+1)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, n.Column-1, depth+1)
			}
		}
	}
	for _, d := range docs {
		walk(d, -1, 0)
	}
}

// blockScalarEnd is the last line of a block scalar whose parent is indented ind: its
// content runs until a line that is not blank and not deeper than ind; trailing blank
// lines are content only when kept (|+, >+).
func (s *File) blockScalarEnd(n *yaml.Node, ind int) int {
	header := s.line(n.Line)[s.offset(n.Line, n.Column)-s.lineStart(n.Line):]
	if i := strings.IndexAny(header, " \t#"); i >= 0 {
		header = header[:i]
	}
	last, blank := n.Line, n.Line
	for l := n.Line + 1; l <= s.count(); l++ {
		t := s.line(l)
		if strings.TrimLeft(t, " ") == "" {
			blank = l
			continue
		}
		if len(t)-len(strings.TrimLeft(t, " ")) <= ind {
			break
		}
		last, blank = l, l
	}
	if strings.Contains(header, "+") {
		return blank
	}
	return last
}

// flowEnd is the line where the quoted string or flow collection starting at offset off
// ends: its closing quote or bracket, skipping quoted strings and comments inside.
func (s *File) flowEnd(off int) int {
	depth := 0
	for i := off; i < len(s.b); i++ {
		switch c := s.b[i]; c {
		case '"':
			for i++; i < len(s.b) && s.b[i] != '"'; i++ {
				if s.b[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(s.b); i++ {
				if s.b[i] == '\'' {
					if i+1 < len(s.b) && s.b[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case '#':
			if i > 0 && (s.b[i-1] == ' ' || s.b[i-1] == '\t' || s.b[i-1] == '\n') {
				for i < len(s.b) && s.b[i] != '\n' {
					i++
				}
			}
		}
		if depth <= 0 {
			return s.lineOf(min(i, len(s.b)-1))
		}
	}
	return s.count()
}

// lineOf is the line that holds byte offset off.
func (s *File) lineOf(off int) int {
	l, _ := slices.BinarySearch(s.start, off+1)
	return l
}

// firstOnLine reports whether only spaces precede node n on its line.
func (s *File) firstOnLine(n *yaml.Node) bool {
	return strings.TrimLeft(string(s.b[s.lineStart(n.Line):s.offset(n.Line, n.Column)]), " ") == ""
}

func blockSeq(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle == 0
}

func blockMap(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0
}

// anchorIn names an anchor defined at or below n: removing n would break its aliases.
func anchorIn(n *yaml.Node) string {
	if n == nil || n.Kind == yaml.AliasNode {
		return ""
	}
	if n.Anchor != "" {
		return n.Anchor
	}
	for _, c := range n.Content {
		if a := anchorIn(c); a != "" {
			return a
		}
	}
	return ""
}

// RemoveEntry deletes a key of a block mapping with its value, whole lines from the key's
// line to the end of its value, the key's own end-of-line comment included.
func (s *File) RemoveEntry(parent, key, val *yaml.Node) (analyze.Edit, error) {
	switch {
	case parent.Style&yaml.FlowStyle != 0:
		return analyze.Edit{}, fmt.Errorf("%s is written in a flow mapping at %s: edit it by hand", key.Value, s.At(key))
	case len(parent.Content) <= 2:
		return analyze.Edit{}, fmt.Errorf("%s at %s is the only key of its mapping: removing it would leave the mapping empty", key.Value, s.At(key))
	case !s.firstOnLine(key):
		return analyze.Edit{}, fmt.Errorf("%s at %s shares its line with other YAML: edit it by hand", key.Value, s.At(key))
	}
	if a := anchorIn(val); a != "" {
		return analyze.Edit{}, fmt.Errorf("%s at %s defines the anchor &%s: edit it by hand", key.Value, s.At(key), a)
	}
	end := s.blockEnd(key.Line, key.Column-1, blockSeq(val))
	return s.edit(s.lineStart(key.Line), s.lineStart(end+1), ""), nil
}

func (s *File) edit(start, end int, text string) analyze.Edit {
	return analyze.Edit{Path: s.path, Start: start, End: end, Old: string(s.b[start:end]), New: text}
}

// scalarText is the text a scalar would be written as in the style of n.
func scalarText(n *yaml.Node, v string) (string, bool) {
	switch n.Style &^ yaml.FlowStyle {
	case 0:
		return v, true
	case yaml.SingleQuotedStyle:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", true
	case yaml.DoubleQuotedStyle:
		if strings.ContainsAny(v, "\\\"") {
			return "", false
		}
		return `"` + v + `"`, true
	}
	return "", false
}

// SetScalar replaces a one-line scalar with value, written in the same style (plain,
// single or double quoted).
func (s *File) SetScalar(n *yaml.Node, value string) (analyze.Edit, error) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return analyze.Edit{}, fmt.Errorf("the value at %s is shared through a YAML anchor: edit it by hand", s.At(n))
	}
	old, ok := scalarText(n, n.Value)
	start := s.offset(n.Line, n.Column)
	if !ok || n.Kind != yaml.ScalarNode || n.Style&yaml.TaggedStyle != 0 || !bytes.HasPrefix(s.b[start:], []byte(old)) {
		return analyze.Edit{}, fmt.Errorf("the value at %s is not a one-line scalar: edit it by hand", s.At(n))
	}
	if end := start + len(old); end < len(s.b) && !strings.ContainsRune(" \t\r\n,:]}#", rune(s.b[end])) {
		return analyze.Edit{}, fmt.Errorf("the value at %s is not a one-line scalar: edit it by hand", s.At(n))
	}
	text, _ := scalarText(n, value)
	return s.edit(start, start+len(old), text), nil
}

// Entry is YAML a fix adds: a key with a scalar value, entries below it, or sequence items
// (each a mapping).
type Entry struct {
	Key   string
	Value string
	Below []Entry
	items [][]Entry
}

// layout is how a file indents: a mapping's keys step deeper than its key, and a
// sequence's dashes seq deeper (0 when written at the key's indentation).
type layout struct{ step, seq int }

// layoutOf reads the indentation of a file from its first nested block mapping and its
// first block sequence of mappings.
func layoutOf(docs []*yaml.Node) layout {
	l := layout{step: -1, seq: -1}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || l.step >= 0 && l.seq >= 0 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if blockMap(v) && len(v.Content) > 0 && v.Content[0].Line > k.Line && l.step < 0 && v.Content[0].Column > k.Column {
					l.step = v.Content[0].Column - k.Column
				}
				if blockSeq(v) && len(v.Content) > 0 && v.Content[0].Line > k.Line && l.seq < 0 && blockMap(v.Content[0]) {
					// a mapping item's first key sits two columns after its dash, as written by
					// nearly everyone
					if d := v.Content[0].Column - 2 - k.Column; d >= 0 {
						l.seq = d
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	if l.step <= 0 {
		l.step = 2
	}
	if l.seq < 0 {
		l.seq = l.step
	}
	return l
}

// render writes entries as lines indented by ind.
func (l layout) render(es []Entry, ind int) []string {
	var out []string
	pad := strings.Repeat(" ", ind)
	for _, e := range es {
		switch {
		case e.Value != "":
			out = append(out, pad+e.Key+": "+e.Value)
		case len(e.items) > 0:
			out = append(out, pad+e.Key+":")
			for _, it := range e.items {
				out = append(out, l.item(it, ind+l.seq)...)
			}
		default:
			out = append(out, pad+e.Key+":")
			out = append(out, l.render(e.Below, ind+l.step)...)
		}
	}
	return out
}

// item writes a sequence item whose dash is at column dash.
func (l layout) item(es []Entry, dash int) []string {
	lines := l.render(es, dash+2)
	if len(lines) > 0 {
		lines[0] = strings.Repeat(" ", dash) + "- " + lines[0][dash+2:]
	}
	return lines
}

// insertAt inserts lines before line l (one past the last line: at the end of the file).
func (s *File) insertAt(l int, lines []string) analyze.Edit {
	at := s.lineStart(l)
	text := strings.Join(lines, s.nl) + s.nl
	if at == len(s.b) && len(s.b) > 0 && s.b[len(s.b)-1] != '\n' {
		text = s.nl + strings.TrimSuffix(text, s.nl)
	}
	return s.edit(at, at, text)
}

// InsertEntries adds entries at the end of a block mapping, at its keys' indentation.
func (s *File) InsertEntries(m *yaml.Node, l layout, es []Entry) (analyze.Edit, error) {
	if m.Kind == yaml.MappingNode && m.Style&yaml.FlowStyle != 0 {
		return analyze.Edit{}, fmt.Errorf("the mapping at %s is written in flow style: edit it by hand", s.At(m))
	}
	if m.Kind != yaml.MappingNode || len(m.Content) < 2 {
		return analyze.Edit{}, fmt.Errorf("the value at %s is not a block mapping: edit it by hand", s.At(m))
	}
	first := m.Content[0]
	lastKey, lastVal := m.Content[len(m.Content)-2], m.Content[len(m.Content)-1]
	if lastKey.Column != first.Column {
		return analyze.Edit{}, fmt.Errorf("the mapping at %s is not indented evenly: edit it by hand", s.At(m))
	}
	end := s.blockEnd(lastKey.Line, lastKey.Column-1, blockSeq(lastVal))
	e := s.insertAt(end+1, l.render(es, first.Column-1))
	e.Slot = fmt.Sprintf("%d:%d/%s", m.Line, m.Column, es[0].Key)
	return e, nil
}

// fillEmpty replaces an empty flow mapping ({}) that is a key's value with entries below
// the key, keeping any comment after it.
func (s *File) fillEmpty(key, val *yaml.Node, l layout, es []Entry) (analyze.Edit, error) {
	start := s.offset(val.Line, val.Column)
	rest := s.line(val.Line)[start-s.lineStart(val.Line):]
	if val.Kind != yaml.MappingNode || len(val.Content) > 0 || !strings.HasPrefix(rest, "{}") || !s.firstOnLine(key) {
		return analyze.Edit{}, fmt.Errorf("the value at %s is not an empty mapping on its key's line: edit it by hand", s.At(val))
	}
	// from the end of "key:" to the end of "{}"
	from := start
	for from > s.lineStart(val.Line) && (s.b[from-1] == ' ' || s.b[from-1] == '\t') {
		from--
	}
	comment := strings.TrimRight(rest[2:], " \t")
	lines := l.render(es, key.Column-1+l.step)
	return s.edit(from, start+len(rest), comment+s.nl+strings.Join(lines, s.nl)), nil
}

// insertItem adds a mapping as the last item of a block sequence.
func (s *File) insertItem(seq *yaml.Node, l layout, item []Entry) (analyze.Edit, error) {
	if !blockSeq(seq) || len(seq.Content) == 0 {
		return analyze.Edit{}, fmt.Errorf("the list at %s is not a block sequence: edit it by hand", s.At(seq))
	}
	last := seq.Content[len(seq.Content)-1]
	prefix := string(s.b[s.lineStart(last.Line):s.offset(last.Line, last.Column)])
	dash := strings.LastIndexByte(prefix, '-')
	if dash < 0 || strings.TrimLeft(prefix[:dash], " ") != "" || strings.TrimLeft(prefix[dash+1:], " ") != "" {
		return analyze.Edit{}, fmt.Errorf("the list item at %s is not written as \"- \" on its own line: edit it by hand", s.At(last))
	}
	end := s.blockEnd(last.Line, dash, false)
	lines := l.item(item, dash)
	if gap := len(prefix) - dash - 2; gap > 0 {
		// items written as "-   key": keep their column
		lines = l.render(item, len(prefix))
		lines[0] = strings.Repeat(" ", dash) + "-" + strings.Repeat(" ", len(prefix)-dash-1) + lines[0][len(prefix):]
	}
	return s.insertAt(end+1, lines), nil
}

// ScalarRaw is a one-line scalar as written, quotes included.
func (s *File) ScalarRaw(n *yaml.Node) (string, bool) {
	e, err := s.SetScalar(n, n.Value)
	return e.Old, err == nil
}

// AddEntries adds entries to a mapping: at the end of a block mapping, or in place of an
// empty flow mapping ({}) written as key's value.
func (s *File) AddEntries(key, m *yaml.Node, l layout, es []Entry) (analyze.Edit, error) {
	if key != nil && m.Kind == yaml.MappingNode && len(m.Content) == 0 && m.Style&yaml.FlowStyle != 0 {
		return s.fillEmpty(key, m, l, es)
	}
	return s.InsertEntries(m, l, es)
}

// AddItem adds a mapping to the list at key of mapping m, creating the key if needed.
func (s *File) AddItem(m *yaml.Node, key string, l layout, item []Entry) (analyze.Edit, error) {
	k, v, merged := source.FindKey(m, key)
	if k == nil {
		return s.InsertEntries(m, l, []Entry{{Key: key, items: [][]Entry{item}}})
	}
	if merged || v.Kind == yaml.AliasNode {
		return analyze.Edit{}, fmt.Errorf("%s at %s comes from a YAML anchor: edit it by hand", key, s.At(k))
	}
	e, err := s.insertItem(v, l, item)
	e.Slot = fmt.Sprintf("%d:%d/%s", v.Line, v.Column, item[0].Value)
	return e, err
}

// EmptyMapping replaces the block mapping that is key's value with {}, keeping the comment
// on the key's line: "app:" and its entries become "app: {}".
func (s *File) EmptyMapping(key, m *yaml.Node) (analyze.Edit, error) {
	raw, ok := s.ScalarRaw(key)
	colon := s.offset(key.Line, key.Column) + len(raw)
	if !ok || !blockMap(m) || !s.firstOnLine(key) || colon >= s.lineStart(key.Line)+len(s.line(key.Line)) || s.b[colon] != ':' || m.Line <= key.Line {
		return analyze.Edit{}, fmt.Errorf("%s at %s is not a block mapping of its own: edit it by hand", key.Value, s.At(key))
	}
	if a := anchorIn(m); a != "" {
		return analyze.Edit{}, fmt.Errorf("%s at %s defines the anchor &%s: edit it by hand", key.Value, s.At(key), a)
	}
	end := s.lineStart(s.blockEnd(key.Line, key.Column-1, false) + 1)
	text := " {}" + s.line(key.Line)[colon+1-s.lineStart(key.Line):]
	if end > 0 && s.b[end-1] == '\n' {
		text += s.nl
	}
	return s.edit(colon+1, end, text), nil
}
