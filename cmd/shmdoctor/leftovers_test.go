//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/engine"
)

func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// writeStack writes a compose file of this project and returns its folder.
func writeStack(t *testing.T, project, services string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte("name: "+project+"\nservices:\n"+services), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestSIGKILLLeftovers kills the doctor with SIGKILL while its IPC donor is held and its
// joiner writes: the containers it leaves are removed by the next run at once, not ten
// minutes later. Both doctors share a lock directory of the test's own (XDG_RUNTIME_DIR).
func TestSIGKILLLeftovers(t *testing.T) {
	c := dockerClient(t)
	project := "probe-sigkill-" + randomHex(3)
	t.Cleanup(func() { removeProjectContainers(t, c, project) })
	stack := writeStack(t, project, "  donor:\n    image: alpine\n    ipc: shareable\n    shm_size: 1g\n  joiner:\n    image: alpine\n    ipc: service:donor\n")
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())

	bin := buildDoctor(t) // before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := make(client.Filters).Add("type", "container").Add("event", "start").Add("label", "io.shmdoctor.project="+project)
	events := c.Events(ctx, client.EventsListOptions{Filters: f})

	cmd := exec.Command(bin, "--probe", "always", "--write-probe", "1g", "--format", "json", stack)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The joiner starts once the donor runs and has reported: both are up.
	for started := map[string]bool{}; !started["joiner"]; {
		select {
		case e := <-events.Messages:
			started[e.Actor.Attributes["io.shmdoctor.service"]] = true
		case err := <-events.Err:
			_ = cmd.Process.Kill()
			t.Fatalf("following the daemon's events: %v; doctor: %s", err, errb.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before := len(probeContainers(t, project))
	if before == 0 {
		t.Fatalf("no container left by the killed doctor: the test shows nothing")
	}

	next := exec.Command(buildDoctor(t), "--probe", "always", "--write-probe", "off", "--format", "json",
		writeStack(t, "probe-sigkill-next-"+randomHex(3), "  a:\n    image: alpine\n"))
	next.Env = env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	after := probeContainers(t, project)
	t.Logf("containers of the killed doctor: %d before the next run, %d after", before, len(after))
	if len(after) > 0 {
		t.Errorf("the next run left the killed doctor's containers: %v", after)
	}
}

// removeProjectContainers removes the probe containers of a project the test made.
func removeProjectContainers(t *testing.T, c *client.Client, project string) {
	f := make(client.Filters).Add("label", "io.shmdoctor.probe").Add("label", "io.shmdoctor.project="+project)
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("listing containers: %v", err)
		return
	}
	for _, s := range list.Items {
		_, _ = c.ContainerRemove(context.Background(), s.ID, client.ContainerRemoveOptions{Force: true})
	}
}

// privateDoctor copies the doctor's binary with bytes of its own appended (the loader
// ignores them), so that the probe image made from it is the test's alone: the test then
// removes only what it made. It returns the copy and a function that lists the IDs of the
// copy's probe images on the daemon (only the untagged ones when dangling); those images are
// removed when the test ends.
func privateDoctor(t *testing.T, c *client.Client) (bin string, images func(dangling bool) []string) {
	t.Helper()
	data, err := os.ReadFile(buildDoctor(t))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte(randomHex(16))...)
	bin = filepath.Join(t.TempDir(), "shmdoctor")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	images = func(dangling bool) []string {
		t.Helper()
		f := make(client.Filters).Add("label", engine.LabelImage+"="+digest)
		if dangling {
			f.Add("dangling", "true")
		}
		list, err := c.ImageList(context.Background(), client.ImageListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, img := range list.Items {
			ids = append(ids, img.ID)
		}
		return ids
	}
	t.Cleanup(func() {
		for _, id := range images(false) {
			if _, err := c.ImageRemove(context.Background(), id, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
				t.Errorf("removing the test's image %.19s: %v", id, err)
			}
		}
	})
	return bin, images
}

// TestColdConcurrentDoctors starts four doctors at once with no probe image on the daemon:
// they leave one tagged image and no untagged one. The doctors run a private copy of the
// binary (privateDoctor), whose probe image is this test's alone.
func TestColdConcurrentDoctors(t *testing.T) {
	c := dockerClient(t)
	bin, images := privateDoctor(t, c)
	if n := len(images(false)); n != 0 {
		t.Fatalf("%d images of a binary made a moment ago", n)
	}

	stack := writeStack(t, "probe-cold-"+randomHex(3), "  a:\n    image: alpine\n")
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	var wg sync.WaitGroup
	for range 4 {
		cmd := exec.Command(bin, "--probe", "always", "--write-probe", "off", "--format", "json", stack)
		cmd.Env = env
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("doctor: %v\n%s", err, out)
			}
		})
	}
	wg.Wait()
	untagged, all := images(true), images(false)
	t.Logf("after 4 cold doctors: %d probe images, %d untagged", len(all), len(untagged))
	if len(untagged) > 0 || len(all) != 1 {
		t.Errorf("4 cold doctors left %d images, %d of them untagged: want one tagged image", len(all), len(untagged))
	}
}
