//go:build linux

package main

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// TestCgoBuildProbes builds the doctor as `go install` does on a machine with a C compiler
// (cgo on, so dynamically linked) and requires it to probe and to watch with its agent on the
// real engine: its probe image carries the binary's interpreter and shared libraries.
func TestCgoBuildProbes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "shmdoctor")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the doctor with cgo: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	f.Close()
	if !dynamic {
		t.Fatal("a CGO_ENABLED=1 build is static here, so this test would prove nothing: is gcc installed?")
	}
	removeProbeImagesOf(t, bin)

	cmd := exec.Command(bin, "--format", "json", "--probe", "always", "--fail-on", "never", "testdata/probe")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe with the cgo build: %v\n%s", err, errText(err))
	}
	var doc probeDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, s := range doc.Projects[0].Services {
		if s.Probe == nil || s.Probe.CreateError != "" || s.Shm.PredictedBytes == nil || *s.Shm.PredictedBytes == 0 {
			continue
		}
		measured++
		if s.Probe.MeasuredBytes == nil || *s.Probe.MeasuredBytes != *s.Shm.PredictedBytes {
			t.Errorf("%s: measured %v, predicted %d", s.Name, deref(s.Probe.MeasuredBytes), *s.Shm.PredictedBytes)
		}
	}
	if measured < 5 {
		t.Fatalf("only %d services measured by the cgo build\n%s", measured, out)
	}

	const stack = `services:
  holder:
    image: {{image}}
    pull_policy: never
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/h bs=1M count=24 2>/dev/null; exec sleep 600"]
`
	dir, project, _ := upStack(t, stack)
	watch := exec.Command(bin, "watch", "--format", "json", "--method", "agent", "-p", project, dir)
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	var sum analyze.WatchSummary
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		var line struct {
			Type     string
			Services []analyze.ServiceUsage
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("watch printed %q: %v", sc.Text(), err)
		}
		if line.Type == "summary" {
			_ = json.Unmarshal(sc.Bytes(), &sum)
			break
		}
		if len(line.Services) == 1 && within(line.Services[0].UsedBytes, 24<<20) {
			_ = watch.Process.Signal(syscall.SIGINT) // the agent has read the 24 MiB
		}
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch with the cgo build: %v", err)
	}
	if len(sum.Methods) != 1 || sum.Methods[0] != analyze.WatchAgent || len(sum.Services) != 1 || !within(sum.Services[0].PeakBytes, 24<<20) {
		t.Errorf("watch with the cgo build read %+v by %v, want 24 MiB by the agent", sum.Services, sum.Methods)
	}
}

// removeProbeImagesOf removes, at the end of the test, the probe images built from bin (their
// import message names it): the images this test made, and no one else's.
func removeProbeImagesOf(t *testing.T, bin string) {
	t.Helper()
	t.Cleanup(func() {
		c, err := client.New(client.FromEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		imgs, err := c.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label", engine.LabelImage)})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range imgs.Items {
			if in, err := c.ImageInspect(ctx, i.ID); err == nil && in.Comment == "shmdoctor probe agent ("+bin+")" {
				_, _ = c.ImageRemove(ctx, i.ID, client.ImageRemoveOptions{Force: true})
			}
		}
	})
}

// errText is the standard error an *exec.ExitError holds.
func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
