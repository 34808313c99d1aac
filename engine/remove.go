package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Labels every probe container carries.
const (
	// LabelProbe marks probe containers; its value is the run id.
	LabelProbe = "io.shmdoctor.probe"
	// LabelCreatedAt is when the doctor created the container (RFC 3339, UTC).
	LabelCreatedAt = "io.shmdoctor.created-at"
	// LabelService is the service the container probes.
	LabelService = "io.shmdoctor.service"
	// LabelProject is the compose project (Options.Project) of the service.
	LabelProject = "io.shmdoctor.project"
)

// LabelWatch marks the companion containers of `shmdoctor watch`; its value is the id of the
// container watched. Unlike LabelProbe, a probe run never removes them by age: a watch may
// run for hours. It removes them once their watch's run lock (LabelRunLock) says it is over.
const LabelWatch = "io.shmdoctor.watch"

// Removal and liveness.
const (
	// CleanupGrace is how long cleanup may go on past the run's timeout or an interrupt:
	// the whole run, daemon ping, image import, containers and their removal included, ends
	// within Options.Timeout plus CleanupGrace, even when the daemon stops answering.
	CleanupGrace = 10 * time.Second
	// StaleAge is how old a probe container of another run must be before a run removes it
	// as the leftover of a crashed doctor; live runs are younger (see Options.Timeout).
	StaleAge = 10 * time.Minute
	// RemoveTimeout bounds one removal or listing during cleanup, which runs on a context
	// that survives Ctrl-C and the run's timeout (but not the end of its CleanupGrace).
	RemoveTimeout = 20 * time.Second
)

// HungCheck bounds the ping that tells a hung daemon from a slow probe after a timeout.
const HungCheck = 2 * time.Second

// NewRunID is the id of a new run or watch: 12 random hex digits.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DaemonGone reports whether err says the daemon no longer answers: a refused or broken
// connection, or a stream cut short.
func DaemonGone(err error) bool {
	var opErr *net.OpError
	return client.IsErrConnectionFailed(err) || cerrdefs.IsUnavailable(err) || errors.As(err, &opErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// removeContainers force-removes the probe containers for which pick is true, given their
// age by the daemon's clock, and returns how many it removed.
func removeContainers(ctx context.Context, c Client, now time.Time, pick func(container.Summary, time.Duration) bool) (int, error) {
	return RemoveLabelled(ctx, c, LabelProbe, "probe container", now, pick)
}

// RemoveLabelled force-removes the containers carrying label for which pick is true, oldest
// first; what names them in errors.
func RemoveLabelled(ctx context.Context, c Client, label, what string, now time.Time, pick func(container.Summary, time.Duration) bool) (int, error) {
	f := make(client.Filters).Add("label", label)
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("listing %ss: %s", what, Reason(err))
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Created < list.Items[j].Created })
	removed := 0
	var errs []error
	for _, s := range list.Items {
		if !pick(s, now.Sub(time.Unix(s.Created, 0))) {
			continue
		}
		// A removal once begun survives Ctrl-C, but not the caller's deadline.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RemoveTimeout)
		if d, ok := ctx.Deadline(); ok {
			cancel()
			if limit := time.Now().Add(RemoveTimeout); limit.Before(d) {
				d = limit
			}
			rctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), d)
		}
		_, err := c.ContainerRemove(rctx, s.ID, client.ContainerRemoveOptions{Force: true})
		cancel()
		switch {
		case err == nil:
			removed++
		case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
			// Gone already, or being removed by its own run.
		default:
			errs = append(errs, fmt.Errorf("removing %s %.12s: %s", what, s.ID, Reason(err)))
		}
	}
	return removed, JoinErrors(errs...)
}

// JoinErrors is errors.Join on one line: the doctor prints errors as single lines.
func JoinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return lineErrors(kept)
}

type lineErrors []error

func (e lineErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e lineErrors) Unwrap() []error { return e }

// Ptr returns a pointer to a copy of v.
func Ptr[T any](v T) *T { return &v }
