//go:build linux

package engine

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// TestSelectAgent: the doctor's binary when it is a static linux one for the daemon's
// architecture, else an embedded agent, else an error that says how to get one.
func TestSelectAgent(t *testing.T) {
	a, err := SelectAgent(testAgent, "linux", "amd64")
	if err != nil || a.from != testAgent || len(a.digest) != 64 || a.ref() != "shmdoctor-probe:"+a.digest[:12] {
		t.Fatalf("static agent: %v %+v", err, a)
	}
	_, err = SelectAgent(testAgent, "linux", "arm64")
	if err == nil || !strings.Contains(err.Error(), "is a linux/amd64 executable") || !strings.Contains(err.Error(), "CGO_ENABLED=0 GOOS=linux GOARCH=arm64") {
		t.Errorf("wrong arch: %v", err)
	}
	script := filepath.Join(t.TempDir(), "doctor")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = SelectAgent(script, "linux", "amd64")
	if err == nil || !strings.Contains(err.Error(), "not an ELF executable") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("not ELF: %v", err)
	}
	if _, err := SelectAgent(testAgent, "windows", "amd64"); err == nil || !strings.Contains(err.Error(), "needs a linux daemon") {
		t.Errorf("windows daemon: %v", err)
	}

	// A release build's agents, as `make release` compresses them.
	saved := embeddedAgents
	t.Cleanup(func() {
		embeddedAgents = saved
		forgetAgents()
	})
	forgetAgents()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("arm64 agent"))
	_ = zw.Close()
	embeddedAgents = fstest.MapFS{"agents/linux-arm64.gz": {Data: gz.Bytes()}, "agents/linux-amd64.gz": {Data: []byte("not gzip")}}
	if got := EmbeddedAgents(); !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("EmbeddedAgents() = %v", got)
	}
	if a, err := SelectAgent(script, "linux", "arm64"); err != nil || a.from != "embedded" || string(a.data) != "arm64 agent" {
		t.Errorf("embedded: %v %+v", err, a)
	}
	if _, err := SelectAgent(script, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "reading the embedded linux/amd64 agent") {
		t.Errorf("corrupt embedded agent: %v", err)
	}
	// SHMDOCTOR_PROBE_AGENT=embedded skips the doctor's own binary, even a usable one.
	t.Setenv(AgentEnv, "embedded")
	// The digest is known by now: the bytes are read again only to make the image.
	if a, err := SelectAgent("", "linux", "arm64"); err != nil || a.from != "embedded" || a.digest != agentDigest([]byte("arm64 agent"), nil) {
		t.Errorf("%s=embedded: %v %+v", AgentEnv, err, a)
	} else if files, err := a.files(); err != nil || string(files[0].data) != "arm64 agent" {
		t.Errorf("%s=embedded: image files %v, %v", AgentEnv, files, err)
	}
	if _, err := SelectAgent("", "linux", "riscv64"); err == nil || !strings.Contains(err.Error(), AgentEnv+" is embedded and this build embeds no agent for it") {
		t.Errorf("%s=embedded without an agent: %v", AgentEnv, err)
	}
	t.Setenv(AgentEnv, "self")
	if _, err := SelectAgent("", "linux", "arm64"); err == nil || !strings.Contains(err.Error(), `SHMDOCTOR_PROBE_AGENT="self": the only value is embedded`) {
		t.Errorf("%s=self: %v", AgentEnv, err)
	}
	if goos, goarch := DaemonPlatform("linux", "x86_64"); goos != "linux" || goarch != "amd64" {
		t.Errorf("DaemonPlatform: %s/%s", goos, goarch)
	}
}

// TestResolveEndpoint: DOCKER_HOST, then DOCKER_CONTEXT, then the config's currentContext,
// with the context store's TLS material.
func TestResolveEndpoint(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")

	if ep, err := ResolveEndpoint(); err != nil || ep.From != "default" || ep.Host == "" {
		t.Errorf("no config: %+v %v", ep, err)
	}
	writeContext(t, dir, "remote", "tcp://10.0.0.1:2376", true)
	writeContext(t, dir, "local", "unix:///run/other.sock", false)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"remote"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, err := ResolveEndpoint()
	if err != nil || ep.Host != "tcp://10.0.0.1:2376" || ep.Context != "remote" || ep.From != "config" || !ep.TLSVerify ||
		ep.CertPath != filepath.Join(dir, "contexts", "tls", contextID("remote"), "docker") {
		t.Errorf("current context: %+v %v", ep, err)
	}
	t.Setenv("DOCKER_CONTEXT", "local")
	if ep, err := ResolveEndpoint(); err != nil || ep.Host != "unix:///run/other.sock" || ep.From != "DOCKER_CONTEXT" || ep.CertPath != "" {
		t.Errorf("DOCKER_CONTEXT: %+v %v", ep, err)
	}
	t.Setenv("DOCKER_CONTEXT", "missing")
	if _, err := ResolveEndpoint(); err == nil || !strings.Contains(err.Error(), `docker context "missing"`) {
		t.Errorf("missing context: %v", err)
	}
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
	if ep, err := ResolveEndpoint(); err != nil || ep.Host != "tcp://127.0.0.1:2375" || ep.From != "DOCKER_HOST" {
		t.Errorf("DOCKER_HOST wins: %+v %v", ep, err)
	}
	t.Setenv("DOCKER_HOST", "nonsense")
	if _, _, err := NewClient(t.Context()); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("invalid DOCKER_HOST: %v", err)
	}
}

func writeContext(t *testing.T, dir, name, host string, withTLS bool) {
	t.Helper()
	id := contextID(name)
	meta := filepath.Join(dir, "contexts", "meta", id)
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	js := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if withTLS {
		if err := os.MkdirAll(filepath.Join(dir, "contexts", "tls", id, "docker"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// forgetAgents forgets the agent digests this process knows, as a new doctor process would;
// those recorded in the lock directory stay.
func forgetAgents() {
	digests.Clear()
	embeddedDigests.Clear()
}

// doctorBinaries builds the doctor the two ways users get it, once per process: static, as
// `make build` and the release builds do, and dynamically linked, as `go install` with cgo on
// does, in the test agent's folder. The image key of each is what BenchmarkImageKey measures.
var doctorBinaries = sync.OnceValues(func() (map[string]string, error) {
	dir := filepath.Dir(testAgent) // removed when the tests end
	bins := map[string]string{}
	for name, env := range map[string][]string{
		"static":  {"CGO_ENABLED=0"},
		"dynamic": {"CGO_ENABLED=1"},
	} {
		bin := filepath.Join(dir, name, "shmdoctor")
		args := []string{"build", "-o", bin}
		if name == "static" {
			args = append(args, "-trimpath", "-ldflags=-s -w")
		}
		cmd := exec.Command("go", append(args, "../cmd/shmdoctor")...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the %s doctor: %v\n%s", name, err, out)
		}
		bins[name] = bin
	}
	return bins, nil
})

// BenchmarkImageKey is what every run spends choosing its agent and naming its probe image,
// for the doctor built statically and dynamically linked (its image then carries its
// libraries too): each iteration is a new doctor process, so that nothing this process read
// before counts. "recorded" is every run but the first of a binary built racyAge ago or more,
// which takes its recorded digest; "first" is the first run of a binary, which hashes it.
func BenchmarkImageKey(b *testing.B) {
	bins, err := doctorBinaries()
	if err != nil {
		b.Fatal(err)
	}
	saved := digestClock
	digestClock = func() time.Time { return time.Now().Add(racyAge + time.Minute) } // built a while ago
	b.Cleanup(func() {
		digestClock = saved
		forgetAgents()
	})
	for _, name := range []string{"static", "dynamic"} {
		for _, run := range []string{"recorded", "first"} {
			b.Run(name+"/"+run, func(b *testing.B) {
				bin := bins[name]
				if _, err := SelectAgent(bin, "linux", runtime.GOARCH); err != nil {
					b.Fatal(err)
				}
				cpu := cpuTime()
				b.ResetTimer()
				for b.Loop() {
					forgetAgents()
					if run == "first" {
						forgetDigest(bin)
					}
					if _, err := SelectAgent(bin, "linux", runtime.GOARCH); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// cpuTime is the CPU time this process has used, user and system: on a machine shared with
// other work, the figure that does not depend on how long the benchmark waited for a CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
