package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-connections/tlsconfig"
	"github.com/moby/moby/client"
)

// Client is the narrow Docker interface the probe needs: only the calls it makes.
// *client.Client satisfies it; tests wrap it to simulate a daemon that stops answering.
type Client interface {
	DaemonHost() string
	ClientVersion() string
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)

	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImageImport(ctx context.Context, source client.ImageImportSource, ref string, options client.ImageImportOptions) (client.ImageImportResult, error)
	ImageList(ctx context.Context, options client.ImageListOptions) (client.ImageListResult, error)
	ImageRemove(ctx context.Context, image string, options client.ImageRemoveOptions) (client.ImageRemoveResult, error)

	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, container string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerWait(ctx context.Context, container string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerInspect(ctx context.Context, container string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerLogs(ctx context.Context, container string, options client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerRemove(ctx context.Context, container string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)

	// The calls of watch: the companion's stream, the stats API and df in the container.
	ContainerAttach(ctx context.Context, container string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStats(ctx context.Context, container string, options client.ContainerStatsOptions) (client.ContainerStatsResult, error)
	ExecCreate(ctx context.Context, container string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)

	VolumeInspect(ctx context.Context, volumeID string, options client.VolumeInspectOptions) (client.VolumeInspectResult, error)
}

var _ Client = (*client.Client)(nil)

// Endpoint is where the Docker client connects and how, as resolved from the environment.
type Endpoint struct {
	// Host is the daemon address: unix:///var/run/docker.sock, tcp://host:2376, ssh://user@host.
	Host string `json:"host"`
	// Context is the docker CLI context it came from ("default" when none is selected).
	Context string `json:"context"`
	// From says which setting chose it: "DOCKER_HOST", "DOCKER_CONTEXT", "config" or "default".
	From string `json:"from"`
	// CertPath is the directory holding ca.pem, cert.pem and key.pem, empty without TLS.
	CertPath string `json:"cert_path,omitempty"`
	// TLSVerify verifies the daemon's certificate against ca.pem.
	TLSVerify bool `json:"tls_verify,omitempty"`
}

// ResolveEndpoint finds the daemon the way the docker CLI does: DOCKER_HOST wins, then
// DOCKER_CONTEXT, then currentContext in the CLI config (DOCKER_CONFIG or ~/.docker), then the
// platform default. TLS comes from DOCKER_TLS_VERIFY/DOCKER_CERT_PATH with DOCKER_HOST, or from
// the context's TLS store.
func ResolveEndpoint() (Endpoint, error) {
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		ep := Endpoint{Host: host, Context: "default", From: "DOCKER_HOST"}
		verify := os.Getenv("DOCKER_TLS_VERIFY") != ""
		certPath := os.Getenv("DOCKER_CERT_PATH")
		if certPath == "" && verify {
			certPath = configDir()
		}
		ep.CertPath, ep.TLSVerify = certPath, verify
		return ep, nil
	}
	name, from := os.Getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
	if name == "" {
		current, err := currentContext()
		if err != nil {
			return Endpoint{}, err
		}
		name, from = current, "config"
	}
	if name == "" || name == "default" {
		return Endpoint{Host: client.DefaultDockerHost, Context: "default", From: "default"}, nil
	}
	return contextEndpoint(name, from)
}

func configDir() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".docker"
	}
	return filepath.Join(home, ".docker")
}

func currentContext() (string, error) {
	path := filepath.Join(configDir(), "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading docker config %s: %w", path, err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("reading docker config %s: %w", path, err)
	}
	return cfg.CurrentContext, nil
}

// contextEndpoint reads the docker CLI context store: contexts/meta/<sha256(name)>/meta.json
// and, for TLS, contexts/tls/<sha256(name)>/docker/{ca,cert,key}.pem.
func contextEndpoint(name, from string) (Endpoint, error) {
	id := contextID(name)
	path := filepath.Join(configDir(), "contexts", "meta", id, "meta.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Endpoint{}, fmt.Errorf("docker context %q (from %s) does not exist: no %s", name, from, path)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("reading docker context %q: %w", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("reading docker context %q from %s: %w", name, path, err)
	}
	docker, ok := meta.Endpoints["docker"]
	if !ok || docker.Host == "" {
		return Endpoint{}, fmt.Errorf("docker context %q has no docker endpoint (%s)", name, path)
	}
	ep := Endpoint{Host: docker.Host, Context: name, From: from}
	tlsDir := filepath.Join(configDir(), "contexts", "tls", id, "docker")
	if _, err := os.Stat(tlsDir); err == nil {
		ep.CertPath, ep.TLSVerify = tlsDir, !docker.SkipTLSVerify
	}
	return ep, nil
}

// contextID is the directory name of a context in the docker CLI's context store.
func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// NewClient builds a Docker client from the environment (see ResolveEndpoint) with API
// version negotiation (DOCKER_API_VERSION pins a version). It does not contact the daemon:
// call Ping for that. The returned function closes the client.
func NewClient(ctx context.Context) (Client, func() error, error) {
	ep, err := ResolveEndpoint()
	if err != nil {
		return nil, nil, err
	}
	c, err := NewClientFor(ep)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(ep.Host, "ssh://") {
		u, _ := url.Parse(ep.Host) // sshDialer parsed it already
		return sshClient{c, u.Redacted()}, c.Close, nil
	}
	return c, c.Close, nil
}

// sshClient is a client whose connections go through ssh: the client's own host is a
// placeholder, so the daemon is named as the user gave it (ssh://user@host).
type sshClient struct {
	*client.Client
	host string
}

// DaemonHost is the ssh:// address of the daemon.
func (c sshClient) DaemonHost() string { return c.host }

// NewClientFor is a client of the daemon at ep, with the API version negotiated; the
// caller closes it.
func NewClientFor(ep Endpoint) (*client.Client, error) {
	var opts []client.Opt
	if ep.CertPath != "" {
		tlsOpts := tlsconfig.Options{InsecureSkipVerify: !ep.TLSVerify}
		for _, f := range []struct {
			dst  *string
			name string
		}{{&tlsOpts.CAFile, "ca.pem"}, {&tlsOpts.CertFile, "cert.pem"}, {&tlsOpts.KeyFile, "key.pem"}} {
			if p := filepath.Join(ep.CertPath, f.name); fileExists(p) {
				*f.dst = p
			}
		}
		cfg, err := tlsconfig.Client(tlsOpts)
		if err != nil {
			return nil, fmt.Errorf("loading TLS material from %s: %w", ep.CertPath, err)
		}
		opts = append(opts, client.WithHTTPClient(&http.Client{
			Transport:     &http.Transport{TLSClientConfig: cfg},
			CheckRedirect: client.CheckRedirect,
		}))
	}
	if strings.HasPrefix(ep.Host, "ssh://") {
		dial, err := sshDialer(ep.Host)
		if err != nil {
			return nil, err
		}
		// The host only names the HTTP authority; every connection goes through ssh.
		opts = append(opts, client.WithHost("http://docker.example.com"), client.WithDialContext(dial))
	} else {
		opts = append(opts, client.WithHost(ep.Host))
	}
	opts = append(opts, client.WithAPIVersionFromEnv(), client.WithUserAgent("shmdoctor"))
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Docker client for %s (%s): %w", ep.Host, ep.From, err)
	}
	return c, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Ping checks that a daemon answers and negotiates the API version. The error is one line
// naming the daemon address, for example
// `cannot reach the Docker daemon at unix:///nope.sock: dial unix /nope.sock: connect: no such file or directory`.
//
// A daemon that accepts the connection but does not answer (hung, stopped) is given until
// ctx's deadline, DefaultPingTimeout without one, and the error says so:
// `the Docker daemon at unix:///var/run/docker.sock did not answer within 20s`.
func Ping(ctx context.Context, c Client) error {
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultPingTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the Docker daemon at %s did not answer within %s", c.DaemonHost(), roundWait(deadline.Sub(start)))
		}
		return fmt.Errorf("cannot reach the Docker daemon at %s: %s", c.DaemonHost(), Reason(err))
	}
	return nil
}

// DefaultPingTimeout bounds Ping when its context has no deadline.
const DefaultPingTimeout = 15 * time.Second

// roundWait rounds a wait for messages: whole seconds from a second up.
func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}

// reason reduces a client error to its cause on one line: the network error when there is
// one, otherwise the daemon's own message without the client's decoration.
func Reason(err error) string {
	var sshErr sshError
	if errors.As(err, &sshErr) {
		return sshErr.Error()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return OneLine(opErr.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the daemon did not answer in time"
	}
	msg := DockerMessage(err)
	if strings.HasPrefix(msg, "Cannot connect to the Docker daemon") {
		return "connection refused or timed out; is the docker daemon running?"
	}
	return msg
}

// DockerMessage is the daemon's message for err, without "Error response from daemon: ".
func DockerMessage(err error) string {
	msg := OneLine(err.Error())
	return strings.TrimPrefix(msg, "Error response from daemon: ")
}

func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
