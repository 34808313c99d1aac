package source

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Sources reads every file one Load needs once, through one bounded reader, and keeps the
// bytes: a manifest sniffed and then parsed, or a file both a PATH and an include, is read
// once, and a FIFO keeps what it held. A nil *Sources reads without keeping and without a
// root. Within gives a view confined to a project's root that shares what was read.
type Sources struct {
	*cache
	root *Root
}

type cache struct {
	mu    sync.Mutex
	files map[string]sourceFile
	// Secrets is the run's register of what it must not print: the loaders put in it the
	// values they interpolate and the texts of the files they load.
	Secrets *analyze.Secrets
}

type sourceFile struct {
	b    []byte
	err  error
	real string // where the descriptor was opened, "" when not known
	// outside marks a file left unread because it was outside the root of the view that
	// asked: a view with a wider root reads it.
	outside bool
	// pipe marks a FIFO given on the command line, read once, wherever it is.
	pipe bool
}

func NewSources() *Sources { return &Sources{cache: &cache{files: map[string]sourceFile{}}} }

// Within is a view of s whose reads are confined to root: a file that resolves outside it
// is not read, and the error is an *OutsideError. The views share what they read.
func (s *Sources) Within(root *Root) *Sources {
	return &Sources{cache: s.cache, root: root}
}

// Root is the root the view is confined to, nil when none.
func (s *Sources) Root() *Root {
	if s == nil {
		return nil
	}
	return s.root
}

// Public registers the text of a file a project was loaded from, and its path, as no
// secret (analyze.Secrets.Public).
func (s *Sources) Public(path string, text []byte) {
	if s != nil {
		s.Secrets.Public(text)
		s.Secrets.Public([]byte(path))
	}
}

// Read returns the bytes of path, at most MaxFileSize of them. Only a regular file is read,
// or a FIFO when explicit (a PATH, -f or --env-file given as <(...)): a device or a FIFO
// named by a compose file, an include or a symlink would never end or would hang. A view
// with a root reads only what resolves inside it: the name is checked before anything is
// opened, and the opened descriptor after, so that what is read is what was checked.
func (s *Sources) Read(path string, explicit bool) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// Errors name the file as reports do: relative to the working folder when below it.
	if cwd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
	}
	if s == nil {
		b, _, _, err := readBounded(abs, path, explicit, nil)
		return b, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[abs]; ok {
		inside := f.real != "" && s.root.Contains(f.real)
		switch {
		case f.pipe || s.root == nil, inside && !f.outside:
			return f.b, f.err
		case f.real != "" && !inside:
			return nil, &OutsideError{Path: path, Root: s.root}
		}
		// refused by a narrower view, or read by one without a root: read it again
	}
	b, real, pipe, err := readBounded(abs, path, explicit, s.root)
	s.files[abs] = sourceFile{b: b, err: err, real: real, outside: IsOutside(err), pipe: pipe}
	return b, err
}

// readBounded opens path once and reads at most MaxFileSize+1 bytes of it. With a root, the
// name is resolved first without looking outside it; the file is checked by name before it
// is opened, so that opening a FIFO cannot block, and again once open, so that what is read
// is what was checked: its type, and with a root the place the descriptor was opened at.
// real is that place; pipe reports a FIFO given on the command line, read wherever it is.
func readBounded(abs, shown string, explicit bool, root *Root) (b []byte, real string, pipe bool, err error) {
	if explicit {
		// <(...) given on the command line is the user's own, wherever /dev/fd is
		st, err := os.Stat(abs)
		pipe = err == nil && st.Mode()&fs.ModeNamedPipe != 0
	}
	if root != nil && !pipe {
		// nothing outside the root is looked at, not even to say it is missing
		if resolved, inside := root.Resolve(abs); !inside {
			return nil, resolved, false, &OutsideError{Path: shown, Root: root}
		}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, "", pipe, err
	}
	if err := Readable(shown, st.Mode(), explicit); err != nil {
		return nil, "", pipe, err
	}
	if betweenCheckAndOpen != nil {
		betweenCheckAndOpen(abs)
	}
	flag := os.O_RDONLY
	if !explicit {
		flag |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(abs, flag, 0)
	if err != nil {
		return nil, "", pipe, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, "", pipe, err
	}
	if err := Readable(shown, st.Mode(), explicit); err != nil {
		return nil, "", pipe, err
	}
	if root != nil && !pipe {
		if real, err = openedAt(f, st, abs, root); err != nil {
			return nil, real, pipe, err
		}
		if !root.Contains(real) {
			return nil, real, pipe, &OutsideError{Path: shown, Root: root}
		}
	}
	if st.Size() > MaxFileSize {
		return nil, real, pipe, tooLarge(shown)
	}
	b, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, real, pipe, err
	}
	if len(b) > MaxFileSize {
		return nil, real, pipe, tooLarge(shown)
	}
	return b, real, pipe, nil
}

// openedAt is where the kernel opened f: what its descriptor names where the system tells
// (Linux's /proc/self/fd), else the name resolved again, provided it is still the same file
// as the descriptor's (a link swapped between the check and the open is not).
func openedAt(f *os.File, st fs.FileInfo, abs string, root *Root) (string, error) {
	if real, ok := descriptorPath(f); ok {
		return real, nil
	}
	real, _ := root.Resolve(abs)
	again, err := os.Stat(real)
	if err != nil || !os.SameFile(st, again) {
		return real, fmt.Errorf("%s changed while it was opened", abs)
	}
	return real, nil
}

// betweenCheckAndOpen lets a test swap a file after it was checked by name and before it is
// opened, as a racing attacker would.
var betweenCheckAndOpen func(abs string)

func tooLarge(path string) error {
	return fmt.Errorf("%s is larger than %d MiB", path, MaxFileSize>>20)
}

// Readable refuses what is not a regular file, but a FIFO given explicitly.
func Readable(path string, m fs.FileMode, explicit bool) error {
	switch {
	case m.IsDir():
		return fmt.Errorf("%s is a folder, not a file", path)
	case m.IsRegular(), explicit && m&fs.ModeNamedPipe != 0:
		return nil
	}
	return fmt.Errorf("%s is not a regular file (%s)", path, FileKind(m))
}

// FileKind names a file type that is not a regular file.
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// ReadInput reads a file the doctor takes besides the stacks (a baseline) as it reads them:
// opened once, a regular file (or a FIFO given on the command line), at most MaxFileSize.
func ReadInput(path string) ([]byte, error) {
	return (*Sources)(nil).Read(path, true)
}
