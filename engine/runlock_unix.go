//go:build unix

package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// lockDir is the per-user directory of the lock files, with its instance token:
// $XDG_RUNTIME_DIR/shmdoctor, else os.TempDir()/shmdoctor-<uid>. It must be a directory of
// this user's that no one else may write, or no lock is taken.
func lockDir() (dir, token string, err error) {
	uid := os.Getuid()
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		if st, err := os.Stat(x); err == nil && st.IsDir() && ownedBy(st, uid) {
			dir = filepath.Join(x, "shmdoctor")
		}
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("shmdoctor-%d", uid))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", "", err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", "", err
	}
	if !st.IsDir() || !ownedBy(st, uid) || st.Mode().Perm()&0o022 != 0 {
		return "", "", fmt.Errorf("%s is not a directory of this user's closed to others", dir)
	}
	if token, err = readToken(dir); errors.Is(err, fs.ErrNotExist) {
		token, err = writeToken(dir)
	}
	return dir, token, err
}

func ownedBy(st fs.FileInfo, uid int) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == uid
}

// readToken reads a lock directory's instance token.
func readToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "instance"))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) != 16 {
		return "", fmt.Errorf("%s/instance holds no token", dir)
	}
	return tok, nil
}

// writeToken gives a new lock directory its token, whole or not at all: the first of
// several doctors starting together wins, and every one reads the winner's.
func writeToken(dir string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp, err := os.CreateTemp(dir, ".instance-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, "instance")); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return readToken(dir)
}

// lockPoll is how often a lock that another doctor holds is tried again.
const lockPoll = 20 * time.Millisecond

// lockFile creates path if needed and takes its exclusive lock, waiting while another doctor
// holds it, until ctx is done. The file it locks is the one at path: a lock file removed
// between its opening and its locking (its holder released it) is opened again.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				break
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, ctx.Err()
			case <-time.After(lockPoll):
			}
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		if sameFile(f, path) {
			return f, nil
		}
		f.Close()
	}
}

// sameFile reports whether f is still the file at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// probeLock tells whether the lock at path is held, without waiting.
func probeLock(path string) LockState {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return LockDead
	} else if err != nil {
		return LockUnknown
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return LockAlive
	case err != nil:
		return LockUnknown
	}
	return LockDead
}

// removeIfFree removes the lock file at path when no one holds it.
func removeIfFree(path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && sameFile(f, path) {
		_ = os.Remove(path)
	}
}
