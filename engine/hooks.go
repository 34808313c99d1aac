package engine

import "time"

// The tests of probe and watch share the daemon with other doctors and with each other, and
// drive Clean through a whole run: these hooks let them limit what it takes away. Nothing
// else calls them.

// ScopeClean limits what Clean removes to the probe images of one agent digest (the value of
// LabelImage) and the containers of one project, and counts a stopped probe container a
// leftover from grace on (a minute when zero), until restore is called.
func ScopeClean(digest, project string, grace time.Duration) (restore func()) {
	savedScope, savedGrace := cleanScope, cleanGrace
	cleanScope.digest, cleanScope.project = digest, project
	if grace > 0 {
		cleanGrace = grace
	}
	return func() { cleanScope, cleanGrace = savedScope, savedGrace }
}

// Digest is the hex sha256 that names the agent's image.
func (a *Agent) Digest() string { return a.digest }

// Ref is the agent's probe image: ImageRepository and the first 12 digits of its digest.
func (a *Agent) Ref() string { return a.ref() }

// Abandon closes the lock file without removing it, as a doctor killed with SIGKILL leaves
// it: free, and there.
func (l *RunLock) Abandon() error {
	f := l.f
	l.f = nil
	return f.Close()
}
