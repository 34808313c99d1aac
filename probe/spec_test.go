//go:build linux

package probe

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestBuildSpec: the mapping from plan to container, setting by setting, as docker compose
// maps them, plus the probe's own least privilege.
func TestBuildSpec(t *testing.T) {
	o, err := Options{Project: "demo"}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	spec := func(p *analyze.ShmPlan) *containerSpec { return buildSpec(p, o, "run1", "img", now, false) }

	base := spec(&analyze.ShmPlan{Service: "web"})
	hc := base.host
	if hc.NetworkMode != "none" || !reflect.DeepEqual(hc.CapDrop, []string{"ALL"}) || !hc.ReadonlyRootfs ||
		!reflect.DeepEqual(hc.SecurityOpt, []string{"no-new-privileges"}) || hc.PidsLimit == nil || *hc.PidsLimit != pidsLimit ||
		hc.AutoRemove || hc.Privileged || hc.IpcMode != "" || hc.ShmSize != 0 {
		t.Errorf("least privilege: %+v", hc)
	}
	if base.config.User != "65534:65534" || base.config.Labels[LabelProbe] != "run1" ||
		base.config.Labels[LabelCreatedAt] != "2026-01-02T03:04:05Z" || base.config.Labels[LabelProject] != "demo" ||
		base.config.Labels[LabelService] != "web" || base.name != "shmdoctor-probe-demo-web-run1" {
		t.Errorf("config: %+v name %s", base.config, base.name)
	}

	for _, ipc := range []string{"host", "none", "private", "shareable"} {
		if got := spec(&analyze.ShmPlan{Service: "s", IPC: ipc}).host.IpcMode; got != container.IpcMode(ipc) {
			t.Errorf("ipc %s: IpcMode %q", ipc, got)
		}
	}
	if s := spec(&analyze.ShmPlan{Service: "s", IPC: "service:db"}); s.donor != "db" || s.host.IpcMode != "" {
		t.Errorf("service:db: donor %q IpcMode %q", s.donor, s.host.IpcMode)
	}
	if s := spec(&analyze.ShmPlan{Service: "s", IPC: "container:abc"}); !strings.Contains(s.fail, "cannot be reproduced") {
		t.Errorf("container:abc: fail %q", s.fail)
	}

	full := spec(&analyze.ShmPlan{Service: "s", Configured: i64(2 * gib), MemLimit: i64(gib), MemSwapLimit: i64(2 * gib),
		Memlock: &analyze.Ulimit{Soft: -1, Hard: -1}, Stack: &analyze.Ulimit{Soft: 1 << 26, Hard: 1 << 27}, GPU: true})
	if h := full.host; h.ShmSize != 2*gib || h.Memory != gib || h.MemorySwap != 2*gib ||
		!reflect.DeepEqual(h.Ulimits, []*container.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}, {Name: "stack", Soft: 1 << 26, Hard: 1 << 27}}) {
		t.Errorf("limits: %+v", h)
	}
	if len(full.omitted) != 1 || !strings.Contains(full.omitted[0], "GPU") {
		t.Errorf("omitted %q", full.omitted)
	}

	tmpfsEntry := spec(&analyze.ShmPlan{Service: "s", Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Size: i64(256 * mib), Entry: "tmpfs"}})
	if !reflect.DeepEqual(tmpfsEntry.host.Tmpfs, map[string]string{"/dev/shm": "size=268435456"}) || len(tmpfsEntry.host.Mounts) != 0 {
		t.Errorf("tmpfs entry: Tmpfs %v Mounts %v", tmpfsEntry.host.Tmpfs, tmpfsEntry.host.Mounts)
	}
	tmpfsVol := spec(&analyze.ShmPlan{Service: "s", Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Size: i64(128 * mib), Entry: "volumes"}})
	if want := []mount.Mount{{Type: mount.TypeTmpfs, Target: "/dev/shm", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 128 * mib}}}; !reflect.DeepEqual(tmpfsVol.host.Mounts, want) {
		t.Errorf("tmpfs volume: %+v", tmpfsVol.host.Mounts)
	}
	bindShm := spec(&analyze.ShmPlan{Service: "s", Source: analyze.SourceBind, Mount: &analyze.Mount{Type: analyze.SourceBind, Source: "/dev/shm"}})
	if m := bindShm.host.Mounts; len(m) != 1 || m[0].Type != mount.TypeBind || m[0].Source != "/dev/shm" || m[0].ReadOnly {
		t.Errorf("bind of /dev/shm: %+v", m)
	}
	bindOther := spec(&analyze.ShmPlan{Service: "s", Mount: &analyze.Mount{Type: analyze.SourceBind, Source: "/data/shm"}, Need: i64(gib)})
	if m := bindOther.host.Mounts; len(m) != 1 || !m[0].ReadOnly || bindOther.write == nil || bindOther.target != 0 {
		t.Errorf("other bind: %+v write %+v", m, bindOther.write)
	}
	vol := spec(&analyze.ShmPlan{Service: "s", Mount: &analyze.Mount{Type: analyze.SourceVolume, Source: "shm"}})
	if m := vol.host.Mounts; len(m) != 1 || m[0].Type != mount.TypeVolume || !m[0].ReadOnly || m[0].VolumeOptions == nil || !m[0].VolumeOptions.NoCopy || vol.volume != "shm" {
		t.Errorf("volume: %+v", m)
	}
}

// TestWriteTarget: declared need, else the need the parameters give, else shm_size, else prediction; capped where
// the host's /dev/shm is written; --write-probe off and SIZE.
func TestWriteTarget(t *testing.T) {
	auto, _ := Options{}.normalized()
	off, _ := Options{WriteProbe: "off"}.normalized()
	sized, _ := Options{WriteProbe: "1g"}.normalized()
	if _, err := (Options{WriteProbe: "lots"}).normalized(); err == nil {
		t.Error("--write-probe lots: want an error")
	}
	cases := []struct {
		name   string
		p      analyze.ShmPlan
		o      Options
		target int64
		skip   bool
	}{
		{"need", analyze.ShmPlan{Need: i64(3 * gib), Use: &analyze.Use{Need: gib}, Configured: i64(gib)}, auto, 3 * gib, false},
		{"the parameters' need", analyze.ShmPlan{Use: &analyze.Use{Need: gib}, Configured: i64(2 * gib)}, auto, gib, false},
		{"a use of unknown size", analyze.ShmPlan{Use: &analyze.Use{Unknown: "the rows decide"}, Configured: i64(2 * gib)}, auto, 2 * gib, false},
		{"configured", analyze.ShmPlan{Configured: i64(2 * gib), Predicted: i64(64 * mib)}, auto, 2 * gib, false},
		{"predicted", analyze.ShmPlan{Configured: i64(0), Predicted: i64(64 * mib)}, auto, 64 * mib, false},
		{"nothing", analyze.ShmPlan{}, auto, 0, true},
		{"host capped", analyze.ShmPlan{Source: analyze.SourceHost, Need: i64(4 * gib)}, auto, 256 * mib, false},
		{"host sized", analyze.ShmPlan{Source: analyze.SourceHost, Need: i64(4 * gib)}, sized, gib, false},
		{"off", analyze.ShmPlan{Need: i64(gib)}, off, 0, true},
		{"none", analyze.ShmPlan{Source: analyze.SourceNone, Need: i64(gib)}, auto, 0, true},
	}
	for _, c := range cases {
		target, _, skipped := writeTarget(&c.p, c.o, false, false)
		if target != c.target || (skipped != nil) != c.skip {
			t.Errorf("%s: target %s skipped %v, want %s %v", c.name, analyze.FormatSize(target), skipped, analyze.FormatSize(c.target), c.skip)
		}
	}
	// A joiner of a donor with ipc: host writes into the host's /dev/shm too.
	if target, capped, _ := writeTarget(&analyze.ShmPlan{Need: i64(gib)}, auto, false, true); target != 256*mib || capped == "" {
		t.Errorf("joiner of host: target %s (%q)", analyze.FormatSize(target), capped)
	}
}

func TestParseAgentOutput(t *testing.T) {
	// The agent died during the write probe: the measure report and the progress remain.
	out, err := ParseAgentOutput(strings.NewReader(`not json
{"event":"measure","report":{"path":"/dev/shm","exists":true,"size_bytes":67108864}}
{"event":"progress","mode":"write","bytes":1048576,"target":104857600}
{"event":"progress","mode":"write","bytes":5242880,"target":104857600}
`))
	if err != nil || out.Complete || out.Report == nil || *out.Report.SizeBytes != 64*mib ||
		out.ProgressMode != "write" || out.ProgressBytes != 5*mib || out.ProgressTarget != 100*mib || out.Other != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	r := &runner{o: Options{Timeout: time.Second}}
	n := &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
	r.fill(n, out, &container.State{OOMKilled: true, ExitCode: 137}, "")
	if w := n.m.Write; w == nil || w.Outcome != analyze.WriteOOMKilled || w.WrittenBytes != 5*mib || w.TargetBytes != 100*mib {
		t.Errorf("write %+v, want oom_killed at 5MiB", w)
	}
	if n.m.Error != "" || *n.m.MeasuredBytes != 64*mib {
		t.Errorf("measurement %s", describe(n.m))
	}
	// The daemon may miss the OOM event that came after the exit: exit 137 in the middle of
	// the write probe is the OOM killer all the same.
	n = &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
	r.fill(n, out, &container.State{ExitCode: 137}, "")
	if w := n.m.Write; w == nil || w.Outcome != analyze.WriteOOMKilled || n.m.Error != "" {
		t.Errorf("exit 137 without the OOM flag: %s", describe(n.m))
	}
}

func TestParseMountInfoLine(t *testing.T) {
	mi, ok := parseMountInfoLine(`1203 1195 0:119 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k`)
	if !ok || mi.point != "/dev/shm" || mi.source != "shm" || mi.fstype != "tmpfs" || mi.options != "rw,nosuid,nodev,noexec,relatime,size=65536k" {
		t.Errorf("%+v", mi)
	}
	mi, ok = parseMountInfoLine(`36 35 98:0 /a /mnt/with\040space ro,noatime master:1 - ext4 /dev/vda rw,errors=continue`)
	if !ok || mi.point != "/mnt/with space" || mi.options != "ro,noatime,errors=continue" {
		t.Errorf("%+v", mi)
	}
	if !within("/dev/shm", "/dev") || within("/dev/shmx", "/dev/shm") || !within("/dev/shm", "/") {
		t.Error("within")
	}
}

// TestSelectAgent: the doctor's binary when it is a static linux one for the daemon's
// architecture, else an embedded agent, else an error that says how to get one.
func TestSelectAgent(t *testing.T) {
	a, err := selectAgent(testAgent, "linux", "amd64")
	if err != nil || a.from != testAgent || len(a.digest) != 64 || a.ref() != "shmdoctor-probe:"+a.digest[:12] {
		t.Fatalf("static agent: %v %+v", err, a)
	}
	_, err = selectAgent(testAgent, "linux", "arm64")
	if err == nil || !strings.Contains(err.Error(), "is a linux/amd64 executable") || !strings.Contains(err.Error(), "CGO_ENABLED=0 GOOS=linux GOARCH=arm64") {
		t.Errorf("wrong arch: %v", err)
	}
	script := filepath.Join(t.TempDir(), "doctor")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = selectAgent(script, "linux", "amd64")
	if err == nil || !strings.Contains(err.Error(), "not an ELF executable") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("not ELF: %v", err)
	}
	if _, err := selectAgent(testAgent, "windows", "amd64"); err == nil || !strings.Contains(err.Error(), "needs a linux daemon") {
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
	if a, err := selectAgent(script, "linux", "arm64"); err != nil || a.from != "embedded" || string(a.data) != "arm64 agent" {
		t.Errorf("embedded: %v %+v", err, a)
	}
	if _, err := selectAgent(script, "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "reading the embedded linux/amd64 agent") {
		t.Errorf("corrupt embedded agent: %v", err)
	}
	// SHMDOCTOR_PROBE_AGENT=embedded skips the doctor's own binary, even a usable one.
	t.Setenv(AgentEnv, "embedded")
	// The digest is known by now: the bytes are read again only to make the image.
	if a, err := selectAgent("", "linux", "arm64"); err != nil || a.from != "embedded" || a.digest != agentDigest([]byte("arm64 agent"), nil) {
		t.Errorf("%s=embedded: %v %+v", AgentEnv, err, a)
	} else if files, err := a.files(); err != nil || string(files[0].data) != "arm64 agent" {
		t.Errorf("%s=embedded: image files %v, %v", AgentEnv, files, err)
	}
	if _, err := selectAgent("", "linux", "riscv64"); err == nil || !strings.Contains(err.Error(), AgentEnv+" is embedded and this build embeds no agent for it") {
		t.Errorf("%s=embedded without an agent: %v", AgentEnv, err)
	}
	t.Setenv(AgentEnv, "self")
	if _, err := selectAgent("", "linux", "arm64"); err == nil || !strings.Contains(err.Error(), `SHMDOCTOR_PROBE_AGENT="self": the only value is embedded`) {
		t.Errorf("%s=self: %v", AgentEnv, err)
	}
	if goos, goarch := daemonPlatform("linux", "x86_64"); goos != "linux" || goarch != "amd64" {
		t.Errorf("daemonPlatform: %s/%s", goos, goarch)
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

// TestAgentOnHost runs the agent binary here, outside a container, into a temporary
// directory: the JSON lines parse, and a time budget stops the write probe cleanly.
func TestAgentOnHost(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(testAgent, "agent", "--path", dir, "--target", "64m", "--mode", "write", "--budget", "1ms").Output()
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	got, err := ParseAgentOutput(bytes.NewReader(out))
	if err != nil || !got.Complete || got.Other != 0 {
		t.Fatalf("output %+v %v:\n%s", got, err, out)
	}
	r := got.Report
	if !r.Exists || r.SizeBytes == nil || r.MemTotalBytes == nil || r.Memlock == "" || r.Stack == "" || r.CgroupVersion == 0 {
		t.Errorf("report %+v", r)
	}
	if w := r.Write; w == nil || w.Outcome != analyze.WriteSkipped || !strings.Contains(w.Reason, "time budget") {
		t.Errorf("write %+v, want skipped by the time budget", w)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the write probe left %d files", len(entries))
	}
}

// forgetAgents forgets the agent digests this process knows, as a new doctor process would;
// those recorded in the lock directory stay.
func forgetAgents() {
	digests.Clear()
	embeddedDigests.Clear()
}
