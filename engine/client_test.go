//go:build linux

package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// daemonHost is the address of the Docker daemon the environment names, failing without one.
func daemonHost(t *testing.T) string {
	t.Helper()
	c, closeClient, err := NewClient(context.Background())
	if err != nil {
		t.Fatalf("these tests need a Docker daemon: %v", err)
	}
	defer closeClient()
	if err := Ping(context.Background(), c); err != nil {
		t.Fatalf("these tests need a Docker daemon: %v", err)
	}
	return c.DaemonHost()
}

func TestSSHDialer(t *testing.T) {
	if _, err := sshDialer("ssh://user@build-host:2222"); err != nil {
		t.Errorf("ssh://user@build-host:2222: %v", err)
	}
	for _, bad := range []string{"ssh://", "ssh://host/path"} {
		if _, err := sshDialer(bad); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

// TestSSHError: a daemon behind ssh:// is named as the user gave it, not by the client's
// placeholder host, with what ssh said (here: nothing listens on port 1), not a bare EOF.
func TestSSHError(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	t.Setenv("DOCKER_HOST", "ssh://someone@127.0.0.1:1")
	c, closeClient, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	err = Ping(context.Background(), c)
	want := "cannot reach the Docker daemon at ssh://someone@127.0.0.1:1: ssh: connect to host 127.0.0.1 port 1: Connection refused"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestSSHErrorAfterStdout: an ssh that closes its stdout before it prints its error (the
// order is a race with a real ssh; this stand-in on PATH, a fake for that order alone, makes
// it certain) still has its error reported, not a bare EOF.
func TestSSHErrorAfterStdout(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\nexec 1>&-\nsleep 0.3\necho 'ssh: connect to host example port 22: Connection refused' >&2\nexit 255\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DOCKER_HOST", "ssh://someone@example")
	c, closeClient, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	err = Ping(context.Background(), c)
	want := "cannot reach the Docker daemon at ssh://someone@example: ssh: connect to host example port 22: Connection refused"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestContextClient: a client built from a docker CLI context (config currentContext) that
// points at this daemon answers; one pointing nowhere names its address in the error.
func TestContextClient(t *testing.T) {
	host := daemonHost(t)
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	writeContext(t, dir, "here", host, false)
	writeContext(t, dir, "nowhere", "unix:///nonexistent/docker.sock", false)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"here"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, closeClient, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	if err := Ping(context.Background(), c); err != nil {
		t.Errorf("context here: %v", err)
	}
	if c.ClientVersion() == "" {
		t.Error("no API version negotiated")
	}
	t.Setenv("DOCKER_CONTEXT", "nowhere")
	c2, close2, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	if err := Ping(context.Background(), c2); err == nil || !strings.Contains(err.Error(), "unix:///nonexistent/docker.sock") {
		t.Errorf("context nowhere: %v", err)
	}
}
