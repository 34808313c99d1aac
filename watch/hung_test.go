//go:build linux

package watch

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

// TestWatchHungDaemon: a watch whose daemon stops answering does not pass for a full watch
// that --duration ended: it returns an error that says the daemon stopped answering.
func TestWatchHungDaemon(t *testing.T) {
	t.Parallel()
	c, host := enginetest.HungClient(t)
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
