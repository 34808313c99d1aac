package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// pendingWrite is a write that prepareWrite checked and staged and commit does: the new
// content in a temporary file beside the file, to be renamed over it, or, where a rename
// would change what the name is (a device, a FIFO, a hard link, an owner the doctor cannot
// give a new file, the process's own descriptors), the file itself, written in place.
type pendingWrite struct {
	// dir is the folder the file is in, open since locate found it: the staged file is
	// made and renamed there, wherever its name leads by then. nil for a descriptor.
	dir  *os.Root
	name string // the file's name in dir, or the descriptor's name
	tmp  string // the staged file's name in dir, renamed over name; "" when written in place
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

// prepareWrite checks that data can be written to the file name leads to (see locate for
// the symlinks it follows) and stages it (see place.prepare). On error nothing is left
// behind.
func prepareWrite(name string, data []byte) (*pendingWrite, error) {
	if fd := ownFD(name); fd >= 0 {
		return &pendingWrite{name: filepath.Clean(name), fd: fd, data: data}, nil
	}
	p, err := locate(name)
	if err != nil {
		return nil, err
	}
	return p.prepare(data)
}

// prepare stages data for p: a new or replaced regular file goes through a temporary file
// in its folder with the original's mode, owner and group, so that a reader never sees it
// half written. A file its owner made read-only is refused, whoever runs the doctor (root
// too): renaming over it would need only the folder's permission. Anything else is written
// in place: a device such as /dev/null stays a device. It takes p's folder: on error it is
// closed and nothing is left behind.
func (p *place) prepare(data []byte) (_ *pendingWrite, err error) {
	w := &pendingWrite{dir: p.dir, name: p.name, fd: -1, data: data}
	defer func() {
		if err != nil {
			w.discard()
		}
	}()
	if p.st == nil {
		if w.tmp, err = stage(p.dir, p.name, data, nil); err != nil {
			return nil, err
		}
		return w, nil
	}
	regular := p.st.Mode().IsRegular()
	if regular && p.st.Mode().Perm()&0o222 == 0 {
		return nil, fmt.Errorf("the file is read-only (mode %04o): make it writable first", p.st.Mode().Perm())
	}
	// Opening checks the permission of whoever runs the doctor, which a rename would not.
	w.file, err = p.open(os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	w.regular = regular
	if _, _, links := fileIdentity(p.st); !regular || links > 1 {
		return w, nil // a rename would replace the device, or part the hard links
	}
	tmp, err := stage(p.dir, p.name, data, p.st)
	if errors.Is(err, errOwner) {
		return w, nil
	}
	if err != nil {
		return nil, err
	}
	w.file.Close()
	w.file, w.tmp = nil, tmp
	return w, nil
}

// errOwner is stage's error when the new file cannot be given the original's owner.
var errOwner = errors.New("cannot keep the owner")

// stage writes data to a new temporary file beside name in dir, synced, with the mode, owner
// and group of like (0644 and the doctor's own when like is nil), for the caller to rename
// over name; on error nothing is left behind. The file is made with O_EXCL, which follows
// no symlink.
func stage(dir *os.Root, name string, data []byte, like fs.FileInfo) (_ string, err error) {
	var tmp *os.File
	var tmpName string
	for range 100 {
		tmpName = "." + name + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
		tmp, err = dir.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			dir.Remove(tmpName)
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
	return tmpName, nil
}

// commit does the write: renames the staged file over the original, within the folder
// opened when the write was prepared, or writes the file in place. Either way it is done
// once commit returns.
func (w *pendingWrite) commit() error {
	defer w.discard()
	switch {
	case w.tmp != "":
		if err := w.dir.Rename(w.tmp, w.name); err != nil {
			return err
		}
		w.tmp = ""
		return nil
	case w.fd >= 0:
		if err := writeFD(w.fd, w.data); err != nil {
			return &os.PathError{Op: "write", Path: w.name, Err: err}
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

// discard drops a write that was prepared and not committed, leaving nothing behind, and
// closes what the write held open.
func (w *pendingWrite) discard() {
	if w.tmp != "" {
		w.dir.Remove(w.tmp)
		w.tmp = ""
	}
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
	if w.dir != nil {
		w.dir.Close()
		w.dir = nil
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
