//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"github.com/shmdoctor/shmdoctor/probe"
)

// cmdEngine is an engine the doctor's binary is run against: env points it there.
type cmdEngine struct {
	name   string
	env    []string
	engine analyze.Engine
}

var podmanNote sync.Once

// cmdEngines lists Docker (the environment's daemon) and, when engine.PodmanHostEnv names
// one, the Podman service; without it it says so in one line and lists Docker alone.
func cmdEngines() []cmdEngine {
	out := []cmdEngine{{name: "docker", engine: analyze.Docker}}
	host := os.Getenv(engine.PodmanHostEnv)
	if host == "" {
		podmanNote.Do(func() {
			fmt.Fprintf(os.Stderr, "%s is not set: the doctor's engine tests run against Docker only\n", engine.PodmanHostEnv)
		})
		return out
	}
	return append(out, cmdEngine{name: "podman", env: []string{"DOCKER_HOST=" + host, "DOCKER_CONTEXT="}, engine: analyze.Podman})
}

// TestEngines runs `host` and a check against every engine: Podman is named, its defaults
// (62.5 MiB /dev/shm, shareable IPC) are predicted and measured without a false finding,
// and --target podman is inferred unless given.
func TestEngines(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "name: engines\nservices:\n" +
		"  plain:\n    image: alpine\n" +
		"  donor:\n    image: alpine\n" +
		"  joiner:\n    image: alpine\n    ipc: service:donor\n" +
		"  host:\n    image: alpine\n    ipc: host\n    shm_size: 1g\n"})
	for _, e := range cmdEngines() {
		t.Run(e.name, func(t *testing.T) {
			code, out, errs := doctor(t, e.env, "host", "--format", "json", "--need", "32m")
			if code != exitClean {
				t.Fatalf("host: exit %d: %s", code, errs)
			}
			var h map[string]any
			if err := json.Unmarshal([]byte(out), &h); err != nil {
				t.Fatal(err)
			}
			if h["engine"] != e.engine.Name || h["default_shm_bytes"] != float64(e.engine.DefaultShm) || h["can_give"] != true {
				t.Errorf("host: engine %v, default /dev/shm %v, can give %v; want %s, %d, true", h["engine"], h["default_shm_bytes"], h["can_give"], e.engine.Name, e.engine.DefaultShm)
			}
			if _, out, _ := doctor(t, e.env, "host"); !strings.Contains(out, "("+e.engine.Name+" ") {
				t.Errorf("host names no %s:\n%s", e.engine.Name, out)
			}

			_, out, errs = doctor(t, e.env, "--format", "json", "--fail-on", "never", dir)
			var doc probeDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Projects) != 1 {
				t.Fatalf("check: %v\n%s\n%s", err, out, errs)
			}
			rules := map[string][]string{}
			for _, f := range doc.Projects[0].Findings {
				rules[f.Service] = append(rules[f.Service], f.Rule)
			}
			for _, s := range doc.Projects[0].Services {
				if s.Name != "plain" {
					continue
				}
				if s.Probe == nil || s.Probe.Write == nil || s.Shm.PredictedBytes == nil || s.Probe.MeasuredBytes == nil {
					t.Fatalf("plain: no prediction or measurement:\n%s", out)
				}
				if *s.Shm.PredictedBytes != e.engine.DefaultShm || *s.Probe.MeasuredBytes != e.engine.DefaultShm || s.Probe.Write.Outcome != "ok" {
					t.Errorf("plain: predicted %d, measured %d, write %s; want %d, %d, ok", *s.Shm.PredictedBytes, *s.Probe.MeasuredBytes, s.Probe.Write.Outcome, e.engine.DefaultShm, e.engine.DefaultShm)
				}
			}
			if len(rules["plain"]) > 0 {
				t.Errorf("plain: findings %v, want none", rules["plain"])
			}
			if podman := e.engine.Name == "Podman"; contains(rules["joiner"], "SHM006") == podman {
				t.Errorf("joiner: findings %v: SHM006 only where the default IPC mode is private", rules["joiner"])
			}
			if e.engine.Refuses("host") && !strings.Contains(out, `"message": "`+strings.ToLower(e.engine.Name)+` refused the service's settings`) {
				t.Errorf("host: SHM205 does not name %s:\n%s", e.engine.Name, out)
			}

			// A target given wins over the engine's.
			_, out, _ = doctor(t, e.env, "--target", "compose", "--probe", "auto", "--format", "json", "--fail-on", "never", dir)
			if !strings.Contains(out, `"rule": "SHM006"`) {
				t.Errorf("--target compose: no SHM006:\n%s", out)
			}
		})
	}
}

// TestHostNeedUnmeasured: `host --need` cannot answer yes or no when the host's memory or
// the default /dev/shm was not measured: that is exit 2, never 1 (not enough memory). The
// host infos are built here: a real engine that fails to measure cannot be arranged.
func TestHostNeedUnmeasured(t *testing.T) {
	mem, shm := int64(8<<30), int64(64<<20)
	for _, tc := range []struct {
		name string
		info probe.HostInfo
		need int64
		code int
	}{
		{"measured", probe.HostInfo{MemAvailableBytes: &mem, DefaultShmBytes: &shm}, 1 << 30, exitClean},
		{"too much", probe.HostInfo{MemAvailableBytes: &mem, DefaultShmBytes: &shm}, 16 << 30, exitFindings},
		{"no default /dev/shm", probe.HostInfo{MemAvailableBytes: &mem}, 1 << 30, exitUsage},
		{"no memory", probe.HostInfo{DefaultShmBytes: &shm}, 1 << 30, exitUsage},
	} {
		code, err := canGive(&tc.info, tc.need)
		if code != tc.code || (code == exitClean) != (err == nil) {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, code, err, tc.code)
		}
	}
}
