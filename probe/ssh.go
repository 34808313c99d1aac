package probe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"sync"
	"time"
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
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting ssh to %s: %w", u.Hostname(), err)
		}
		return &cmdConn{cmd: cmd, w: stdin, r: stdout, host: u.Hostname()}, nil
	}, nil
}

// cmdConn is a net.Conn over a command's stdin and stdout.
type cmdConn struct {
	cmd  *exec.Cmd
	w    io.WriteCloser
	r    io.ReadCloser
	host string
	once sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.w.Close()
		_ = c.r.Close()
		if c.cmd.Process != nil {
			_ = c.cmd.Process.Kill()
		}
		_ = c.cmd.Wait()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr              { return sshAddr("local") }
func (c *cmdConn) RemoteAddr() net.Addr             { return sshAddr(c.host) }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }
