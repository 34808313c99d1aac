//go:build linux

package probe

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// testEngine is one engine the tests run against: its client and the defaults the tests
// expect of it.
type testEngine struct {
	name   string
	c      *client.Client
	engine analyze.Engine
}

var (
	podmanClient *client.Client
	podmanErr    error
)

// connectPodman connects to the Podman service PodmanHostEnv names, if it names one, and
// says in one line that the tests run against Docker only when it names none.
func connectPodman(ctx context.Context) {
	host := os.Getenv(engine.PodmanHostEnv)
	if host == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: the probe tests run against Docker only (scripts/podman-service starts a Podman service)\n", engine.PodmanHostEnv)
		return
	}
	c, err := engine.NewClientFor(engine.Endpoint{Host: host, From: engine.PodmanHostEnv})
	if err == nil {
		if err = engine.Ping(ctx, c); err != nil {
			c.Close()
		}
	}
	if err != nil {
		podmanErr = fmt.Errorf("%s=%s: %w", engine.PodmanHostEnv, host, err)
		return
	}
	podmanClient = c
}

// engines lists the engines to test against: Docker, then Podman when PodmanHostEnv names
// one. A Podman service that was named but does not answer fails the test.
func engines(t *testing.T) []testEngine {
	t.Helper()
	out := []testEngine{{name: "docker", c: daemon(t), engine: analyze.Docker}}
	if podmanErr != nil {
		t.Fatalf("the Podman service does not answer: %v", podmanErr)
	}
	if podmanClient != nil {
		out = append(out, testEngine{name: "podman", c: podmanClient, engine: analyze.Podman})
	}
	return out
}

// forEachEngine runs f as a parallel subtest per engine, named after it.
func forEachEngine(t *testing.T, f func(t *testing.T, e testEngine)) {
	t.Helper()
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// TestDetectEngine: each engine's version response names it, and it implies its target.
func TestDetectEngine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		got, v, err := engine.DetectEngine(context.Background(), e.c)
		if err != nil {
			t.Fatalf("DetectEngine: %v", err)
		}
		if got.Name != e.engine.Name {
			t.Errorf("engine %q (platform %q, components %+v), want %q", got.Name, v.Platform.Name, v.Components, e.engine.Name)
		}
		if want := map[string]analyze.Target{"Docker": analyze.TargetCompose, "Podman": analyze.TargetPodman}[e.engine.Name]; engine.TargetOf(got) != want {
			t.Errorf("target %q, want %q", engine.TargetOf(got), want)
		}
	})
}
