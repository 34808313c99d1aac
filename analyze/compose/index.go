package compose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/shmdoctor/shmdoctor/analyze/suppress"
	"go.yaml.in/yaml/v3"
)

// Index keeps the YAML node tree of every file a project was loaded from, so that a value of
// the loaded project can be traced back to the file, line and column where it was written.
// compose-go merges plain maps and drops positions; the index replays its precedence
// instead: later -f files over earlier ones, a service over what it extends, a file over
// what it includes, direct keys over merge keys.
type Index struct {
	*source.Set          // the files, as read
	*fix.Texts           // their text, as fixes edit it
	top         []string // the project's compose files, in load order
	dir         string   // the project's working folder
	// layerCache holds each service's layers: every rule asks for several keys of every
	// service, and the files do not change once indexed.
	layerCache map[string][]layer
	// blocks are the service blocks of each file, made on first use (serviceKeyAround).
	blocks map[string]*serviceBlocks
	// directives are the # shmdoctor-ignore comments of each file.
	directives map[string][]suppress.Directive
}

// layer is one definition of a service in one file.
type layer struct {
	file string
	key  *yaml.Node // the service name
	node *yaml.Node // the service mapping
	// base marks a service that is extended rather than the service's own definition.
	base bool
	// shared marks a service mapping written as an alias: editing it edits other services.
	shared bool
}

func newIndex(dir string, input *source.Sources) *Index {
	set := source.NewSet(input)
	return &Index{Set: set, Texts: fix.NewTexts(set), dir: dir, directives: map[string][]suppress.Directive{}}
}

// add parses a file into the index. The error, if any, is located.
func (ix *Index) add(path string, content []byte) error {
	if _, ok := ix.Docs[path]; ok {
		return nil
	}
	ix.Read = append(ix.Read, path)
	var docs []*yaml.Node
	ix.Src[path] = content
	ix.Input.Public(path, content)
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			ix.Docs[path] = docs
			return source.YAMLError(ix.Display(path), content, err)
		}
		if len(doc.Content) > 0 {
			if root := doc.Content[0]; root.Kind != yaml.MappingNode && !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
				ix.Docs[path] = docs
				return &analyze.LoadError{Pos: analyze.Pos{File: ix.Display(path), Line: root.Line, Column: root.Column}, Msg: "a compose file must be a mapping of top-level keys (services, volumes, ...)"}
			}
			if dup, first := source.DuplicateKey(doc.Content[0]); dup != nil {
				ix.Docs[path] = docs
				return &analyze.LoadError{Pos: analyze.Pos{File: ix.Display(path), Line: dup.Line, Column: dup.Column}, Msg: fmt.Sprintf("invalid YAML: mapping key %q already defined at line %d", dup.Value, first.Line)}
			}
			if lim := source.ExpansionLimit(doc.Content[0]); source.ExpandedSize(doc.Content[0], map[*yaml.Node]int64{}, lim) > lim {
				ix.Docs[path] = docs
				return &analyze.LoadError{Pos: ix.Pos(path, source.FirstAlias(doc.Content[0])), Msg: fmt.Sprintf("YAML aliases expand to more than %d nodes: refusing an alias bomb", lim)}
			}
			if at, msg := source.Quadratic(doc.Content[0]); at != nil {
				ix.Docs[path] = docs
				return &analyze.LoadError{Pos: ix.Pos(path, at), Msg: msg}
			}
			docs = append(docs, doc.Content[0])
		}
	}
	ix.Docs[path] = docs
	ix.directives[path] = suppress.ScanDirectives(content, docs)
	return nil
}

type include struct {
	files    []string // main file first, then its overrides
	dir      string   // the included project's folder
	envFiles []string // its env_file entries, or its .env
}

// includes lists a document's include entries, resolved as compose-go resolves them:
// paths are relative to the including project's folder.
func includes(doc *yaml.Node, workDir string) []include {
	var out []include
	seq := source.Get(doc, "include")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(workDir, p)
	}
	for _, e := range seq.Content {
		e = source.Deref(e)
		var inc include
		switch e.Kind {
		case yaml.ScalarNode:
			inc.files = []string{abs(e.Value)}
		case yaml.MappingNode:
			p := source.Get(e, "path")
			if p == nil {
				continue
			}
			if p.Kind == yaml.SequenceNode {
				for _, s := range p.Content {
					inc.files = append(inc.files, abs(source.Deref(s).Value))
				}
			} else {
				inc.files = []string{abs(p.Value)}
			}
			if d := source.Get(e, "project_directory"); d != nil && d.Value != "" {
				inc.dir = abs(d.Value)
			}
			for _, s := range source.Scalars0(source.Get(e, "env_file")) {
				inc.envFiles = append(inc.envFiles, abs(s))
			}
		}
		if len(inc.files) == 0 {
			continue
		}
		if inc.dir == "" {
			inc.dir = filepath.Dir(inc.files[0])
		}
		if len(inc.envFiles) == 0 {
			inc.envFiles = []string{filepath.Join(inc.dir, ".env")}
		}
		out = append(out, inc)
	}
	return out
}

func extendsFile(svc *yaml.Node, dir string) string {
	ext := source.Get(svc, "extends")
	if ext == nil || ext.Kind != yaml.MappingNode {
		return ""
	}
	f := source.Get(ext, "file")
	if f == nil || f.Value == "" {
		return ""
	}
	if filepath.IsAbs(f.Value) {
		return f.Value
	}
	return filepath.Join(dir, f.Value)
}

// layers returns the definitions of a service, the one whose values win first.
func (ix *Index) layers(service string) []layer {
	if out, ok := ix.layerCache[service]; ok {
		return out
	}
	var out []layer
	seen := map[string]bool{}
	for i := len(ix.top) - 1; i >= 0; i-- {
		out = append(out, ix.fileLayers(ix.top[i], ix.dir, service, 0, seen)...)
	}
	if ix.layerCache == nil {
		ix.layerCache = map[string][]layer{}
	}
	ix.layerCache[service] = out
	return out
}

// fileLayers lists the definitions of a service in a file and what it includes, each file
// and folder once: a file included again adds the same definitions, below, which change no
// lookup (and a diamond of includes would list them once per path through it).
func (ix *Index) fileLayers(file, workDir, service string, depth int, seen map[string]bool) []layer {
	key := file + "\x00" + workDir
	if depth > 32 || seen[key] {
		return nil
	}
	seen[key] = true
	var out []layer
	docs := ix.Docs[file]
	for d := len(docs) - 1; d >= 0; d-- {
		doc := docs[d]
		if key, svc := source.GetKey(source.Get(doc, "services"), service); svc != nil {
			out = append(out, layer{file: file, key: key, node: svc, shared: source.Aliased(source.Get(doc, "services"), service)})
			out = append(out, ix.extendsLayers(file, svc, service, depth)...)
		}
		for _, inc := range includes(doc, workDir) {
			for i := len(inc.files) - 1; i >= 0; i-- {
				out = append(out, ix.fileLayers(inc.files[i], inc.dir, service, depth+1, seen)...)
			}
		}
	}
	return out
}

func (ix *Index) extendsLayers(file string, svc *yaml.Node, name string, depth int) []layer {
	ext := source.Get(svc, "extends")
	if ext == nil {
		return nil
	}
	base, baseFile := ext.Value, file
	if ext.Kind == yaml.MappingNode {
		base = source.Scalar(source.Get(ext, "service"))
		if f := extendsFile(svc, filepath.Dir(file)); f != "" {
			baseFile = f
		}
	}
	if base == "" || (base == name && baseFile == file) {
		return nil
	}
	var out []layer
	docs := ix.Docs[baseFile]
	for d := len(docs) - 1; d >= 0; d-- {
		if key, b := source.GetKey(source.Get(docs[d], "services"), base); b != nil {
			out = append(out, layer{file: baseFile, key: key, node: b, base: true, shared: source.Aliased(source.Get(docs[d], "services"), base)})
			if depth < 32 {
				out = append(out, ix.extendsLayers(baseFile, b, base, depth+1)...)
			}
			break
		}
	}
	return out
}

// ServicePos is the position of the service's name in the first file that defines it.
func (ix *Index) ServicePos(service string) analyze.Pos {
	ls := ix.layers(service)
	if len(ls) == 0 {
		return ix.filePos()
	}
	// The last layer from a top-level file is the service's original definition.
	l := ls[len(ls)-1]
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].key != nil {
			l = ls[i]
			break
		}
	}
	return ix.Pos(l.file, l.key)
}

func (ix *Index) filePos() analyze.Pos {
	if len(ix.top) == 0 {
		return analyze.Pos{}
	}
	return analyze.Pos{File: ix.Display(ix.top[0])}
}

// Lookup finds the key that gives a service its value at path, in the winning file.
// It returns the key node, the value node and the key's position.
func (ix *Index) Lookup(service string, path ...string) (*yaml.Node, analyze.Pos, bool) {
	for _, l := range ix.layers(service) {
		key, val, reset := lookupPath(l.node, path)
		if reset {
			return nil, analyze.Pos{}, false
		}
		if key != nil {
			return val, ix.Pos(l.file, key), true
		}
	}
	return nil, analyze.Pos{}, false
}

// LookupItem finds the item of a service's list at key for which match is true, in the first
// file that declares such an item. Lists of mounts merge across files, so any layer may hold it.
func (ix *Index) LookupItem(service, key string, match func(*yaml.Node) bool) (*yaml.Node, analyze.Pos, bool) {
	w, ok := ix.lookupItem(service, key, match)
	if !ok {
		return nil, analyze.Pos{}, false
	}
	return w.val, ix.Pos(w.file, w.val), true
}

// lookupItem is LookupItem with the file and sequence holding the item: parent is the
// sequence (nil for a list written as one scalar) and key is the list's key.
func (ix *Index) lookupItem(service, key string, match func(*yaml.Node) bool) (written, bool) {
	for _, l := range ix.layers(service) {
		k, seq, reset := lookupPath(l.node, []string{key})
		if reset {
			return written{}, false
		}
		if seq == nil {
			continue
		}
		shared := l.shared || source.Aliased(l.node, key)
		if seq.Kind == yaml.ScalarNode && match(seq) {
			_, in := ix.InAnchor(l.file, seq)
			return written{file: l.file, key: k, val: seq, shared: shared || in}, true
		}
		if seq.Kind != yaml.SequenceNode {
			continue
		}
		for _, raw := range seq.Content {
			it := source.Deref(raw)
			if match(it) {
				_, in := ix.InAnchor(l.file, it)
				return written{file: l.file, parent: seq, key: k, val: it, shared: shared || in || raw.Kind == yaml.AliasNode}, true
			}
		}
		if seq.Tag == "!override" {
			return written{}, false // the list replaces the lower layers' lists
		}
	}
	return written{}, false
}

// PathPos locates a dotted model path such as services.web.shm_size, for compose-go errors.
func (ix *Index) PathPos(path []string) (analyze.Pos, bool) {
	if len(path) >= 2 && path[0] == "services" {
		if len(path) == 2 {
			return ix.ServicePos(path[1]), len(ix.layers(path[1])) > 0
		}
		for n := len(path); n > 2; n-- {
			if _, p, ok := ix.Lookup(path[1], path[2:n]...); ok {
				return p, true
			}
		}
		if ls := ix.layers(path[1]); len(ls) > 0 {
			return ix.ServicePos(path[1]), true
		}
		return analyze.Pos{}, false
	}
	for i := len(ix.top) - 1; i >= 0; i-- {
		for _, doc := range ix.Docs[ix.top[i]] {
			if key, _, _ := lookupPath(doc, path); key != nil {
				return ix.Pos(ix.top[i], key), true
			}
		}
	}
	return analyze.Pos{}, false
}

// nodeAt returns the value of the key, or the list item, written at pos; nil if none is.
func (ix *Index) nodeAt(pos analyze.Pos) *yaml.Node {
	if pos.Line == 0 {
		return nil
	}
	var find func(n *yaml.Node) *yaml.Node
	find = func(n *yaml.Node) *yaml.Node {
		for i, c := range n.Content {
			at := c.Line == pos.Line && c.Column == pos.Column
			switch {
			case n.Kind == yaml.MappingNode && i%2 == 0:
				if at {
					return n.Content[i+1]
				}
			case at && n.Kind == yaml.SequenceNode:
				return c
			default:
				if f := find(c); f != nil {
					return f
				}
			}
		}
		return nil
	}
	for file, docs := range ix.Docs {
		if ix.Display(file) != pos.File {
			continue
		}
		for _, d := range docs {
			if n := find(d); n != nil {
				return n
			}
		}
	}
	return nil
}

// lookupPath walks mappings along path. reset reports a !reset tag on the way, which removes
// the value and everything below it, or an !override mapping without the key.
func lookupPath(n *yaml.Node, path []string) (key, val *yaml.Node, reset bool) {
	val = n
	for _, p := range path {
		var k *yaml.Node
		parent := val
		k, val = source.GetKey(val, p)
		if k == nil {
			// A mapping tagged !override replaces what lower layers say, missing keys included.
			return nil, nil, parent != nil && parent.Tag == "!override"
		}
		if val.Tag == "!reset" {
			return nil, nil, true
		}
		key = k
	}
	return key, val, false
}

// fileKeys are the keys whose values name other files.
var fileKeys = map[string]bool{"file": true, "path": true, "include": true, "env_file": true, "extends": true, "project_directory": true}

// mentionMissing finds the key naming a file or service that an error message is about,
// such as the file of an extends that does not exist.
func (ix *Index) mentionMissing(msg string) (analyze.Pos, bool) {
	var best analyze.Pos
	bestLen := 0
	for file, docs := range ix.Docs {
		for _, d := range docs {
			source.Scalars(d, "", func(key string, v *yaml.Node) {
				if !fileKeys[key] || len(v.Value) < 2 {
					return
				}
				name := filepath.Base(v.Value)
				if strings.Contains(msg, name) && len(name) > bestLen {
					best, bestLen = ix.Pos(file, v), len(name)
				}
			})
		}
	}
	return best, bestLen > 0
}

// reference finds where service from refers to service to (ipc: service:to, depends_on,
// network_mode, volumes_from), for compose-go's dependency errors.
func (ix *Index) reference(from, to string) (analyze.Pos, bool) {
	for _, l := range ix.layers(from) {
		var found *yaml.Node
		source.Scalars(l.node, "", func(_ string, v *yaml.Node) {
			if found == nil && (v.Value == to || strings.HasSuffix(v.Value, ":"+to)) {
				found = v
			}
		})
		if found == nil {
			// depends_on in mapping form names the service as a key
			if k, _ := source.GetKey(source.Get(l.node, "depends_on"), to); k != nil {
				found = k
			}
		}
		if found != nil {
			return ix.Pos(l.file, found), true
		}
	}
	return analyze.Pos{}, false
}

// written is one place where a service key is written.
type written struct {
	file   string
	parent *yaml.Node // the mapping holding the key
	key    *yaml.Node
	val    *yaml.Node // as written: an alias is not followed
	// shared is true when the key is reached through an alias or a merge key, or lies in
	// an anchor that is aliased, so that editing it would also edit other services.
	shared bool
	// layer is the service definition it is written in; parentKey is the key whose value
	// parent is.
	layer     layer
	parentKey *yaml.Node
}

// writtenAll lists every place a service key is written, the winning one first, down to a
// layer that resets it: the order and the !reset and !override rules of Lookup. reset
// reports that such a layer was met.
func (ix *Index) writtenAll(service string, path ...string) (out []written, reset bool) {
	for _, l := range ix.layers(service) {
		cur, curKey, shared := l.node, l.key, l.shared
		for i, p := range path {
			k, raw, merged := source.FindKey(cur, p)
			if k == nil {
				if cur != nil && cur.Tag == "!override" {
					return out, true
				}
				break
			}
			v := source.Deref(raw)
			if v.Tag == "!reset" {
				return out, true
			}
			if _, in := ix.InAnchor(l.file, cur); in {
				shared = true
			}
			shared = shared || merged
			if i == len(path)-1 {
				out = append(out, written{file: l.file, parent: source.Deref(cur), key: k, val: raw, shared: shared, layer: l, parentKey: curKey})
				break
			}
			shared = shared || raw.Kind == yaml.AliasNode
			cur, curKey = v, k
		}
	}
	return out, false
}

// home is the layer where a key a service does not have yet is added: the service's own
// definition in the first file that defines it, not a service it extends, unless a later
// file replaces the whole service with !override.
func (ix *Index) home(service string) (layer, bool) {
	ls := ix.layers(service)
	for _, l := range ls {
		if l.node.Tag == "!override" {
			return l, true
		}
	}
	for i := len(ls) - 1; i >= 0; i-- {
		if !ls[i].base {
			return ls[i], true
		}
	}
	return layer{}, false
}
