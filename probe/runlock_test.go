//go:build linux

package probe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// privateAgent is a copy of the test agent with bytes of its own appended (the loader ignores
// them), so that its probe image is this test's alone: the test may remove it, and sees only
// its own untagged images. The image goes when the test ends.
func privateAgent(t *testing.T) (path, digest string) {
	t.Helper()
	data, err := os.ReadFile(testAgent)
	if err != nil {
		t.Fatal(err)
	}
	var tail [16]byte
	_, _ = rand.Read(tail[:])
	path = filepath.Join(t.TempDir(), "shmdoctor")
	if err := os.WriteFile(path, append(data, []byte(hex.EncodeToString(tail[:]))...), 0o755); err != nil {
		t.Fatal(err)
	}
	agent, err := engine.SelectAgent(path, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range engines(t) {
			removeImagesOn(t, e.c, agent.Digest())
		}
	})
	return path, agent.Digest()
}

// removeImages removes every image of this agent digest, tagged or not.
func removeImages(t *testing.T, digest string) { removeImagesOn(t, daemon(t), digest) }

// removeImagesOn is removeImages on the engine c.
func removeImagesOn(t *testing.T, c engine.Client, digest string) {
	f := make(client.Filters).Add("label", engine.LabelImage+"="+digest)
	list, err := c.ImageList(context.Background(), client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("listing the test's images: %v", err)
		return
	}
	for _, img := range list.Items {
		if _, err := c.ImageRemove(context.Background(), img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("removing the test's image %.19s: %v", img.ID, err)
		}
	}
}

// deadLock is the lock of a run killed with SIGKILL: its file is there, and free.
func deadLock(t *testing.T, runID string) *engine.RunLock {
	t.Helper()
	l := engine.NewRunLock(context.Background(), runID)
	if l == nil {
		t.Fatal("no run lock could be taken")
	}
	if err := l.Abandon(); err != nil { // the kernel lets the flock go with the process
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Path()); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDeadRunLeftovers: a run removes at once the containers of a run whose lock is free
// (killed), probe containers and watch companions alike, and the dead run's lock file; it
// spares the containers of a run whose lock is held, and those of a run whose lock it cannot
// see (another host), which are young. Not parallel: it removes leftovers of any run.
func TestDeadRunLeftovers(t *testing.T) {
	o := testOptions(t)
	o.WriteProbe = "off"
	dead := deadLock(t, "dead01")
	deadProbe := leftoverLabelled(t, map[string]string{engine.LabelProbe: "dead01", engine.LabelProject: o.Project, engine.LabelRunLock: dead.Path()})
	deadCompanion := leftoverLabelled(t, map[string]string{engine.LabelWatch: "gone", engine.LabelProject: o.Project, engine.LabelRunLock: dead.Path()})
	// A run that ended but whose container could not be removed: its lock file is gone.
	ended := engine.NewRunLock(context.Background(), "e0ded1")
	endedProbe := leftoverLabelled(t, map[string]string{engine.LabelProbe: "e0ded1", engine.LabelProject: o.Project, engine.LabelRunLock: ended.Path()})
	ended.Release()

	live := engine.NewRunLock(context.Background(), "a11ce1")
	defer live.Release()
	liveProbe := leftoverLabelled(t, map[string]string{engine.LabelProbe: "a11ce1", engine.LabelProject: o.Project, engine.LabelRunLock: live.Path()})
	liveCompanion := leftoverLabelled(t, map[string]string{engine.LabelWatch: "live", engine.LabelProject: o.Project, engine.LabelRunLock: live.Path()})
	remote := leftoverLabelled(t, map[string]string{engine.LabelProbe: "fe0001", engine.LabelProject: o.Project,
		engine.LabelRunLock: "/run/user/1000/shmdoctor/0123456789abcdef-fe0001.lock"})

	run(t, o, &analyze.ShmPlan{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)})
	for name, id := range map[string]string{"dead run's probe container": deadProbe, "dead watch's companion": deadCompanion, "ended run's container": endedProbe} {
		if exists(t, id) {
			t.Errorf("the %s is still there", name)
		}
	}
	for name, id := range map[string]string{"live run's probe container": liveProbe, "live watch's companion": liveCompanion, "remote run's container": remote} {
		if !exists(t, id) {
			t.Errorf("the %s was removed", name)
		}
	}
	if _, err := os.Stat(dead.Path()); err == nil {
		t.Error("the dead run's lock file is still there")
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Errorf("the live run's lock file: %v", err)
	}
}

// TestRunLockReleased: a run labels its containers with its lock, holds the lock while it
// lives, and removes the lock file when it ends.
func TestRunLockReleased(t *testing.T) {
	o := testOptions(t)
	o.WriteProbe = "off"
	var label string
	var state engine.LockState
	o.Progress = func(e Event) {
		if e.Stage != StageMeasuring || label != "" {
			return
		}
		f := make(client.Filters).Add("label", engine.LabelProject+"="+o.Project)
		list, err := daemon(t).ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("the run's containers: %v %v", list.Items, err)
			return
		}
		label = list.Items[0].Labels[engine.LabelRunLock]
		state = engine.StateOf(label)
	}
	o.Parallel = 1
	run(t, o, &analyze.ShmPlan{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)})
	if label == "" || state != engine.LockAlive {
		t.Fatalf("while the run lived, its container's lock %q was %v, want held", label, state)
	}
	if _, err := os.Stat(label); err == nil {
		t.Errorf("the lock file %s is still there after the run", label)
	}
	if engine.StateOf(label) != engine.LockDead {
		t.Errorf("after the run, its lock says %v", engine.StateOf(label))
	}
}

// TestCleanSparesLiveRuns: `probe --clean` removes a dead run's containers at once, running
// or not, spares a live run's and keeps the probe images while a run lives; once no run
// lives, the images go. Clean is limited to this test's image and project (an engine.CleanScope); not
// parallel, for it reads every run lock of this process.
func TestCleanSparesLiveRuns(t *testing.T) {
	o := testOptions(t)
	bin, digest := privateAgent(t)
	scope := engine.CleanScope{Digest: digest, Project: o.Project}
	agent, err := engine.SelectAgent(bin, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.EnsureImage(context.Background(), daemon(t), agent); err != nil {
		t.Fatal(err)
	}
	dead := deadLock(t, "dead02")
	deadProbe := leftoverLabelled(t, map[string]string{engine.LabelProbe: "dead02", engine.LabelProject: o.Project, engine.LabelRunLock: dead.Path()})
	live := engine.NewRunLock(context.Background(), "a11ce2")
	liveProbe := leftoverLabelled(t, map[string]string{engine.LabelProbe: "a11ce2", engine.LabelProject: o.Project, engine.LabelRunLock: live.Path()})

	containers, images, err := engine.Clean(context.Background(), daemon(t), scope)
	if err != nil {
		t.Fatal(err)
	}
	// Another doctor on the shared daemon (a test package running beside this one) removes a
	// dead run's containers when it starts, so Clean may find the dead one gone already.
	if exists(t, deadProbe) || !exists(t, liveProbe) || containers > 1 {
		t.Errorf("Clean removed %d containers: dead run's still there %v, live run's still there %v", containers, exists(t, deadProbe), exists(t, liveProbe))
	}
	if images != 0 || countImages(t, digest, false) != 1 {
		t.Errorf("Clean removed %d images while a run lived", images)
	}
	live.Release()
	if containers, images, err = engine.Clean(context.Background(), daemon(t), scope); err != nil || containers > 1 || exists(t, liveProbe) || images != 1 {
		t.Errorf("Clean once the run ended: %d containers (the ended run's still there %v), %d images, %v; want it gone, 1 image", containers, exists(t, liveProbe), images, err)
	}
}

// countImages counts the images of an agent digest, the untagged ones only if untagged.
func countImages(t *testing.T, digest string, untagged bool) int {
	t.Helper()
	f := make(client.Filters).Add("label", engine.LabelImage+"="+digest)
	if untagged {
		f.Add("dangling", "true")
	}
	list, err := daemon(t).ImageList(context.Background(), client.ImageListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestCleanRace: `probe --clean` run again and again while four doctors probe: no service
// reports a false SHM205 "No such image". Clean is limited to this test's image and project
// (an engine.CleanScope).
func TestCleanRace(t *testing.T) {
	o := testOptions(t)
	o.WriteProbe = "off"
	bin, digest := privateAgent(t)
	o.Binary = bin
	scope := engine.CleanScope{Digest: digest, Project: o.Project}

	stop := make(chan struct{})
	var cleans, removed atomic.Int64
	cleaner := make(chan struct{})
	go func() {
		defer close(cleaner)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, images, err := engine.Clean(context.Background(), daemon(t), scope)
			if err != nil {
				t.Errorf("Clean: %v", err)
			}
			cleans.Add(1)
			removed.Add(int64(images))
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var false205 []string
	const doctors, runs = 4, 3
	for d := range doctors {
		wg.Go(func() {
			for i := range runs {
				plans := []*analyze.ShmPlan{
					{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)},
					{Service: "b", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)},
				}
				ms, err := Run(context.Background(), daemon(t), plans, o)
				if err != nil {
					t.Errorf("doctor %d run %d: %v", d, i, err)
				}
				for name, m := range ms {
					if strings.Contains(m.CreateError+m.Error, "No such image") {
						mu.Lock()
						false205 = append(false205, name+": "+m.CreateError+m.Error)
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-cleaner
	t.Logf("%d runs, %d cleans removed %d images, %d false SHM205", doctors*runs, cleans.Load(), removed.Load(), len(false205))
	if len(false205) > 0 {
		t.Errorf("false SHM205 while clean raced the runs: %v", false205)
	}
}

// TestCreateReimports: a run whose image is removed after it made sure of it (a clean the
// run's lock could not stop: another user's, another host's) imports it again and creates
// its container.
func TestCreateReimports(t *testing.T) {
	bin, digest := privateAgent(t)
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o := engineOptions(t, e)
		o.Binary = bin
		o, err := o.normalized()
		if err != nil {
			t.Fatal(err)
		}
		r, err := start(context.Background(), e.c, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.cancel()
		defer r.lock.Release()
		removeImagesOn(t, e.c, digest)
		n := &node{plan: &analyze.ShmPlan{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(e.engine.DefaultShm)}, m: &analyze.Measurement{}}
		n.spec = buildSpec(n.plan, o, r.runID, r.image, r.now(), false)
		id, err := r.create(n.spec)
		if err != nil {
			t.Fatalf("create after the image was removed: %v", err)
		}
		r.reap.remove(id)
	})
}
