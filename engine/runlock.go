package engine

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/moby/moby/api/types/container"
)

// LabelRunLock marks the probe containers and watch companions of a doctor that records its
// liveness: the value is the path of the lock file the doctor holds (flock) while it lives,
// on the machine it runs on. A container whose lock is free or gone belongs to a dead doctor
// and is removed at once; one whose lock this machine cannot see (a doctor on another host,
// another user's) falls back to the age rule.
const LabelRunLock = "io.shmdoctor.run-lock"

// LockState is what a run's lock says about it.
type LockState int

// The states of a run lock.
const (
	LockUnknown LockState = iota // not visible from here: the age rule decides
	LockAlive                    // held: the run lives
	LockDead                     // free or removed: the run is over
)

// lockName is a run's lock file: the lock directory's instance token, then the run id. The
// token tells a lock directory from another one at the same path (another host, another
// container's /tmp), so that a lock file that is absent means a run that ended rather than
// one this machine cannot see.
var lockName = regexp.MustCompile(`^([0-9a-f]{16})-([0-9a-f]+)\.lock$`)

// RunLock is the liveness record of one run or watch; nil when the machine gives none.
type RunLock struct {
	path string
	f    *os.File
}

// Path is the lock file's path, the value of LabelRunLock on the run's containers; "" for a
// nil lock.
func (l *RunLock) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// LabelConfig adds the lock's label to a container's labels.
func (l *RunLock) LabelConfig(cfg *container.Config) {
	if l == nil || cfg == nil {
		return
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[LabelRunLock] = l.path
}

// Release removes the lock file, then lets the lock go: the run is over.
func (l *RunLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = os.Remove(l.path)
	_ = l.f.Close()
	l.f = nil
}

// NewRunLock takes the lock of a new run; nil when the machine has no usable lock directory,
// and then the run's containers are judged by their age alone.
func NewRunLock(ctx context.Context, runID string) *RunLock {
	dir, token, err := lockDir()
	if err != nil {
		return nil
	}
	f, err := lockFile(ctx, filepath.Join(dir, token+"-"+runID+".lock"))
	if err != nil {
		return nil
	}
	return &RunLock{path: f.Name(), f: f}
}

// StateOf reads the lock a container's LabelRunLock names.
func StateOf(label string) LockState {
	if label == "" || !filepath.IsAbs(label) {
		return LockUnknown
	}
	m := lockName.FindStringSubmatch(filepath.Base(label))
	if m == nil {
		return LockUnknown
	}
	if tok, err := readToken(filepath.Dir(label)); err != nil || tok != m[1] {
		return LockUnknown
	}
	return probeLock(label)
}

// isLeftover reports whether another run's container is a leftover: at once when its run's
// lock says the run is over, never while it lives, and by its age (older than stale) when
// the lock is not visible from here.
func isLeftover(s container.Summary, age, stale time.Duration) bool {
	switch StateOf(s.Labels[LabelRunLock]) {
	case LockDead:
		return true
	case LockAlive:
		return false
	}
	return age > stale
}

// liveRuns reports whether a doctor on this machine holds a run lock in the lock directory:
// Clean then keeps the probe images, which it may be about to use.
func liveRuns() bool {
	dir, _, err := lockDir()
	if err != nil {
		return false
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, p := range names {
		if lockName.MatchString(filepath.Base(p)) && probeLock(p) == LockAlive {
			return true
		}
	}
	return false
}

// removeDeadLocks removes the lock files of runs that died without removing theirs
// (SIGKILL): they are free, and their containers are judged dead all the same once the file
// is gone.
func removeDeadLocks() {
	dir, _, err := lockDir()
	if err != nil {
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, p := range names {
		if lockName.MatchString(filepath.Base(p)) {
			removeIfFree(p)
		}
	}
}
