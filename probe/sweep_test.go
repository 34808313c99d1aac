//go:build linux

package probe

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/engine"
)

// donorFirst is the engine with its container lists put in name order, so that a donor
// comes before its joiner: the one thing of a list a real engine does not let a test choose.
type donorFirst struct{ engine.Client }

func (d donorFirst) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	res, err := d.Client.ContainerList(ctx, o)
	sort.SliceStable(res.Items, func(i, j int) bool {
		return strings.Join(res.Items[i].Names, ",") < strings.Join(res.Items[j].Names, ",")
	})
	return res, err
}

// TestSweepJoinerFirst: a run's sweep removes a donor and the container that joined its IPC
// namespace even when the list names the donor first: Podman refuses to remove a donor while
// a container depends on it ("has dependent containers which must be removed before it").
func TestSweepJoinerFirst(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o, err := engineOptions(t, e).normalized()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r, err := start(ctx, donorFirst{e.c}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.lock.Release()
		create := func(name string, ipc container.IpcMode) string {
			t.Helper()
			res, err := e.c.ContainerCreate(ctx, client.ContainerCreateOptions{
				Name: name + "-" + r.runID,
				Config: &container.Config{Image: r.image, Cmd: append(protocol.Args(), "--target", "0"), User: probeUser,
					Labels: map[string]string{engine.LabelProbe: r.runID, engine.LabelProject: o.Project}},
				HostConfig: &container.HostConfig{NetworkMode: "none", IpcMode: ipc},
			})
			if err != nil {
				t.Fatal(err)
			}
			return res.ID
		}
		donor := create("donor", "shareable")
		create("joiner", container.IpcMode("container:"+donor))
		r.reap.sweep()
		if len(r.reap.cleanErr) > 0 {
			t.Errorf("sweep: %v", engine.JoinErrors(r.reap.cleanErr...))
		}
	})
}
