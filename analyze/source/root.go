package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Root is where one project's reads are confined. A pull request controls every file of the
// checkout, links included: an include, an extends file:, an env_file or a .env that
// resolves outside the checkout would hand the runner's files (and their content, in error
// messages) to whoever opened it. The root is the top of the git repository that holds the
// project, else the folder given, and the folders a user adds on purpose (--allow-outside).
type Root struct {
	dirs []string // absolute, cleaned, symlinks resolved
	// named are the same folders as the user names them, links kept (a checkout reached
	// through the user's own alias -> real): the way to them is the user's to walk.
	named []string
}

// NewRoot confines reads to the git repository holding dir (a .git folder or file found
// walking up from it; no git binary is needed), else to dir itself, and to every folder
// of allow. A folder that does not exist is taken as written.
func NewRoot(dir string, allow ...string) *Root {
	r := &Root{}
	if dir != "" {
		d := realDir(dir)
		if top := GitTop(d); top != "" {
			d = top
		}
		r.dirs = append(r.dirs, d)
		if abs, err := filepath.Abs(dir); err == nil && abs != d {
			if top := GitTop(abs); top != "" {
				abs = top
			}
			r.named = append(r.named, abs)
		}
	}
	for _, a := range allow {
		r.dirs = append(r.dirs, realDir(a))
	}
	return r
}

// Union is a root holding the folders of every root given.
func Union(roots ...*Root) *Root {
	u := &Root{}
	for _, r := range roots {
		if r == nil {
			continue
		}
		for _, d := range r.dirs {
			if !slices.Contains(u.dirs, d) {
				u.dirs = append(u.dirs, d)
			}
		}
		for _, d := range r.named {
			if !slices.Contains(u.named, d) {
				u.named = append(u.named, d)
			}
		}
	}
	return u
}

// realDir is dir made absolute with its links resolved, as far as it exists.
func realDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// GitTop is the top of the git repository holding dir: the nearest folder, dir or above,
// with a .git folder or file (a worktree or a submodule has a file). "" when there is none.
func GitTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// Dirs are the folders of the root, for messages.
func (r *Root) Dirs() []string { return r.dirs }

// String names the root's folders as a message does.
func (r *Root) String() string { return strings.Join(r.dirs, ", ") }

// Contains reports whether real (absolute, its links resolved) is inside the root.
func (r *Root) Contains(real string) bool {
	if r == nil {
		return true
	}
	for _, d := range r.dirs {
		if within(real, d) {
			return true
		}
	}
	return false
}

// onTheWay reports a folder that is inside the root or above one of its folders: the only
// places a resolution may look at.
func (r *Root) onTheWay(p string) bool {
	for _, d := range append(slices.Clone(r.dirs), r.named...) {
		if within(p, d) || within(d, p) {
			return true
		}
	}
	return false
}

func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// maxLinks is how many links a resolution follows, as Linux's own limit.
const maxLinks = 40

// Resolve follows path by name, one component at a time, the way the kernel would open it,
// and reports where it lands and whether that is inside the root. It looks at nothing
// outside the root: once a component leaves it the answer is known, and the rest is not
// probed (a missing file outside must not be told apart from a present one). A part that
// does not exist is taken as written. The open that follows checks the descriptor it gets
// (see Sources.Read): this is the check by name for what the doctor does not open itself.
func (r *Root) Resolve(path string) (real string, inside bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path, false
	}
	if r == nil {
		return abs, true
	}
	vol := filepath.VolumeName(abs)
	cur := vol + string(filepath.Separator)
	rest := splitPath(abs[len(vol):])
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no links left in it: .. is lexical
			continue
		}
		next := filepath.Join(cur, c)
		if !r.onTheWay(next) {
			return filepath.Join(append([]string{next}, rest...)...), false
		}
		fi, err := os.Lstat(next)
		if err != nil {
			end := filepath.Join(append([]string{next}, rest...)...)
			return end, r.Contains(end)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return next, false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return next, false
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			cur = v + string(filepath.Separator)
			target = target[len(v):]
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, r.Contains(cur)
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(c rune) bool { return c == filepath.Separator || c == '/' })
}

// OutsideError is a read refused because the file resolves outside the project root.
type OutsideError struct {
	Path string // as the caller named it
	Root *Root
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("%s resolves outside the project root (%s): not read", e.Path, e.Root)
}

// IsOutside reports a read refused because the file is outside the project root.
func IsOutside(err error) bool {
	var oe *OutsideError
	return errors.As(err, &oe)
}
