package analyze

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Set is the files one project was read from: their bytes and YAML documents, in the order
// they were read, and the names reports give them.
type Set struct {
	docs  map[string][]*yaml.Node // the documents of each file
	src   map[string][]byte       // the bytes of each file, for fixes that edit them as text
	names map[string]string       // display names (stdin)
	read  []string                // every file, in the order it was read
	cwd   string                  // file names are shown relative to it when below it
	// input reads the files, each once and bounded.
	input *sources
}

// NewSet makes an empty set that reads its files through input.
func NewSet(input *sources) *Set {
	cwd, _ := os.Getwd()
	return &Set{input: input, docs: map[string][]*yaml.Node{}, src: map[string][]byte{}, names: map[string]string{}, cwd: cwd}
}

// Files lists every file the project was read from, as displayed, in the order they were
// read: the compose files, then the files they include or extend from.
func (ix *Set) Files() []string {
	out := make([]string, len(ix.read))
	for i, f := range ix.read {
		out[i] = ix.display(f)
	}
	return out
}

// display is a file's name as reports show it: relative to the working folder when below it.
func (ix *Set) display(path string) string {
	if n, ok := ix.names[path]; ok {
		return n
	}
	if rel, err := filepath.Rel(ix.cwd, path); err == nil && ix.cwd != "" && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func (ix *Set) pos(file string, n *yaml.Node) Pos {
	return Pos{File: ix.display(file), Line: n.Line, Column: n.Column}
}

// sorted lists the files by name, a stable order.
func (ix *Set) sorted() []string {
	out := make([]string, 0, len(ix.docs))
	for f := range ix.docs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
