package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/shmdoctor/shmdoctor/internal/tail"
)

// sshDialer returns a dialer for an ssh:// daemon host that does what the docker CLI does:
// run `docker system dial-stdio` on the remote host through the local ssh client and speak
// HTTP over its stdin and stdout.
func sshDialer(host string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("parsing ssh host %q: %w", host, err)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("parsing ssh host %q: want ssh://[user@]host[:port]", host)
	}
	args := []string{"-o", "ConnectTimeout=30", "-T"}
	if u.User != nil {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	args = append(args, "--", u.Hostname(), "docker", "system", "dial-stdio")
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		// The connection outlives the dial context, so the command does not take it.
		cmd := exec.Command("ssh", args...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		errPipe, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting ssh to %s: %w", u.Hostname(), err)
		}
		c := &cmdConn{cmd: cmd, w: stdin, r: stdout, host: u.Redacted(), stderr: &tail.Buffer{}, stderrDone: make(chan struct{})}
		go func() {
			defer close(c.stderrDone)
			_, _ = io.Copy(c.stderr, errPipe)
		}()
		return c, nil
	}, nil
}

// cmdConn is a net.Conn over a command's stdin and stdout. host is the daemon host as the
// user gave it (ssh://user@host), which errors name.
type cmdConn struct {
	cmd    *exec.Cmd
	w      io.WriteCloser
	r      io.ReadCloser
	host   string
	stderr *tail.Buffer
	// stderrDone is closed once ssh's stderr is at its end: ssh has exited.
	stderrDone chan struct{}
	once       sync.Once
}

// sshExitWait bounds how long a read at the end of ssh's output waits for ssh to exit and
// its last words to be read.
const sshExitWait = 5 * time.Second

// Read fails with what ssh said when the stream ends on an ssh that failed (an unknown host,
// a refused key, no docker on the remote side): a bare EOF would say nothing.
func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		// ssh closes its stdout before its stderr is read to the end: wait for the end, so
		// that its message is not lost to the race.
		c.waitStderr()
		if msg := c.stderr.String(); msg != "" {
			err = sshError(msg)
		}
	}
	return n, err
}
func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.w.Close()
		_ = c.r.Close()
		if c.cmd.Process != nil {
			_ = c.cmd.Process.Kill()
		}
		// Wait closes the stderr pipe: only once it has been read to its end.
		c.waitStderr()
		_ = c.cmd.Wait()
	})
	return nil
}

// waitStderr waits, at most sshExitWait, until ssh's stderr has been read to its end.
func (c *cmdConn) waitStderr() {
	t := time.NewTimer(sshExitWait)
	defer t.Stop()
	select {
	case <-c.stderrDone:
	case <-t.C:
	}
}

func (c *cmdConn) LocalAddr() net.Addr              { return sshAddr("local") }
func (c *cmdConn) RemoteAddr() net.Addr             { return sshAddr(c.host) }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

// sshError is what ssh printed when it failed: the cause a user can act on.
type sshError string

func (e sshError) Error() string {
	if strings.HasPrefix(string(e), "ssh:") {
		return string(e)
	}
	return "ssh: " + string(e)
}

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }
