package engine

// Hooks the tests of probe and watch use to reach into a run they drive: the agent's image
// and a lock left as a killed doctor leaves it. Nothing else calls them.

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
