package probe

import (
	"context"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/engine"
)

// reaper is the cleanup half of a run: it knows every container the run created and removes
// them on every path, Ctrl-C and timeout included, each call on a context that survives the
// caller's cancellation but ends at the run's hard deadline (the timeout, or an interrupt,
// plus engine.CleanupGrace).
type reaper struct {
	c      engine.Client
	parent context.Context // the caller's: cleanup outlives its cancellation
	runID  string

	mu       sync.Mutex
	created  map[string]bool // container id → removed
	cleanErr []error
	hard     time.Time // when cleanup must be over
}

func newReaper(c engine.Client, parent context.Context, runID string, hard time.Time) *reaper {
	return &reaper{c: c, parent: parent, runID: runID, created: map[string]bool{}, hard: hard}
}

// interrupted brings the hard deadline forward to t, when t is earlier.
func (r *reaper) interrupted(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Before(r.hard) {
		r.hard = t
	}
}

// track records a container the run created, so that it is removed.
func (r *reaper) track(id string) {
	r.mu.Lock()
	r.created[id] = false
	r.mu.Unlock()
}

// err is what could not be removed, nil when everything went.
func (r *reaper) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return engine.JoinErrors(r.cleanErr...)
}

// cleanupContext is a context for one cleanup call: it survives Ctrl-C and the run's
// timeout, but ends at the run's hard deadline (see CleanupGrace).
func (r *reaper) cleanupContext() (context.Context, context.CancelFunc) {
	r.mu.Lock()
	hard := r.hard
	r.mu.Unlock()
	deadline := time.Now().Add(engine.RemoveTimeout)
	if hard.Before(deadline) {
		deadline = hard
	}
	return context.WithDeadline(context.WithoutCancel(r.parent), deadline)
}

// remove force-removes one container with a context that survives Ctrl-C and the timeout.
func (r *reaper) remove(id string) {
	r.mu.Lock()
	if r.created[id] {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	ctx, cancel := r.cleanupContext()
	defer cancel()
	_, err := r.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && !cerrdefs.IsNotFound(err) {
		r.cleanErr = append(r.cleanErr, fmt.Errorf("container %.12s: %s", id, engine.Reason(err)))
		return
	}
	r.created[id] = true
}

// sweep removes whatever carries this run's label and is still there: containers whose
// removal failed, or that a cancelled request created behind our back.
func (r *reaper) sweep() {
	ctx, cancel := r.cleanupContext()
	defer cancel()
	f := make(client.Filters).Add("label", engine.LabelProbe+"="+r.runID)
	list, err := r.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		r.mu.Lock()
		r.cleanErr = append(r.cleanErr, fmt.Errorf("listing this run's containers: %s", engine.Reason(err)))
		r.mu.Unlock()
		return
	}
	pending := make([]string, 0, len(list.Items))
	r.mu.Lock()
	for _, s := range list.Items {
		r.created[s.ID] = false
		pending = append(pending, s.ID)
	}
	r.mu.Unlock()
	// Passes until one removes nothing more: Podman refuses to remove a donor while a
	// container that joined its IPC namespace is still there, whatever the order listed.
	for len(pending) > 0 {
		r.mu.Lock()
		r.cleanErr = nil // what is still there is retried below; what is gone is gone
		r.mu.Unlock()
		var left []string
		for _, id := range pending {
			r.remove(id)
			r.mu.Lock()
			if !r.created[id] {
				left = append(left, id)
			}
			r.mu.Unlock()
		}
		if len(left) == len(pending) {
			return
		}
		pending = left
	}
}
