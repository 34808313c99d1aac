package probe

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// cleanGrace is how old a stopped probe container must be for Clean to take it for a
// leftover: a live run's containers are stopped only for the moment between exit and removal.
var cleanGrace = time.Minute

// Clean removes the probe images and any leftover probe containers and watch companions
// (`shmdoctor probe --clean`). Containers of a doctor probing right now are left alone, and so are the images
// they use: a running probe container younger than StaleAge, or a stopped one younger than a
// minute. It returns how many containers and images it removed.
func Clean(ctx context.Context, c Client) (containers, images int, err error) {
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
		if s.State == container.StateRunning {
			return age > StaleAge
		}
		return age > cleanGrace
	})
	if err != nil {
		errs = append(errs, err)
	}
	n, err := removeCompanions(ctx, c, now)
	containers += n
	if err != nil {
		errs = append(errs, err)
	}

	f := make(client.Filters).Add("label", LabelImage)
	list, err := c.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing probe images: %s", reason(err)))
		return containers, 0, joinErrors(errs...)
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
				errs = append(errs, fmt.Errorf("removing probe image %s: %s", ref, reason(err)))
			}
		}
		if deleted {
			images++
		}
	}
	return containers, images, joinErrors(errs...)
}

// removeCompanions removes watch companions that never ran or stopped without being removed
// (a doctor killed between creating one and attaching to it). Running ones belong to a live
// watch and end with it.
func removeCompanions(ctx context.Context, c Client, now time.Time) (int, error) {
	return removeLabelled(ctx, c, LabelWatch, "watch companion", now, func(s container.Summary, age time.Duration) bool {
		return s.State != container.StateRunning && age >= cleanGrace
	})
}
