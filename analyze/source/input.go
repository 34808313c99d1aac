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
// once, and a FIFO keeps what it held. A nil *sources reads without keeping.
type Sources struct {
	mu    sync.Mutex
	files map[string]sourceFile
	// Secrets is the run's register of what it must not print: the loaders put in it the
	// values they interpolate and the texts of the files they load.
	Secrets *analyze.Secrets
}

type sourceFile struct {
	b   []byte
	err error
}

func NewSources() *Sources { return &Sources{files: map[string]sourceFile{}} }

// Public registers the text of a file a project was loaded from, and its path, as no
// secret (analyze.Secrets.Public).
func (s *Sources) Public(path string, text []byte) {
	if s != nil {
		s.Secrets.Public(text)
		s.Secrets.Public([]byte(path))
	}
}

// Read returns the bytes of path, at most MaxFileSize of them. Only a regular file is read,
// or a FIFO when explicit (a PATH given as <(...)): a device or a FIFO named by a compose
// file, an include or a symlink would never end or would hang.
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
		return readBounded(abs, path, explicit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[abs]; ok {
		return f.b, f.err
	}
	b, err := readBounded(abs, path, explicit)
	s.files[abs] = sourceFile{b, err}
	return b, err
}

// readBounded opens path once and reads at most MaxFileSize+1 bytes of it. The file is
// checked by name before it is opened, so that opening a FIFO cannot block, and again
// once open, so that what is read is what was checked.
func readBounded(abs, shown string, explicit bool) ([]byte, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if err := Readable(shown, st.Mode(), explicit); err != nil {
		return nil, err
	}
	flag := os.O_RDONLY
	if !explicit {
		flag |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(abs, flag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := Readable(shown, st.Mode(), explicit); err != nil {
		return nil, err
	}
	if st.Size() > MaxFileSize {
		return nil, tooLarge(shown)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, tooLarge(shown)
	}
	return b, nil
}

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
