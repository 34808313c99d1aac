//go:build linux

package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/engine"
)

// The watch tests run against the real Docker daemon the environment names (DOCKER_HOST,
// contexts), as the probe's do; they fail when none answers.
var (
	testAgent  string // the agent binary built for the tests
	testClient *client.Client
	dockerErr  error
	// testPrefix starts the project of every test of this process.
	testPrefix = "watch-test-" + engine.NewRunID()[:6]
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shmdoctor-watch-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Run locks go to a directory of this process's own.
	locks := filepath.Join(dir, "run")
	if err := os.Mkdir(locks, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("XDG_RUNTIME_DIR", locks)

	// The test binary is not the doctor: build a static binary holding the agent.
	testAgent = filepath.Join(dir, "shmdoctor")
	build := exec.Command("go", "build", "-o", testAgent, "../agent/internal/agentcmd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test agent: %v\n%s", err, out)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, closeClient, err := engine.NewClient(ctx)
	if err == nil {
		defer closeClient()
		err = engine.Ping(ctx, c)
	}
	if err != nil {
		dockerErr = err
	} else {
		testClient = c.(*client.Client)
	}
	code := m.Run()
	if left, _ := filepath.Glob(filepath.Join(locks, "shmdoctor", "*.lock")); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lock files left: %v\n", left)
		code = 1
	}
	return code
}

// daemon returns the real client, failing without one.
func daemon(t *testing.T) *client.Client {
	t.Helper()
	if testClient == nil {
		t.Fatalf("these tests need a Docker daemon: %v", dockerErr)
	}
	return testClient
}

// testWatch is what a test watches: a project of its own.
type testWatch struct{ Project string }

// testOptions gives each test its own project, so that what it checks is its own while
// other tests share the daemon.
func testOptions(t *testing.T) testWatch {
	t.Helper()
	daemon(t)
	return testWatch{Project: testPrefix + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))}
}

// leftoverLabelled creates a container of the probe image with these labels, never started,
// removed when the test ends.
func leftoverLabelled(t *testing.T, labels map[string]string) string {
	t.Helper()
	c := daemon(t)
	image, err := engine.Image(context.Background(), c, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ContainerCreate(context.Background(), client.ContainerCreateOptions{Image: image, Config: &container.Config{Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	return res.ID
}

func exists(t *testing.T, id string) bool {
	t.Helper()
	_, err := daemon(t).ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
