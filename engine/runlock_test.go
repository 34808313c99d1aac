//go:build linux

package engine

import (
	"context"
	"path/filepath"
	"testing"
)

// TestLockState: a lock file is read as held, free or gone only in the lock directory it was
// made in; at the same path in another directory (another host's, another container's /tmp,
// told apart by the directory's instance token) or under a name the doctor does not make, it
// says nothing and the age rule decides.
func TestLockState(t *testing.T) {
	l := NewRunLock(context.Background(), "0123ab")
	if l == nil {
		t.Fatal("no run lock could be taken")
	}
	defer l.Release()
	dir := filepath.Dir(l.Path())
	tok, err := readToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := "fedcba9876543210"
	if tok == other {
		other = "0123456789abcdef"
	}
	for label, want := range map[string]LockState{
		l.Path():                               LockAlive,
		filepath.Join(dir, tok+"-0456.lock"):   LockDead,    // this directory's, gone
		filepath.Join(dir, other+"-0456.lock"): LockUnknown, // another directory at this path
		filepath.Join(dir, "instance"):         LockUnknown,
		"0123456789abcdef-0456.lock":           LockUnknown, // not a path
		"":                                     LockUnknown,
	} {
		if got := StateOf(label); got != want {
			t.Errorf("StateOf(%q) = %v, want %v", label, got, want)
		}
	}
}
