//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestBaselineProbesOnlyWhenAsked runs the real binary's baseline command on the real
// daemon: by default it creates no probe container of the project and no probe image, and
// with --probe auto given it does (which shows that the daemon's event log would have shown
// them). The binary is a private copy (privateDoctor), whose image the test removes.
func TestBaselineProbesOnlyWhenAsked(t *testing.T) {
	c := dockerClient(t)
	project := "baseline-probe-" + randomHex(3)
	t.Cleanup(func() { removeProjectContainers(t, c, project) })
	dir := writeStack(t, project, "  a:\n    image: alpine\n    shm_size: 64m\n")
	bin, images := privateDoctor(t, c)
	created := func(args ...string) int {
		t.Helper()
		since := time.Now()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("baseline %v: %v\n%s", args, err, errb.String())
		}
		// The run is over: the daemon's log between its start and now holds every
		// container it created, and the stream ends there.
		f := make(client.Filters).Add("type", "container").Add("event", "create").
			Add("label", "io.shmdoctor.probe").Add("label", "io.shmdoctor.project="+project)
		ev := c.Events(context.Background(), client.EventsListOptions{
			Since: since.Format(time.RFC3339Nano), Until: time.Now().Format(time.RFC3339Nano), Filters: f})
		n := 0
		for {
			select {
			case <-ev.Messages:
				n++
			case err := <-ev.Err:
				if err != nil && !errors.Is(err, io.EOF) {
					t.Fatalf("reading the daemon's events: %v", err)
				}
				return n
			}
		}
	}
	if n, imgs := created("baseline"), images(false); n != 0 || len(imgs) != 0 {
		t.Errorf("baseline with no --probe created %d probe containers and %d probe images", n, len(imgs))
	}
	if n := created("baseline", "--probe", "auto", "-o", "probed.json"); n == 0 {
		t.Errorf("baseline --probe auto created no probe container: the check above shows nothing")
	}
}
