package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// helmRefusal is the error of a document that only a template engine can read.
const helmRefusal = "this is a Helm template: render it first (helm template ... | shmdoctor -)"

// helmAction is an unquoted template action where YAML structure goes: a line of its own,
// a whole value or list item. A quoted action ("{{inputs.parameters.x}}", as Argo writes
// them), one inside a value ("--name={{.Name}}", as KServe writes) and template text in a
// block scalar are strings of valid YAML; such an action only explains a document that
// cannot be read.
var helmAction = regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(?:[\w.\-/"']+[ \t]*:[ \t]+)?(\{\{)`)

// readManifest reads every document of a manifest that can be read, and says where each
// other one fails: as a Helm template where template actions make it unreadable, else as
// invalid YAML. One bad document does not hide the others.
func readManifest(display string, content []byte) ([]*yaml.Node, []*analyze.LoadError) {
	var docs []*yaml.Node
	var errs []*analyze.LoadError
	for _, part := range splitDocuments(content) {
		dec := yaml.NewDecoder(bytes.NewReader(part.text))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				errs = append(errs, partError(display, part, err))
				break
			}
			if len(doc.Content) == 0 {
				continue
			}
			n := doc.Content[0]
			shiftLines(n, part.line-1)
			if lim := source.ExpansionLimit(n); source.ExpandedSize(n, map[*yaml.Node]int64{}, lim) > lim {
				a := source.FirstAlias(n)
				errs = append(errs, &analyze.LoadError{Pos: analyze.Pos{File: display, Line: a.Line, Column: a.Column}, Msg: fmt.Sprintf("YAML aliases expand to more than %d nodes: refusing an alias bomb", lim)})
				continue
			}
			if k := templateKey(n, 0); k != nil && bytes.Contains(part.text, []byte("{{")) {
				errs = append(errs, &analyze.LoadError{Pos: analyze.Pos{File: display, Line: k.Line, Column: k.Column}, Msg: helmRefusal})
				continue
			}
			docs = append(docs, n)
		}
	}
	return docs, errs
}

// documentPart is the text of one or more documents of a stream, from its line on.
type documentPart struct {
	text []byte
	line int // the first line's number in the file
}

// splitDocuments cuts a YAML stream at its document markers (--- at the start of a line),
// so that each document is read on its own. A marker cannot occur inside a scalar, so the
// cut is YAML's own. Directives and comments before a marker stay with the document they
// introduce.
func splitDocuments(content []byte) []documentPart {
	var parts []documentPart
	start, line, startLine := 0, 1, 1
	bare := true // the part so far holds only blank lines, comments and directives
	for off := 0; off < len(content); line++ {
		end := bytes.IndexByte(content[off:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += off + 1
		}
		l := content[off:end]
		switch {
		case marker(l, "---"):
			if !bare {
				parts = append(parts, documentPart{text: content[start:off], line: startLine})
				start, startLine = off, line
			}
			bare = false
		case marker(l, "..."):
			bare = true
		default:
			if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' && t[0] != '%' {
				bare = false
			}
		}
		off = end
	}
	return append(parts, documentPart{text: content[start:], line: startLine})
}

// marker reports whether line starts with the document marker m followed by a blank or
// its end.
func marker(line []byte, m string) bool {
	rest, ok := bytes.CutPrefix(line, []byte(m))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r')
}

// partError locates a document's read error in the file. A template action at or before
// the failing line (else anywhere in the document) makes it a Helm template.
func partError(display string, part documentPart, err error) *analyze.LoadError {
	e := source.AsLoadError(source.YAMLError(display, part.text, err), display)
	e.Line += part.line - 1
	var action *analyze.Pos
	for _, m := range helmAction.FindAllSubmatchIndex(part.text, -1) {
		i := m[2]
		at := analyze.Pos{File: display, Line: part.line + bytes.Count(part.text[:i], []byte("\n")), Column: i - bytes.LastIndexByte(part.text[:i], '\n')}
		if action == nil || at.Line <= e.Line {
			action = &at
		}
		if at.Line >= e.Line {
			break
		}
	}
	if action == nil {
		return e
	}
	return &analyze.LoadError{Pos: *action, Msg: helmRefusal}
}

// shiftLines moves the nodes of a document read on its own to their lines in the file.
func shiftLines(n *yaml.Node, by int) {
	if by == 0 {
		return
	}
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// templateKey finds a mapping key that is itself a collection. YAML reads an unquoted
// template action, {{ .Release.Name }}, as a flow mapping whose key is a flow mapping;
// no manifest means such a key, so a document with one and an action needs a template
// engine first. It returns the mapping that holds the key, where the action starts.
func templateKey(n *yaml.Node, depth int) *yaml.Node {
	if depth > 10000 {
		return nil
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 && (c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode) {
			return n
		}
		if k := templateKey(c, depth+1); k != nil {
			return k
		}
	}
	return nil
}
