package engine

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// CleanScope limits what Clean removes. The zero value is what `shmdoctor probe --clean`
// removes: every probe image and every leftover. Tests share the daemon with other doctors,
// other packages' tests among them, and scope Clean to what they made, so as not to take away
// an image or a container one of those is about to use.
type CleanScope struct {
	Digest  string        // only the probe images of this agent digest (the value of LabelImage)
	Project string        // only the containers of this compose project
	Grace   time.Duration // how old a stopped probe container must be to be a leftover (a minute when zero)
}

// has reports whether Clean may remove the container s.
func (sc CleanScope) has(s container.Summary) bool {
	return sc.Project == "" || s.Labels[LabelProject] == sc.Project
}

// grace is how old a stopped probe container must be for Clean to take it for a leftover:
// a live run's containers are stopped only for the moment between exit and removal.
func (sc CleanScope) grace() time.Duration {
	if sc.Grace > 0 {
		return sc.Grace
	}
	return time.Minute
}

// Clean removes the probe images and any leftover probe containers and watch companions
// (`shmdoctor probe --clean`). Containers of a doctor probing right now are left alone, and so
// are the images they use: a container whose run lock is held; where the lock is not visible
// from here, a running probe container younger than StaleAge, or a stopped one younger than a
// minute. Containers whose run lock is free or gone go at once. While a doctor on this
// machine holds a run lock, the probe images stay: it may be about to create a container from
// one. It returns how many containers and images it removed.
func Clean(ctx context.Context, c Client, scope CleanScope) (containers, images int, err error) {
	if err := Ping(ctx, c); err != nil {
		return 0, 0, err
	}
	now := time.Now()
	if info, err := c.Info(ctx, client.InfoOptions{}); err == nil {
		if t, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime); err == nil {
			now = t
		}
	}
	var errs []error
	containers, err = removeContainers(ctx, c, now, func(s container.Summary, age time.Duration) bool {
		if !scope.has(s) {
			return false
		}
		if s.State == container.StateRunning {
			return isLeftover(s, age, StaleAge)
		}
		return isLeftover(s, age, scope.grace())
	})
	if err != nil {
		errs = append(errs, err)
	}
	n, err := removeCompanions(ctx, c, now, scope)
	containers += n
	if err != nil {
		errs = append(errs, err)
	}
	removeDeadLocks()
	if liveRuns() {
		return containers, 0, JoinErrors(errs...)
	}

	f := make(client.Filters).Add("label", LabelImage)
	if scope.Digest != "" {
		f = make(client.Filters).Add("label", LabelImage+"="+scope.Digest)
	}
	list, err := c.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing probe images: %s", Reason(err)))
		return containers, 0, JoinErrors(errs...)
	}
	for _, img := range list.Items {
		refs := img.RepoTags
		if len(refs) == 0 {
			refs = []string{img.ID}
		}
		deleted := false
		for _, ref := range refs {
			if ref == "<none>:<none>" {
				ref = img.ID
			}
			res, err := c.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true})
			switch {
			case err == nil:
				for _, d := range res.Items {
					if d.Deleted != "" {
						deleted = true
					}
				}
			case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
				// Gone already, or used by a live run's container.
			default:
				errs = append(errs, fmt.Errorf("removing probe image %s: %s", ref, Reason(err)))
			}
		}
		if deleted {
			images++
		}
	}
	return containers, images, JoinErrors(errs...)
}

// removeCompanions removes every companion of a watch whose run lock says it is over, and
// companions that never ran or stopped without being removed (a doctor killed between
// creating one and attaching to it; a watch starts its companions at once). Running ones of
// a live watch end with it.
func removeCompanions(ctx context.Context, c Client, now time.Time, scope CleanScope) (int, error) {
	return RemoveLabelled(ctx, c, LabelWatch, "watch companion", now, func(s container.Summary, age time.Duration) bool {
		return scope.has(s) && (StateOf(s.Labels[LabelRunLock]) == LockDead || s.State != container.StateRunning && age >= scope.grace())
	})
}

// RemoveLeftovers is what a run removes before it starts: other runs' probe containers that
// are leftovers (see isLeftover), watch companions of a watch that is over, and the lock files
// of doctors that died.
func RemoveLeftovers(ctx context.Context, c Client, now time.Time, runID string, stale time.Duration) {
	_, _ = removeContainers(ctx, c, now, func(s container.Summary, age time.Duration) bool {
		return s.Labels[LabelProbe] != runID && isLeftover(s, age, stale)
	})
	_, _ = RemoveLabelled(ctx, c, LabelWatch, "watch companion", now, func(s container.Summary, _ time.Duration) bool {
		return StateOf(s.Labels[LabelRunLock]) == LockDead
	})
	removeDeadLocks()
}
