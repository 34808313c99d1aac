package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"go.yaml.in/yaml/v3"
)

// Set is the files one project was read from: their bytes and YAML documents, in the order
// they were read, and the names reports give them.
type Set struct {
	Docs  map[string][]*yaml.Node // the documents of each file
	Src   map[string][]byte       // the bytes of each file, for fixes that edit them as text
	Names map[string]string       // display names (stdin)
	Read  []string                // every file, in the order it was read
	cwd   string                  // file names are shown relative to it when below it
	// Input reads the files, each once and bounded.
	Input *Sources
}

// NewSet makes an empty set that reads its files through input.
func NewSet(input *Sources) *Set {
	cwd, _ := os.Getwd()
	return &Set{Input: input, Docs: map[string][]*yaml.Node{}, Src: map[string][]byte{}, Names: map[string]string{}, cwd: cwd}
}

// Files lists every file the project was read from, as displayed, in the order they were
// read: the compose files, then the files they include or extend from.
func (ix *Set) Files() []string {
	out := make([]string, len(ix.Read))
	for i, f := range ix.Read {
		out[i] = ix.Display(f)
	}
	return out
}

// Display is a file's name as reports show it: relative to the working folder when below it.
func (ix *Set) Display(path string) string {
	if n, ok := ix.Names[path]; ok {
		return n
	}
	if rel, err := filepath.Rel(ix.cwd, path); err == nil && ix.cwd != "" && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func (ix *Set) Pos(file string, n *yaml.Node) analyze.Pos {
	return analyze.Pos{File: ix.Display(file), Line: n.Line, Column: n.Column}
}

// Sorted lists the files by name, a stable order.
func (ix *Set) Sorted() []string {
	out := make([]string, 0, len(ix.Docs))
	for f := range ix.Docs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
