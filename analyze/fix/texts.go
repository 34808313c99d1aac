package fix

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// Texts are the files of a set as fixes edit them: line tables, indentation and anchors,
// each made on first use.
type Texts struct {
	set     *source.Set
	lines   map[string]*File        // line tables of the files
	looks   map[string]layout       // the indentation of each file
	anchors map[string]*anchorTable // which nodes sit inside an anchor others alias
}

// NewTexts makes the text view of a set.
func NewTexts(set *source.Set) *Texts { return &Texts{set: set} }

// Source returns the line table of an indexed file.
func (ix *Texts) Source(path string) (*File, error) {
	if s, ok := ix.lines[path]; ok {
		return s, nil
	}
	b, ok := ix.set.Src[path]
	if !ok {
		return nil, fmt.Errorf("%s was not read", ix.set.Display(path))
	}
	s := newSource(path, ix.set.Display(path), b)
	if s.odd {
		return nil, fmt.Errorf("%s breaks lines with lone carriage returns: edit it by hand", s.name)
	}
	s.markInside(ix.set.Docs[path])
	if ix.lines == nil {
		ix.lines = map[string]*File{}
	}
	ix.lines[path] = s
	return s, nil
}

// Layout is the indentation of an indexed file.
func (ix *Texts) Layout(file string) layout {
	if l, ok := ix.looks[file]; ok {
		return l
	}
	if ix.looks == nil {
		ix.looks = map[string]layout{}
	}
	l := layoutOf(ix.set.Docs[file])
	ix.looks[file] = l
	return l
}

// anchorTable knows, for one file, each node's parent and the anchors aliased somewhere.
type anchorTable struct {
	parent  map[*yaml.Node]*yaml.Node
	aliased map[*yaml.Node]bool
}

// InAnchor names the anchor that n lies in, or is, when something aliases it: editing n
// would then also edit every place that alias or a merge key reaches.
func (ix *Texts) InAnchor(file string, n *yaml.Node) (string, bool) {
	if ix.anchors == nil {
		ix.anchors = map[string]*anchorTable{}
	}
	at, ok := ix.anchors[file]
	if !ok {
		at = &anchorTable{parent: map[*yaml.Node]*yaml.Node{}, aliased: map[*yaml.Node]bool{}}
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			if n.Kind == yaml.AliasNode {
				at.aliased[n.Alias] = true
				return
			}
			for _, c := range n.Content {
				at.parent[c] = n
				walk(c)
			}
		}
		for _, d := range ix.set.Docs[file] {
			walk(d)
		}
		ix.anchors[file] = at
	}
	for ; n != nil; n = at.parent[n] {
		if at.aliased[n] {
			return n.Anchor, true
		}
	}
	return "", false
}
