package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds what the doctor reads as a compose file; real stacks are kilobytes.
const MaxFileSize = 8 << 20

// ReadSource reads a compose file the doctor is willing to parse: a regular file, bounded,
// and text.
func ReadSource(s *Sources, path string) ([]byte, error) {
	b, err := s.Read(path, false)
	if err != nil {
		return nil, err
	}
	return b, CheckText(b)
}

func CheckText(b []byte) error {
	if len(b) > MaxFileSize {
		return fmt.Errorf("input is more than the %d MiB a compose file may have", MaxFileSize>>20)
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return fmt.Errorf("binary content, not a YAML file")
	}
	return nil
}

// GetKey returns a mapping's key and value nodes for name, looking through merge keys
// (<<: *anchor) after the mapping's own keys, as YAML does.
func GetKey(m *yaml.Node, name string) (*yaml.Node, *yaml.Node) {
	m = Deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	i, merges := mappingKeys(m, name)
	if i >= 0 {
		return m.Content[i], Deref(m.Content[i+1])
	}
	for _, src := range merges {
		src = Deref(src)
		if src.Kind == yaml.SequenceNode {
			for _, s := range src.Content {
				if k, v := GetKey(s, name); k != nil {
					return k, v
				}
			}
			continue
		}
		if k, v := GetKey(src, name); k != nil {
			return k, v
		}
	}
	return nil, nil
}

func Get(m *yaml.Node, name string) *yaml.Node {
	_, v := GetKey(m, name)
	return v
}

func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func Scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// Scalars calls fn for every scalar under n with the name of the key it is the value of, or
// the key of the list holding it. Aliases are not followed: an anchor is visited where it is
// defined, so an alias bomb costs nothing here.
func Scalars(n *yaml.Node, key string, fn func(key string, v *yaml.Node)) {
	switch n.Kind {
	case yaml.ScalarNode:
		fn(key, n)
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			Scalars(c, key, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			Scalars(n.Content[i+1], n.Content[i].Value, fn)
		}
	}
}

// maxExpandedNodes bounds a document's size once its aliases are expanded, which is what
// compose-go's decoder does; real stacks stay in the thousands. A large document without
// aliases may have more nodes than that as written: expansion is bounded to four times the
// nodes written, or maxExpandedNodes, whichever is more.
const maxExpandedNodes = 1_000_000

// ExpansionLimit is the bound on n's size with aliases expanded.
func ExpansionLimit(n *yaml.Node) int64 {
	return max(maxExpandedNodes, 4*writtenNodes(n))
}

// writtenNodes counts the nodes of n as written, aliases not followed.
func writtenNodes(n *yaml.Node) int64 {
	size := int64(1)
	for _, c := range n.Content {
		size += writtenNodes(c)
	}
	return size
}

// ExpandedSize counts the nodes of n with aliases expanded, memoised per node so that an
// alias bomb is measured in linear time; it stops counting past limit.
func ExpandedSize(n *yaml.Node, memo map[*yaml.Node]int64, limit int64) int64 {
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = limit + 1 // an alias cycle counts as too big
	size := int64(1)
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		size = ExpandedSize(n.Alias, memo, limit)
	}
	for _, c := range n.Content {
		if size += ExpandedSize(c, memo, limit); size > limit {
			break
		}
	}
	memo[n] = size
	return size
}

// FirstAlias is where an alias bomb is reported: the first alias written in n, in document
// order (n itself when it has none).
func FirstAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, c := range n.Content {
		if a := FirstAlias(c); a.Kind == yaml.AliasNode {
			return a
		}
	}
	return n
}

// YAMLError turns a YAML parser error into one located at the offending token. yaml.v3
// reports the line where the enclosing construct starts (its context mark), not where the
// problem is: the token is found again by parsing growing prefixes from that line on, the
// first prefix that fails with the same problem ending at it. An unclosed flow collection is
// located at its unclosed bracket.
func YAMLError(file string, content []byte, err error) error {
	line, msg := splitYAMLError(err)
	if line > 0 && parserError(msg) {
		line++ // yaml.v3 reports parser errors with a 0-based line
	}
	pos := analyze.Pos{File: file, Line: line}
	if off := problemOffset(content, line, msg); off >= 0 {
		pos.Line, pos.Column = lineCol(content, off)
	} else if last := bytes.Count(bytes.TrimRight(content, "\n"), []byte("\n")) + 1; line > last {
		pos.Line = last // the problem was found at the end of the file: point at its last line
	}
	return &analyze.LoadError{Pos: pos, Msg: "invalid YAML: " + msg}
}

// parserError tells yaml.v3's parser errors from its scanner errors by their messages.
func parserError(msg string) bool {
	for _, p := range []string{"did not find expected <document start>", "did not find expected node content",
		"did not find expected key", "did not find expected '-' indicator", "did not find expected ',' or"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// splitYAMLError splits "yaml: line 3: problem" into 3 and "problem".
func splitYAMLError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	return line, msg
}

// maxProblemFile bounds the search for a syntax error's token, which parses a few dozen
// prefixes of the file.
const maxProblemFile = 1 << 20

// problemOffset finds the byte offset of the token a syntax error is about, -1 if not found.
// Once a prefix holds the offending token, it fails as the whole file does: the first line,
// from the context line on, whose end makes the prefix fail, then the first byte of that line
// that does, are found by bisection.
func problemOffset(content []byte, line int, msg string) int {
	if last := bytes.Count(bytes.TrimRight(content, "\n"), []byte("\n")) + 1; line > last {
		line = last // found at the end of the file
	}
	start := lineStart(content, max(line, 1))
	if start < 0 || len(content) > maxProblemFile {
		return -1
	}
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(content[:n]))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				_, m := splitYAMLError(err)
				return !errors.Is(err, io.EOF) && m == msg
			}
		}
	}
	var ends []int // where each line from the context line on ends, its newline included
	for off := start; off < len(content); {
		i := bytes.IndexByte(content[off:], '\n')
		if i < 0 {
			i = len(content) - off - 1
		}
		off += i + 1
		ends = append(ends, off)
	}
	l := sort.Search(len(ends), func(i int) bool { return fails(ends[i]) })
	if l == len(ends) {
		return -1
	}
	if strings.Contains(msg, "',' or") {
		return unclosedBracket(content[:ends[l]])
	}
	from := start
	if l > 0 {
		from = ends[l-1]
	}
	return from + sort.Search(ends[l]-from, func(j int) bool { return fails(from + j + 1) })
}

// unclosedBracket returns the offset of the last flow bracket in b that is not closed.
func unclosedBracket(b []byte) int {
	depth := 0
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ']', '}':
			depth++
		case '[', '{':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return len(b) - 1
}

// lineStart is the offset where a 1-based line starts, -1 past the end.
func lineStart(content []byte, line int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(content[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off
}

// lineCol is the 1-based line and column of a byte offset; columns count characters.
func lineCol(content []byte, off int) (int, int) {
	before := content[:off]
	nl := bytes.LastIndexByte(before, '\n')
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[nl+1:]) + 1
}

// DuplicateKey finds a key written twice in one mapping, which docker compose refuses
// (yaml.v3's decoder does, into a map) but a yaml.Node accepts: the error is at the second key.
// Each mapping's keys are checked through a set, in linear time: a mapping of 100,000 keys
// compared pairwise would cost billions of comparisons.
func DuplicateKey(n *yaml.Node) (dup, first *yaml.Node) {
	type key struct {
		kind  yaml.Kind
		value string
	}
	if n.Kind == yaml.MappingNode {
		KeysScanned.Add(int64(len(n.Content) / 2))
		seen := make(map[key]*yaml.Node, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if f, ok := seen[key{k.Kind, k.Value}]; ok {
				return k, f
			}
			seen[key{k.Kind, k.Value}] = k
		}
	}
	for _, c := range n.Content {
		if dup, first := DuplicateKey(c); dup != nil {
			return dup, first
		}
	}
	return nil, nil
}

// FindKey is getKey without following the value's alias: it returns the value as written,
// and whether the key was found through a merge key rather than in the mapping itself.
func FindKey(m *yaml.Node, name string) (key, val *yaml.Node, merged bool) {
	m = Deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil, false
	}
	if i, _ := mappingKeys(m, name); i >= 0 {
		return m.Content[i], m.Content[i+1], false
	}
	if k, v := GetKey(m, name); k != nil {
		return k, v, true
	}
	return nil, nil, false
}

// Aliased reports whether a mapping's direct key name has an alias as its value, or is
// reached through a merge key: its node is then shared with whatever else uses the anchor.
func Aliased(m *yaml.Node, name string) bool {
	k, v, merged := FindKey(m, name)
	return k != nil && (merged || v.Kind == yaml.AliasNode)
}

func AsLoadError(err error, file string) *analyze.LoadError {
	var le *analyze.LoadError
	if errors.As(err, &le) {
		return le
	}
	return &analyze.LoadError{Pos: analyze.Pos{File: file}, Msg: CleanPathErr(err)}
}

func CleanPathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, fs.ErrNotExist) {
			return "no such file or folder"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// Scalars0 lists the scalars of a sequence (or the one scalar).
func Scalars0(n *yaml.Node) []string {
	n = Deref(n)
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		if c = Deref(c); c.Kind == yaml.ScalarNode {
			out = append(out, c.Value)
		}
	}
	return out
}
