package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// place is where an output is written: the folder holding it, open, and its name there.
type place struct {
	dir   *os.Root
	given string      // the name as given, for errors
	name  string      // one path element, not a symlink when locate looked
	st    fs.FileInfo // what name was when locate looked; nil when there was nothing
}

// maxLinks is how many symlinks locate follows for one name, as Linux does.
const maxLinks = 40

// locate finds the place name leads to, for writing. A pull request can plant a symlink
// where the doctor writes (shmdoctor.sarif, .shmdoctor-baseline.json, a compose file), and
// the write must not go where the link leads: symlinks are followed only within the
// project root (the git repository holding the working folder, else the working folder:
// see sourceRoot) and only to places within it, never to a target that does not exist
// (which the write would create), and never elsewhere: there a name is written only when
// no symlink stands below the root's own folders (those above it are the user's). The walk
// opens each folder in turn from the one before it (os.Root: openat with O_NOFOLLOW) and
// checks the opened folder is the one it looked at, so a folder swapped for a link
// meanwhile is refused, and the write then happens in the folder opened, whatever its name
// leads to by then.
func locate(name string) (*place, error) {
	root, err := sourceRoot("", false)
	if err != nil {
		return nil, err
	}
	rootSt, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("finding the project root: %w", err)
	}
	abs := name
	if !filepath.IsAbs(name) {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding the working folder: %w", err)
		}
		abs = cwd + string(filepath.Separator) + name // not Join, which would take "link/.." away
	}
	w := &walk{given: name, root: root, rootSt: rootSt, in: -1}
	defer w.close()
	// The walk starts at the root, or the nearest folder above it that holds the name: the
	// root and the folders above it are the user's, opened as named.
	start := root
	rest, ok := beneath(abs, start)
	for !ok && filepath.Dir(start) != start {
		start = filepath.Dir(start)
		rest, ok = beneath(abs, start)
	}
	if !ok { // another volume
		start = filepath.VolumeName(abs) + string(filepath.Separator)
		rest = abs[len(start):]
	}
	if start == root {
		w.in = 0
	}
	bottom, err := os.OpenRoot(start)
	if err != nil {
		return nil, err
	}
	w.dirs = []*os.Root{bottom}
	return w.to(elements(rest))
}

// walk is locate's state: the folders opened from the bottom (the project root or a folder
// above it) up to the current one.
type walk struct {
	given  string // the name as given, for errors
	root   string
	rootSt fs.FileInfo
	dirs   []*os.Root
	in     int  // the index in dirs of the project root; -1 while the walk is not beneath it
	linked bool // a symlink was followed: the rest of the walk stays beneath the root
	// final is that the name as given ends in a symlink, which was followed.
	final bool
	links int
}

// to walks the path elements todo, the last one being the file, and returns its place.
func (w *walk) to(todo []string) (*place, error) {
	for len(todo) > 0 {
		e, last := todo[0], len(todo) == 1
		todo = todo[1:]
		if last && (e == "." || e == "..") {
			return nil, w.fail(syscall.EISDIR)
		}
		switch e {
		case ".":
			continue
		case "..":
			if err := w.up(); err != nil {
				return nil, err
			}
			continue
		}
		cur := w.dirs[len(w.dirs)-1]
		st, err := cur.Lstat(e)
		switch {
		case last && errors.Is(err, fs.ErrNotExist) && w.final:
			return nil, fmt.Errorf("%s is a symlink to a file that does not exist: the doctor does not create a link's target", w.given)
		case last && errors.Is(err, fs.ErrNotExist):
			return w.found(e, nil), nil
		case err != nil:
			return nil, w.fail(err)
		case st.Mode()&fs.ModeSymlink != 0:
			more, err := w.follow(cur, e, last)
			if err != nil {
				return nil, err
			}
			todo = append(more, todo...)
		case last && st.IsDir():
			return nil, w.fail(syscall.EISDIR)
		case last:
			return w.found(e, st), nil
		case !st.IsDir():
			return nil, w.fail(syscall.ENOTDIR)
		default:
			if err := w.down(cur, e, st); err != nil {
				return nil, err
			}
		}
	}
	return nil, w.fail(syscall.EISDIR) // the name ends in a folder ("/", "dir/.")
}

// follow reads the symlink e in cur and returns the path elements it stands for, refusing
// a link outside the root and one that leads out of it.
func (w *walk) follow(cur *os.Root, e string, last bool) ([]string, error) {
	w.final = w.final || last
	if w.in < 0 {
		if last {
			return nil, fmt.Errorf("%s is a symlink outside the project root %s: the doctor follows no link there", w.given, w.root)
		}
		return nil, fmt.Errorf("a symlink on the way to %s stands outside the project root %s: the doctor follows no link there", w.given, w.root)
	}
	if w.links++; w.links > maxLinks {
		return nil, w.fail(syscall.ELOOP)
	}
	to, err := cur.Readlink(e)
	if err != nil {
		return nil, w.fail(err)
	}
	w.linked = true
	if !filepath.IsAbs(to) {
		return elements(to), nil
	}
	rest, ok := beneath(to, w.root)
	if !ok {
		return nil, w.outside()
	}
	for len(w.dirs) > w.in+1 {
		w.pop()
	}
	return elements(rest), nil
}

// down opens the folder e of cur, which Lstat saw as st, and makes it the current folder.
func (w *walk) down(cur *os.Root, e string, st fs.FileInfo) error {
	sub, err := cur.OpenRoot(e)
	if err != nil {
		return w.fail(err)
	}
	if now, err := sub.Stat("."); err != nil || !os.SameFile(now, st) {
		sub.Close()
		return fmt.Errorf("a folder on the way to %s was replaced while it was being opened: nothing was written", w.given)
	}
	w.dirs = append(w.dirs, sub)
	if w.in < 0 && os.SameFile(st, w.rootSt) {
		w.in = len(w.dirs) - 1
	}
	return nil
}

// up goes to the parent of the current folder. Below the bottom folder, which is the
// project root or one of its parents, it opens that folder's parent by name.
func (w *walk) up() error {
	if w.linked && len(w.dirs)-1 == w.in {
		return w.outside()
	}
	if len(w.dirs) > 1 {
		w.pop()
		return nil
	}
	name := w.dirs[0].Name()
	parent := filepath.Dir(name)
	if parent == name {
		return nil // the file system's root is its own parent
	}
	r, err := os.OpenRoot(parent)
	if err != nil {
		return w.fail(err)
	}
	w.dirs[0].Close()
	w.dirs[0], w.in = r, -1
	return nil
}

func (w *walk) pop() {
	n := len(w.dirs) - 1
	w.dirs[n].Close()
	w.dirs = w.dirs[:n]
	if w.in == n {
		w.in = -1
	}
}

// found is the place of e in the current folder, which it takes from the walk.
func (w *walk) found(e string, st fs.FileInfo) *place {
	n := len(w.dirs) - 1
	p := &place{dir: w.dirs[n], given: w.given, name: e, st: st}
	w.dirs = w.dirs[:n]
	return p
}

func (w *walk) close() {
	for _, d := range w.dirs {
		d.Close()
	}
	w.dirs = nil
}

// outside refuses a symlink that leads out of the project root.
func (w *walk) outside() error {
	if w.final {
		return fmt.Errorf("%s is a symlink that leads outside the project root %s: the doctor writes no output through it", w.given, w.root)
	}
	return fmt.Errorf("a symlink on the way to %s leads outside the project root %s: the doctor writes no output through it", w.given, w.root)
}

// fail is an error of the system, naming the path as given.
func (w *walk) fail(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: "open", Path: w.given, Err: err}
}

// beneath is path relative to dir when path is dir or beneath it, by name.
func beneath(path, dir string) (string, bool) {
	if path == dir {
		return ".", true
	}
	if !os.IsPathSeparator(dir[len(dir)-1]) {
		dir += string(filepath.Separator)
	}
	rest, ok := strings.CutPrefix(path, dir)
	return rest, ok
}

// elements splits a path into its names; one that ends in a separator ends in ".".
func elements(path string) []string {
	names := strings.FieldsFunc(path, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
	if path != "" && os.IsPathSeparator(path[len(path)-1]) {
		names = append(names, ".")
	}
	return names
}

// open opens the file at p, refusing it when it is no longer the file locate found.
func (p *place) open(flag int) (*os.File, error) {
	f, err := p.dir.OpenFile(p.name, flag, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, p.st) {
		f.Close()
		return nil, fmt.Errorf("%s was replaced while it was being opened: nothing was written", p.given)
	}
	return f, nil
}

// holds reports whether the file at p holds want, reading no more than that.
func (p *place) holds(want []byte) (bool, error) {
	if p.st == nil {
		return false, fs.ErrNotExist
	}
	f, err := p.open(os.O_RDONLY)
	if err != nil {
		return false, err
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
	return bytes.Equal(got, want), err
}
