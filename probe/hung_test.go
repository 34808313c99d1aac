//go:build linux

package probe

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

// TestHungDaemonPing: a daemon that accepts and never answers is given the run's timeout, not
// a fixed 15 s, and the error says what happened.
func TestHungDaemonPing(t *testing.T) {
	t.Parallel()
	c, host := enginetest.HungClient(t)
	_, err := Run(context.Background(), c, []*analyze.ShmPlan{{Service: "a"}}, Options{Binary: testAgent, Timeout: time.Second})
	want := "the Docker daemon at " + host + " did not answer within 1s"
	if err == nil || err.Error() != want {
		t.Errorf("Run: %v\nwant %s", err, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := engine.Ping(ctx, c); err == nil || !strings.Contains(err.Error(), "did not answer within 500ms") {
		t.Errorf("Ping: %v, want it to say the daemon did not answer within 500ms", err)
	}
}

// hangingDaemon is a fake Client for a daemon that hangs in the middle of a run (SIGSTOP),
// which a test must not do to the shared engine. It answers until a container has started;
// from then on every call blocks until its context ends. It records the latest deadline any
// call was given, and every call made without one.
type hangingDaemon struct {
	dyingDaemon

	mu         sync.Mutex
	hung       bool
	latest     time.Time
	noDeadline []string
}

func (d *hangingDaemon) hang(ctx context.Context, call string) error {
	d.mu.Lock()
	hung := d.hung
	dl, ok := ctx.Deadline()
	if !ok {
		d.noDeadline = append(d.noDeadline, call)
	} else if dl.After(d.latest) {
		d.latest = dl
	}
	d.mu.Unlock()
	if !hung {
		return nil
	}
	if !ok {
		return errors.New("a call without a deadline to a hung daemon would never return")
	}
	<-ctx.Done()
	return ctx.Err()
}

func (d *hangingDaemon) Ping(ctx context.Context, o client.PingOptions) (client.PingResult, error) {
	if err := d.hang(ctx, "ping"); err != nil {
		return client.PingResult{}, err
	}
	return client.PingResult{APIVersion: "1.41", OSType: "linux"}, nil
}

func (d *hangingDaemon) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, d.hang(ctx, "list")
}

func (d *hangingDaemon) ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	if err := d.hang(ctx, "create"); err != nil {
		return client.ContainerCreateResult{}, err
	}
	return client.ContainerCreateResult{ID: "c-" + o.Config.Labels[engine.LabelService]}, nil
}

func (d *hangingDaemon) ContainerAttach(ctx context.Context, id string, o client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	if err := d.hang(ctx, "attach"); err != nil {
		return client.ContainerAttachResult{}, err
	}
	a, _ := net.Pipe() // the agent's side is never written: the daemon hangs first
	return client.ContainerAttachResult{HijackedResponse: client.NewHijackedResponse(a, "")}, nil
}

func (d *hangingDaemon) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	err := d.hang(ctx, "start")
	d.mu.Lock()
	d.hung = true // the daemon hangs right after starting the probe
	d.mu.Unlock()
	return client.ContainerStartResult{}, err
}

func (d *hangingDaemon) ContainerWait(ctx context.Context, id string, o client.ContainerWaitOptions) client.ContainerWaitResult {
	errC := make(chan error, 1)
	go func() { errC <- d.hang(ctx, "wait") }()
	return client.ContainerWaitResult{Result: make(chan container.WaitResponse), Error: errC}
}

func (d *hangingDaemon) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return client.ContainerRemoveResult{}, d.hang(ctx, "remove")
}

// TestHungDaemonMidRun: a daemon that hangs once the probe has started ends the run at its
// timeout plus CleanupGrace at the latest: every call, cleanup included, has a deadline no
// later than that, and the run's error says the daemon stopped answering.
func TestHungDaemonMidRun(t *testing.T) {
	t.Parallel()
	d := &hangingDaemon{}
	o := Options{Binary: testAgent, Parallel: 1, Timeout: time.Second}
	before := time.Now()
	ms, err := Run(context.Background(), d, []*analyze.ShmPlan{{Service: "a", Predicted: i64(64 * mib)}}, o)
	if len(d.noDeadline) > 0 {
		t.Errorf("calls without a deadline: %v", d.noDeadline)
	}
	if bound := before.Add(o.Timeout + engine.CleanupGrace); d.latest.After(bound.Add(time.Second)) {
		t.Errorf("a call was given until %v after the run began, past the timeout plus CleanupGrace (%v)", d.latest.Sub(before), o.Timeout+engine.CleanupGrace)
	}
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") || !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("Run: %v, want a timeout saying the daemon stopped answering", err)
	}
	if m := ms["a"]; m == nil || !strings.Contains(m.Error, "timed out") {
		t.Errorf("a: %+v, want a timeout", m)
	}
	t.Logf("Run: %v", err)
}
