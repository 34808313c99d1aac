// Package enginetest is what the tests of engine, probe and watch share: a scratch folder
// with run locks of the test process's own, the agent built for the tests, a daemon that
// never answers, and containers made to be found as leftovers. It imports nothing of the
// module, so that engine's own tests can use it.
package enginetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// Scratch is a test process's folder: its run locks (XDG_RUNTIME_DIR points there, so that
// the doctors other test processes run at the same time neither see nor are seen by these
// tests) and the agent built for the tests (a test binary is not the doctor).
type Scratch struct {
	Dir   string
	Locks string // XDG_RUNTIME_DIR
	Agent string // a static linux binary holding the agent
}

// NewScratch makes the folder, points XDG_RUNTIME_DIR into it and builds the agent there.
// Remove removes it.
func NewScratch(name string) (*Scratch, error) {
	dir, err := os.MkdirTemp("", "shmdoctor-"+name+"-test")
	if err != nil {
		return nil, err
	}
	s := &Scratch{Dir: dir, Locks: filepath.Join(dir, "run"), Agent: filepath.Join(dir, "shmdoctor")}
	if err := os.Mkdir(s.Locks, 0o700); err != nil {
		s.Remove()
		return nil, err
	}
	os.Setenv("XDG_RUNTIME_DIR", s.Locks)
	root, err := testutil.ModuleRoot()
	if err != nil {
		s.Remove()
		return nil, err
	}
	build := exec.Command("go", "build", "-o", s.Agent, "./agent/internal/agentcmd")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		s.Remove()
		return nil, fmt.Errorf("building the test agent: %v\n%s", err, out)
	}
	return s, nil
}

// LocksLeft lists the run lock files still there: a run that ended must have removed its own.
func (s *Scratch) LocksLeft() []string {
	left, _ := filepath.Glob(filepath.Join(s.Locks, "shmdoctor", "*.lock"))
	return left
}

// Remove removes the folder.
func (s *Scratch) Remove() { os.RemoveAll(s.Dir) }

// HungClient is a client of a fake daemon for the one thing a test must not do to the shared
// engine: hang it (SIGSTOP). Its unix socket accepts connections and never answers, as a
// stopped dockerd's does. It returns the client and its DOCKER_HOST; both go with the test.
func HungClient(t *testing.T) (*client.Client, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "hung.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	host := "unix://" + sock
	c, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, host
}

// Leftover creates a container of image with these labels, never started, removed when the
// test ends.
func Leftover(t *testing.T, c *client.Client, image string, labels map[string]string) string {
	t.Helper()
	return Create(t, c, client.ContainerCreateOptions{Image: image, Config: &container.Config{Labels: labels}})
}

// Create creates a container, removed when the test ends, and returns its id.
func Create(t *testing.T, c *client.Client, o client.ContainerCreateOptions) string {
	t.Helper()
	res, err := c.ContainerCreate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	return res.ID
}

// Start creates and starts a container, removed when the test ends, and returns its id.
func Start(t *testing.T, c *client.Client, o client.ContainerCreateOptions) string {
	t.Helper()
	id := Create(t, c, o)
	if _, err := c.ContainerStart(context.Background(), id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return id
}

// Exists reports whether the daemon still has the container.
func Exists(t *testing.T, c *client.Client, id string) bool {
	t.Helper()
	_, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
