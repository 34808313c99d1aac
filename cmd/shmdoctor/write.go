package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// pendingWrite is a write that prepareWrite checked and staged and commit does: the new
// content in a temporary file beside the file, to be renamed over it, or, where a rename
// would change what the name is (a device, a FIFO, a hard link, an owner the doctor cannot
// give a new file, the process's own descriptors), the file itself, written in place.
type pendingWrite struct {
	path string // the file written: where the name's symlinks lead
	tmp  string // the staged file, renamed over path; "" when written in place
	// file is the file itself, open for writing in place; fd is one of the process's
	// own descriptors (/dev/stdout), written where it stands and never closed.
	file    *os.File
	fd      int
	regular bool // file is a regular file: truncated first, synced after
	data    []byte
}

// writeFile writes data to the file name leads to, as prepareWrite and commit do.
func writeFile(name string, data []byte) error {
	w, err := prepareWrite(name, data)
	if err != nil {
		return err
	}
	return w.commit()
}

// prepareWrite checks that data can be written to the file name leads to, following
// symlinks to their end, and stages it: a new or replaced regular file goes through a
// temporary file in its folder with the original's mode, owner and group, so that a reader
// never sees it half written. A file its owner made read-only is refused, whoever runs the
// doctor (root too): renaming over it would need only the folder's permission. Anything
// else is written in place: a device such as /dev/null stays a device. On error nothing is
// left behind.
func prepareWrite(name string, data []byte) (*pendingWrite, error) {
	path, err := resolveLinks(name)
	if err != nil {
		return nil, err
	}
	if fd := ownFD(path); fd >= 0 {
		return &pendingWrite{path: path, fd: fd, data: data}, nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		tmp, err := stage(path, data, nil)
		if err != nil {
			return nil, err
		}
		return &pendingWrite{path: path, tmp: tmp, fd: -1}, nil
	}
	if err != nil {
		return nil, err
	}
	regular := st.Mode().IsRegular()
	if regular && st.Mode().Perm()&0o222 == 0 {
		return nil, fmt.Errorf("the file is read-only (mode %04o): make it writable first", st.Mode().Perm())
	}
	// Opening checks the permission of whoever runs the doctor, which a rename would not.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	w := &pendingWrite{path: path, file: f, fd: -1, regular: regular, data: data}
	if _, _, links := fileIdentity(st); !regular || links > 1 {
		return w, nil // a rename would replace the device, or part the hard links
	}
	tmp, err := stage(path, data, st)
	if errors.Is(err, errOwner) {
		return w, nil
	}
	f.Close()
	if err != nil {
		return nil, err
	}
	return &pendingWrite{path: path, tmp: tmp, fd: -1}, nil
}

// errOwner is stage's error when the new file cannot be given the original's owner.
var errOwner = errors.New("cannot keep the owner")

// stage writes data to a temporary file beside path, synced, with the mode, owner and group
// of like (0644 and the doctor's own when like is nil), for the caller to rename over path;
// on error nothing is left behind.
func stage(path string, data []byte, like os.FileInfo) (_ string, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if like != nil {
		mode = like.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
		if uid, gid, _ := fileIdentity(like); uid >= 0 && (uid != os.Geteuid() || gid != os.Getegid()) {
			if err := tmp.Chown(uid, gid); err != nil {
				return "", fmt.Errorf("%w: %w", errOwner, err)
			}
		}
	}
	if err := tmp.Chmod(mode); err != nil { // after chown, which clears setuid and setgid
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return tmp.Name(), nil
}

// commit does the write: renames the staged file over the original, or writes the file in
// place. Either way it is done once commit returns.
func (w *pendingWrite) commit() error {
	defer w.discard()
	switch {
	case w.tmp != "":
		if err := os.Rename(w.tmp, w.path); err != nil {
			return err
		}
		w.tmp = ""
		return nil
	case w.fd >= 0:
		if err := writeFD(w.fd, w.data); err != nil {
			return &os.PathError{Op: "write", Path: w.path, Err: err}
		}
		return nil
	}
	if w.regular {
		if err := w.file.Truncate(0); err != nil {
			return err
		}
	}
	if _, err := w.file.Write(w.data); err != nil {
		return err
	}
	if w.regular {
		if err := w.file.Sync(); err != nil {
			return err
		}
	}
	err := w.file.Close()
	w.file = nil
	return err
}

// discard drops a write that was prepared and not committed, leaving nothing behind.
func (w *pendingWrite) discard() {
	if w.tmp != "" {
		os.Remove(w.tmp)
		w.tmp = ""
	}
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
}

// ownFDName matches the names of the process's own descriptors.
var ownFDName = regexp.MustCompile(`^/(?:dev/fd|proc/self/fd|proc/thread-self/fd|proc/([0-9]+)/fd)/([0-9]+)$`)

// ownFD is the descriptor of this process that name stands for (/dev/stdout, /dev/fd/3,
// /proc/self/fd/1), or -1. Such a name is written where the descriptor stands: renaming
// over it would replace /dev/stdout, or the file a shell opened for it.
func ownFD(name string) int {
	name = filepath.Clean(name)
	switch name {
	case "/dev/stdin":
		return 0
	case "/dev/stdout":
		return 1
	case "/dev/stderr":
		return 2
	}
	m := ownFDName.FindStringSubmatch(name)
	if m == nil || m[1] != "" && m[1] != strconv.Itoa(os.Getpid()) {
		return -1
	}
	fd, err := strconv.Atoi(m[2])
	if err != nil {
		return -1
	}
	return fd
}

// resolveLinks follows name's symlinks to where they end, stopping at a name of one of the
// process's own descriptors (/dev/stdout leads to /proc/self/fd/1, which leads to whatever
// the descriptor is). A name that does not exist, or a link to one, ends there.
func resolveLinks(name string) (string, error) {
	for range 40 {
		if ownFD(name) >= 0 {
			return name, nil
		}
		st, err := os.Lstat(name)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			return name, nil
		}
		to, err := os.Readlink(name)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			// not filepath.Join, which would take "dir/.." away before the kernel follows dir
			to = filepath.Dir(name) + string(filepath.Separator) + to
		}
		name = to
	}
	return "", &os.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
}
