package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
)

// The docker CLI runs ~/.docker/cli-plugins/docker-shmdoctor first with
// "docker-cli-plugin-metadata", then as `docker-shmdoctor shmdoctor ARGS...` for
// `docker shmdoctor ARGS...`.
const pluginMetadataCommand = "docker-cli-plugin-metadata"

// pluginMetadata answers the docker CLI's plugin metadata call.
func pluginMetadata(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	err := enc.Encode(map[string]string{
		"SchemaVersion":    "0.1.0",
		"Vendor":           "shmdoctor",
		"Version":          versionString(),
		"ShortDescription": "Find /dev/shm and IPC misconfiguration in compose stacks",
		"URL":              "https://github.com/shmdoctor/shmdoctor",
	})
	return exitClean, err
}

// pluginArgs turns the docker CLI's plugin call, `docker-shmdoctor [GLOBAL OPTIONS] shmdoctor
// ARGS...`, into the doctor's own ARGS. The global options that choose the daemon (--context,
// --host, --config) become the environment the doctor's client reads, so that
// `docker --context remote shmdoctor` probes the remote engine; without them the docker CLI's
// current context in its config file applies, which the client reads too.
func pluginArgs(argv0 string, args []string, setenv func(key, value string) error) []string {
	if !strings.HasPrefix(filepath.Base(argv0), "docker-") {
		return args
	}
	env := map[string]string{"--context": "DOCKER_CONTEXT", "-c": "DOCKER_CONTEXT", "--host": "DOCKER_HOST", "-H": "DOCKER_HOST", "--config": "DOCKER_CONFIG"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "shmdoctor" {
			return args[i+1:]
		}
		name, value, inline := strings.Cut(a, "=")
		key, ok := env[name]
		if !ok {
			continue // other global options (--debug, --log-level X, --tls...) do not matter here
		}
		if !inline && i+1 < len(args) {
			i++
			value = args[i]
		}
		_ = setenv(key, value)
	}
	return args
}
