//go:build linux

package probe

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

// leftover creates a probe container of another (crashed) run, never started.
func leftover(t *testing.T, project, runID string) string {
	t.Helper()
	return leftoverLabelled(t, map[string]string{engine.LabelProbe: runID, engine.LabelProject: project})
}

// leftoverLabelled creates a container of the probe image with these labels, never started.
func leftoverLabelled(t *testing.T, labels map[string]string) string {
	t.Helper()
	agent, err := engine.SelectAgent(testAgent, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	image, err := engine.EnsureImage(context.Background(), daemon(t), agent)
	if err != nil {
		t.Fatal(err)
	}
	return leftoverOf(t, image, labels)
}

// leftoverOf creates a container of image with these labels, never started, removed when
// the test ends.
func leftoverOf(t *testing.T, image string, labels map[string]string) string {
	t.Helper()
	return enginetest.Leftover(t, daemon(t), image, labels)
}

func exists(t *testing.T, id string) bool {
	t.Helper()
	return enginetest.Exists(t, daemon(t), id)
}

// TestClean: `shmdoctor probe --clean` removes a crashed run's leftover, a watch companion
// that never started and, once no container uses it, the probe image, and leaves a live
// run's container alone. Other doctors use the daemon at the same time (other packages'
// tests among them), so Clean is limited to what this test made: the image of an agent of
// its own and the containers of its project (an engine.CleanScope). An image and a leftover outside
// that scope, as another doctor's, must stay. Not parallel: Clean keeps the images while a
// run of this process lives.
func TestClean(t *testing.T) {
	o := testOptions(t)
	ctx := context.Background()
	image := func(bin string) (*engine.Agent, string) {
		agent, err := engine.SelectAgent(bin, "linux", "amd64")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := engine.EnsureImage(ctx, daemon(t), agent)
		if err != nil {
			t.Fatal(err)
		}
		return agent, ref
	}
	bin, digest := privateAgent(t)
	agent, ref := image(bin)
	otherBin, otherDigest := privateAgent(t)
	_, otherRef := image(otherBin)
	scope := engine.CleanScope{Digest: digest, Project: o.Project}

	id := leftoverOf(t, ref, map[string]string{engine.LabelProbe: "crashed", engine.LabelProject: o.Project})
	// A watch companion created by a doctor killed before it could attach and start it.
	companion := leftoverOf(t, ref, map[string]string{engine.LabelWatch: "gone", engine.LabelProject: o.Project})
	// Another doctor's crashed run, with the other image.
	other := leftoverOf(t, otherRef, map[string]string{engine.LabelProbe: "crashed", engine.LabelProject: o.Project + "-other"})
	scope.Grace = 2 * time.Second
	time.Sleep(3100 * time.Millisecond)
	young := leftoverOf(t, ref, map[string]string{engine.LabelProbe: "live-run", engine.LabelProject: o.Project})
	containers, images, err := engine.Clean(ctx, daemon(t), scope)
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	if containers != 2 || exists(t, id) || exists(t, companion) {
		t.Errorf("Clean removed %d containers, want 2; leftover still there: %v, companion still there: %v", containers, exists(t, id), exists(t, companion))
	}
	// The image a live run's container uses stays until that run is over.
	if !exists(t, young) || images != 0 || imageCount(t, digest) != 1 {
		t.Errorf("Clean removed %d images and the container created a moment ago (a live run's) is there: %v", images, exists(t, young))
	}
	_, _ = daemon(t).ContainerRemove(ctx, young, client.ContainerRemoveOptions{Force: true})
	if _, images, err := engine.Clean(ctx, daemon(t), scope); err != nil || images != 1 || imageCount(t, digest) != 0 {
		t.Errorf("second Clean: %d images removed, %d left, %v; want 1 removed, none left", images, imageCount(t, digest), err)
	}
	if n := imageCount(t, otherDigest); n != 1 || !exists(t, other) {
		t.Errorf("Clean went beyond its scope: %d of the other image, the other leftover there: %v", n, exists(t, other))
	}

	// The image comes back on demand, built from the binary and never pulled.
	ref, err = engine.Image(ctx, daemon(t), bin)
	if err != nil {
		t.Fatalf("Image: %v", err)
	}
	img, err := daemon(t).ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := img.Config; cfg == nil || strings.Join(cfg.Entrypoint, " ") != "/shmdoctor agent" || cfg.Labels[engine.LabelImage] != agent.Digest() || ref != agent.Ref() {
		t.Errorf("image %s: config %+v", ref, img.Config)
	}
}

// imageCount counts the images of an agent digest, tagged or not.
func imageCount(t *testing.T, digest string) int {
	t.Helper()
	f := make(client.Filters).Add("label", engine.LabelImage+"="+digest)
	list, err := daemon(t).ImageList(context.Background(), client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestStaleLeftovers: a run removes other runs' containers older than the stale age and
// leaves younger ones (a live run's) alone. Not parallel: it removes old containers of any run.
func TestStaleLeftovers(t *testing.T) {
	o := testOptions(t)
	o.staleAge = 2 * time.Second
	o.WriteProbe = "off"
	old := leftover(t, o.Project, "crashed-old")
	time.Sleep(3100 * time.Millisecond)
	live := leftover(t, o.Project, "live-other-run")
	ms := run(t, o, &analyze.ShmPlan{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)})
	assertSize(t, "a", ms["a"], 64*mib)
	if exists(t, old) {
		t.Error("the stale leftover was not removed")
	}
	if !exists(t, live) {
		t.Error("a live run's container was removed")
	}
}

// dyingDaemon is a fake Client for the one case the real daemon cannot be made to do on
// demand in a test: stop answering in the middle of a probe. It answers until a container
// has started, then every call fails as a dead daemon's would. Every other test uses the
// real daemon.
type dyingDaemon struct {
	engine.Client // nil: a call the fake does not expect panics

	mu       sync.Mutex
	dead     bool
	started  []string
	removals int
}

func (d *dyingDaemon) refused() error {
	return &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: "/var/run/docker.sock", Net: "unix"}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func (d *dyingDaemon) isDead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

func (d *dyingDaemon) DaemonHost() string    { return "unix:///var/run/docker.sock" }
func (d *dyingDaemon) ClientVersion() string { return "1.41" }

func (d *dyingDaemon) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	if d.isDead() {
		return client.PingResult{}, d.refused()
	}
	return client.PingResult{APIVersion: "1.41", OSType: "linux"}, nil
}

func (d *dyingDaemon) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	if d.isDead() {
		return client.ServerVersionResult{}, d.refused()
	}
	return client.ServerVersionResult{Version: "20.10.24", APIVersion: "1.41", Os: "linux", Arch: "amd64"}, nil
}

func (d *dyingDaemon) Info(context.Context, client.InfoOptions) (client.SystemInfoResult, error) {
	return client.SystemInfoResult{Info: system.Info{OSType: "linux", Architecture: "x86_64", SystemTime: time.Now().Format(time.RFC3339Nano)}}, nil
}

func (d *dyingDaemon) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, nil
}

func (d *dyingDaemon) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	if d.isDead() {
		return client.ContainerListResult{}, d.refused()
	}
	return client.ContainerListResult{}, nil
}

func (d *dyingDaemon) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	if d.isDead() {
		return client.ContainerCreateResult{}, d.refused()
	}
	return client.ContainerCreateResult{ID: "c-" + o.Config.Labels[engine.LabelService]}, nil
}

func (d *dyingDaemon) ContainerAttach(context.Context, string, client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	if d.isDead() {
		return client.ContainerAttachResult{}, d.refused()
	}
	// The agent's side of the stream is never written: the daemon dies first.
	a, _ := net.Pipe()
	return client.ContainerAttachResult{HijackedResponse: client.NewHijackedResponse(a, "")}, nil
}

func (d *dyingDaemon) ContainerStart(_ context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return client.ContainerStartResult{}, d.refused()
	}
	d.started = append(d.started, id)
	d.dead = true // the daemon dies right after starting the probe
	return client.ContainerStartResult{}, nil
}

func (d *dyingDaemon) ContainerWait(context.Context, string, client.ContainerWaitOptions) client.ContainerWaitResult {
	// The wait stream is cut in the middle, as when dockerd exits.
	errC := make(chan error, 1)
	errC <- io.ErrUnexpectedEOF
	return client.ContainerWaitResult{Result: make(chan container.WaitResponse), Error: errC}
}

func (d *dyingDaemon) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	d.mu.Lock()
	d.removals++
	d.mu.Unlock()
	return client.ContainerRemoveResult{}, d.refused()
}

// TestDaemonDies: a daemon that stops answering mid-probe ends the run promptly, with the
// service's error saying so and the run's error saying the container could not be removed
// and how it will be.
func TestDaemonDies(t *testing.T) {
	t.Parallel()
	d := &dyingDaemon{}
	start := time.Now()
	ms, err := Run(context.Background(), d, []*analyze.ShmPlan{{Service: "a", Predicted: i64(64 * mib)}}, Options{Binary: testAgent, Parallel: 1})
	if time.Since(start) > 10*time.Second {
		t.Errorf("Run took %v", time.Since(start))
	}
	if err == nil || !strings.Contains(err.Error(), "removing probe containers") || !strings.Contains(err.Error(), "next run") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Run: %v, want a one-line error about removing the containers", err)
	}
	if m := ms["a"]; m == nil || !strings.Contains(m.Error, "stopped answering") {
		t.Errorf("a: %+v, want an error saying the daemon stopped answering", m)
	}
	if d.removals == 0 || len(d.started) != 1 {
		t.Errorf("started %v, removal attempts %d", d.started, d.removals)
	}
	t.Logf("Run: %v; a: %s", err, ms["a"].Error)
}
