//go:build linux

package watch

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// hungSocket is a fake daemon for the one thing a test must not do to the shared engine:
// hang it (SIGSTOP). It is a unix socket that accepts connections and never answers, as a
// stopped dockerd's socket does; it returns the DOCKER_HOST to use.
func hungSocket(t *testing.T) string {
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
	return "unix://" + sock
}

// hungClient is a client of a daemon that accepts and never answers (hungSocket), closed at
// the end of the test.
func hungClient(t *testing.T) (*client.Client, string) {
	t.Helper()
	host := hungSocket(t)
	c, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, host
}

// TestWatchHungDaemon: a watch whose daemon stops answering does not pass for a full watch
// that --duration ended: it returns an error that says the daemon stopped answering.
func TestWatchHungDaemon(t *testing.T) {
	t.Parallel()
	c, host := hungClient(t)
	_, err := Watch(context.Background(), c, Options{Project: "hung", Duration: time.Second, Interval: 100 * time.Millisecond, Method: "df"})
	if err == nil || !strings.Contains(err.Error(), "the Docker daemon at "+host+" stopped answering") {
		t.Errorf("Watch: %v, want an error saying the daemon stopped answering", err)
	}
	t.Logf("Watch: %v", err)
}

// TestWatchDeadDaemon: a watch whose daemon is gone (nothing listens on its socket any more)
// ends at once with an error that says so.
func TestWatchDeadDaemon(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.WithHost("unix://" + filepath.Join(t.TempDir(), "gone.sock")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Watch(context.Background(), c, Options{Project: "gone", Duration: time.Hour, Method: "df"})
	if err == nil || !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("Watch: %v, want an error saying the daemon stopped answering", err)
	}
	t.Logf("Watch: %v", err)
}
