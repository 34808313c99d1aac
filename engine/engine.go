package engine

import (
	"context"
	"strings"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// PodmanHostEnv names the DOCKER_HOST of a Podman service (podman system service, which
// scripts/podman-service starts on a private socket) for the tests: with it set, the engine
// tests run against both Docker and Podman; .ci/run always sets it.
const PodmanHostEnv = "SHMDOCTOR_PODMAN_HOST"

// EngineOf names the engine that answers the Docker API from its version response. Podman's
// Docker-compatible service lists a "Podman Engine" component (and some versions name it in
// Platform.Name); every other engine is taken for Docker.
func EngineOf(v client.ServerVersionResult) analyze.Engine {
	if strings.Contains(strings.ToLower(v.Platform.Name), "podman") {
		return analyze.Podman
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return analyze.Podman
		}
	}
	return analyze.Docker
}

// DetectEngine asks the daemon for its version and names its engine; the version string
// is the engine's own (Podman 4.3.1, Docker 20.10.24).
func DetectEngine(ctx context.Context, c Client) (analyze.Engine, client.ServerVersionResult, error) {
	v, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return analyze.Docker, v, err
	}
	return EngineOf(v), v, nil
}

// TargetOf is the --target the engine implies: podman for Podman, compose otherwise.
func TargetOf(e analyze.Engine) analyze.Target {
	if e.Name == analyze.Podman.Name {
		return analyze.TargetPodman
	}
	return analyze.TargetCompose
}
