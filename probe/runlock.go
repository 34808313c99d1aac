package probe

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

// lockState is what a run's lock says about it.
type lockState int

const (
	lockUnknown lockState = iota // not visible from here: the age rule decides
	lockAlive                    // held: the run lives
	lockDead                     // free or removed: the run is over
)

// lockName is a run's lock file: the lock directory's instance token, then the run id. The
// token tells a lock directory from another one at the same path (another host, another
// container's /tmp), so that a lock file that is absent means a run that ended rather than
// one this machine cannot see.
var lockName = regexp.MustCompile(`^([0-9a-f]{16})-([0-9a-f]+)\.lock$`)

// runLock is the liveness record of one run or watch; nil when the machine gives none.
type runLock struct {
	path string
	f    *os.File
}

// labelConfig adds the lock's label to a container's labels.
func (l *runLock) labelConfig(cfg *container.Config) {
	if l == nil || cfg == nil {
		return
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[LabelRunLock] = l.path
}

// release removes the lock file, then lets the lock go: the run is over.
func (l *runLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = os.Remove(l.path)
	_ = l.f.Close()
	l.f = nil
}

// newRunLock takes the lock of a new run; nil when the machine has no usable lock directory,
// and then the run's containers are judged by their age alone.
func newRunLock(ctx context.Context, runID string) *runLock {
	dir, token, err := lockDir()
	if err != nil {
		return nil
	}
	f, err := lockFile(ctx, filepath.Join(dir, token+"-"+runID+".lock"))
	if err != nil {
		return nil
	}
	return &runLock{path: f.Name(), f: f}
}

// stateOf reads the lock a container's LabelRunLock names.
func stateOf(label string) lockState {
	if label == "" || !filepath.IsAbs(label) {
		return lockUnknown
	}
	m := lockName.FindStringSubmatch(filepath.Base(label))
	if m == nil {
		return lockUnknown
	}
	if tok, err := readToken(filepath.Dir(label)); err != nil || tok != m[1] {
		return lockUnknown
	}
	return probeLock(label)
}

// isLeftover reports whether another run's container is a leftover: at once when its run's
// lock says the run is over, never while it lives, and by its age (older than stale) when
// the lock is not visible from here.
func isLeftover(s container.Summary, age, stale time.Duration) bool {
	switch stateOf(s.Labels[LabelRunLock]) {
	case lockDead:
		return true
	case lockAlive:
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
		if lockName.MatchString(filepath.Base(p)) && probeLock(p) == lockAlive {
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
