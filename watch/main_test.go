//go:build linux

package watch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/enginetest"
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
	scratch, err := enginetest.NewScratch("watch")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer scratch.Remove()
	testAgent = scratch.Agent

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
	if left := scratch.LocksLeft(); len(left) > 0 {
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
	image, err := engine.Image(context.Background(), daemon(t), testAgent)
	if err != nil {
		t.Fatal(err)
	}
	return enginetest.Leftover(t, daemon(t), image, labels)
}

func exists(t *testing.T, id string) bool {
	t.Helper()
	return enginetest.Exists(t, daemon(t), id)
}
