package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"go.yaml.in/yaml/v3"
)

// Patch is a set of fixes applied to the files of a project.
type Patch struct {
	Files   []FileChange // sorted by name
	Applied []*analyze.Fix
	// Skipped are the fixes whose edits overlap those of an applied fix. They are left for
	// another run, which finds them anew in the patched files.
	Skipped []*analyze.Fix
}

// FileChange is one file before and after a patch.
type FileChange struct {
	Path          string // absolute, or "-" for standard input
	Name          string // as reports name it: relative to the working folder when below it
	Before, After []byte
}

// ApplyFixes applies fixes to the files of the project they were made for, in order. A fix
// is applied whole or not at all: one whose edits overlap an applied fix's is skipped, and
// an edit made by several fixes is made once. The patched files are checked to parse as
// YAML, so that a fix never leaves a broken file.
func Apply(p *analyze.Project, fixes []*analyze.Fix) (*Patch, error) {
	if p.Doc == nil {
		return nil, fmt.Errorf("project %s was not loaded", p.Name)
	}
	pt := &Patch{}
	accepted := map[string][]analyze.Edit{}
	for _, f := range fixes {
		if f == nil || len(f.Edits) == 0 {
			continue
		}
		var add []analyze.Edit
		ok := true
	edits:
		for _, e := range f.Edits {
			src, known := p.Doc.Content(e.Path)
			if !known || e.Start < 0 || e.Start > e.End || e.End > len(src) || string(src[e.Start:e.End]) != e.Old {
				return nil, fmt.Errorf("fix %q does not match %s as it was loaded", f.Description, p.Doc.Display(e.Path))
			}
			for _, a := range append(accepted[e.Path], add...) {
				switch {
				case a.Path != e.Path:
				case a.Start == e.Start && a.End == e.End && a.New == e.New:
					continue edits // the same edit, made for another finding
				case overlap(a, e):
					ok = false
					break edits
				}
			}
			add = append(add, e)
		}
		if !ok {
			pt.Skipped = append(pt.Skipped, f)
			continue
		}
		for _, e := range add {
			accepted[e.Path] = append(accepted[e.Path], e)
		}
		pt.Applied = append(pt.Applied, f)
	}
	for path, es := range accepted {
		before, _ := p.Doc.Content(path)
		after := applyEdits(before, es)
		if err := parses(after); err != nil {
			return nil, fmt.Errorf("fixing %s would leave invalid YAML (%v): this is a bug, the file is left as it is", p.Doc.Display(path), err)
		}
		name := p.Doc.Display(path)
		if path == "-" {
			name = "-"
		}
		pt.Files = append(pt.Files, FileChange{Path: path, Name: name, Before: before, After: after})
	}
	sort.Slice(pt.Files, func(i, j int) bool { return pt.Files[i].Name < pt.Files[j].Name })
	return pt, nil
}

// overlap reports edits that cannot both be made: ranges that intersect, an insertion
// inside a replaced range, or two insertions of the same key at one place.
func overlap(a, b analyze.Edit) bool {
	switch {
	case a.Start == a.End && b.Start == b.End:
		return a.Start == b.Start && (a.Slot == "" || a.Slot == b.Slot)
	case a.Start == a.End:
		return b.Start < a.Start && a.Start < b.End
	case b.Start == b.End:
		return a.Start < b.Start && b.Start < a.End
	}
	return a.Start < b.End && b.Start < a.End
}

// applyEdits makes non-overlapping edits; insertions at an offset go before a replacement
// that starts there, in the order they were accepted.
func applyEdits(src []byte, es []analyze.Edit) []byte {
	es = append([]analyze.Edit(nil), es...)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Start != es[j].Start {
			return es[i].Start < es[j].Start
		}
		return es[i].Start == es[i].End && es[j].Start != es[j].End
	})
	var out bytes.Buffer
	at := 0
	for _, e := range es {
		out.Write(src[at:e.Start])
		out.WriteString(e.New)
		at = e.End
	}
	out.Write(src[at:])
	return out.Bytes()
}

func parses(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Diff renders the patch as a unified diff that patch -p1 and git apply take: a/ and b/
// prefixes, names relative to the working folder. Standard input is named -.
func (pt *Patch) Diff() string {
	var b strings.Builder
	for _, c := range pt.Files {
		b.WriteString(c.Diff())
	}
	return b.String()
}

// Diff renders the change of one file as Patch.Diff does.
func (c FileChange) Diff() string {
	from, to := "a/"+c.Name, "b/"+c.Name
	if c.Name == "-" || filepath.IsAbs(c.Name) {
		from, to = c.Name, c.Name
	}
	return UnifiedDiff(from, to, c.Before, c.After)
}
