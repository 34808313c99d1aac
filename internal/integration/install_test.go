//go:build linux

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// TestImage builds the doctor's container image with `make image` in a clean checkout at tag
// v9.8.7: it prints the name localhost/shmdoctor:v9.8.7, which docker image inspect finds. It
// runs it as the README says, with --pull=never, on a folder mounted at /src with the Docker
// socket: it analyses the folder and probes through the socket. Both images (the doctor's and
// the probe image it builds from its own binary) are removed afterwards unless they were there
// before.
func TestImage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	checkout(t, dir)
	image := "localhost/shmdoctor:v9.8.7"
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	removeAfter(t, c, image)
	r := runIn(t, dir, nil, "make", "-s", "image")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || lines[len(lines)-1] != image {
		t.Fatalf("make image: exit %d, want %s printed last\n%s%s", r.code, image, r.stdout, r.stderr)
	}
	if r := runIn(t, dir, nil, "docker", "image", "inspect", "--format", "{{.Os}}/{{.Architecture}}", image); r.code != 0 || strings.TrimSpace(r.stdout) != "linux/"+runtime.GOARCH {
		t.Fatalf("docker image inspect %s: exit %d, %q\n%s", image, r.code, r.stdout, r.stderr)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "bin", "shmdoctor"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	removeAfter(t, c, "shmdoctor-probe:"+hex.EncodeToString(sum[:])[:12])

	socket := "/var/run/docker.sock"
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		socket = h
	}
	stack := t.TempDir()
	const compose = "services:\n  plain:\n    image: postgres:16\n  sized:\n    image: postgres:16\n    shm_size: 96m\n"
	if err := os.WriteFile(filepath.Join(stack, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, stack, nil, "docker", "run", "--rm", "--pull=never", "-v", stack+":/src", "-w", "/src",
		"-v", socket+":/var/run/docker.sock", image, "--format", "json", "--probe", "always", "--fail-on", "never", ".")
	if r.code != 0 {
		t.Fatalf("docker run %s: exit %d\n%s%s", image, r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Projects []struct {
			Files    []string
			Services []struct {
				Name  string
				Probe *struct {
					MeasuredBytes *int64 `json:"measured_bytes"`
					Error         string
				}
			}
			Findings []struct{ Rule, Service string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Projects) != 1 {
		t.Fatalf("the image's report: %v\n%s", err, r.stdout)
	}
	p := doc.Projects[0]
	if len(p.Files) != 1 || p.Files[0] != "compose.yaml" {
		t.Errorf("files %v, want compose.yaml as the mounted folder names it", p.Files)
	}
	if len(p.Findings) == 0 || p.Findings[0].Rule != "SHM010" || p.Findings[0].Service != "plain" {
		t.Errorf("findings %+v, want SHM010 on plain: the image analyses", p.Findings)
	}
	want := map[string]int64{"plain": 64 << 20, "sized": 96 << 20}
	for _, s := range p.Services {
		if s.Probe == nil || s.Probe.MeasuredBytes == nil || *s.Probe.MeasuredBytes != want[s.Name] {
			t.Errorf("%s: %+v, want %d bytes measured through the socket\n%s", s.Name, s.Probe, want[s.Name], r.stdout)
		}
		delete(want, s.Name)
	}
	if len(want) > 0 {
		t.Errorf("services not reported: %v", want)
	}
}

// removeAfter removes the image ref at the end of the test when it was not there before.
func removeAfter(t *testing.T, c *client.Client, ref string) {
	t.Helper()
	if _, err := c.ImageInspect(context.Background(), ref); err == nil {
		return
	}
	t.Cleanup(func() {
		_, _ = c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
}

// TestSelfContained runs the tests that once needed ../shared in a checkout with nothing
// beside it and SHMDOCTOR_CORPUS unset: they pass on what the repository holds, and the corpus
// tests say in one line why they skip.
func TestSelfContained(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	checkout(t, dir)
	r := runIn(t, dir, []string{"SHMDOCTOR_CORPUS="}, "go", "test", "-count=1", "-v", "-run", "TestCorpus|TestK8sCorpus|TestConformance|TestSARIFValidates", "./analyze/...", "./report")
	if r.code != 0 {
		t.Fatalf("go test in a checkout without ../shared: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"--- PASS: TestConformance", "--- PASS: TestSARIFValidates", "--- SKIP: TestCorpus", "SHMDOCTOR_CORPUS is not set"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("go test output lacks %q\n%s", want, r.stdout)
		}
	}
}
