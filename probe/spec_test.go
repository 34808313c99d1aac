//go:build linux

package probe

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
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
	if base.config.User != "65534:65534" || base.config.Labels[engine.LabelProbe] != "run1" ||
		base.config.Labels[engine.LabelCreatedAt] != "2026-01-02T03:04:05Z" || base.config.Labels[engine.LabelProject] != "demo" ||
		base.config.Labels[engine.LabelService] != "web" || base.name != "shmdoctor-probe-demo-web-run1" {
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
	out, err := protocol.ParseOutput(strings.NewReader(`not json
{"protocol":1,"event":"measure","report":{"path":"/dev/shm","exists":true,"size_bytes":67108864}}
{"protocol":1,"event":"progress","mode":"write","bytes":1048576,"target":104857600}
{"protocol":1,"event":"progress","mode":"write","bytes":5242880,"target":104857600}
`))
	if err != nil || out.Complete || out.Report == nil || *out.Report.SizeBytes != 64*mib ||
		out.ProgressMode != "write" || out.ProgressBytes != 5*mib || out.ProgressTarget != 100*mib || out.Other != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	n := &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
	n.fill(out, &container.State{OOMKilled: true, ExitCode: 137}, "")
	if w := n.m.Write; w == nil || w.Outcome != analyze.WriteOOMKilled || w.WrittenBytes != 5*mib || w.TargetBytes != 100*mib {
		t.Errorf("write %+v, want oom_killed at 5MiB", w)
	}
	if n.m.Error != "" || *n.m.MeasuredBytes != 64*mib {
		t.Errorf("measurement %s", describe(n.m))
	}
	// The daemon may miss the OOM event that came after the exit: exit 137 in the middle of
	// the write probe is the OOM killer all the same.
	n = &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
	n.fill(out, &container.State{ExitCode: 137}, "")
	if w := n.m.Write; w == nil || w.Outcome != analyze.WriteOOMKilled || n.m.Error != "" {
		t.Errorf("exit 137 without the OOM flag: %s", describe(n.m))
	}
}

// TestForeignAgent: the report of an agent of another protocol version (an older image the
// engine kept, or lines without a version at all) is not read: the measurement says why and
// how to get rid of the image, and carries none of the agent's figures.
func TestForeignAgent(t *testing.T) {
	for _, v := range []string{``, `"protocol":0,`, fmt.Sprintf(`"protocol":%d,`, protocol.Version+1)} {
		out, err := protocol.ParseOutput(strings.NewReader(`{` + v + `"event":"measure","report":{"path":"/dev/shm","exists":true,"size_bytes":67108864}}
{` + v + `"event":"report","report":{"path":"/dev/shm","exists":true,"size_bytes":67108864}}
`))
		if err != nil || out.Report != nil || out.Complete || out.Err == nil {
			t.Fatalf("%s: %+v %v: want no report and a protocol error", v, out, err)
		}
		n := &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
		n.fill(out, &container.State{}, "")
		if !strings.Contains(n.m.Error, "the agent speaks protocol") || !strings.Contains(n.m.Error, "shmdoctor probe --clean") || n.m.MeasuredBytes != nil {
			t.Errorf("%s: measurement %s: want the protocol error alone", v, describe(n.m))
		}
	}
	// An agent that refused the doctor's --protocol printed nothing on stdout but says why
	// on stderr, which the measurement carries.
	out, _ := protocol.ParseOutput(strings.NewReader(""))
	n := &node{m: &analyze.Measurement{}, spec: &containerSpec{}}
	n.fill(out, &container.State{ExitCode: protocol.ExitProtocol}, "agent: the doctor speaks agent protocol 1, this agent protocol 2: the probe image holds an agent of another version\n")
	if want := fmt.Sprintf("(exit code %d): agent: the doctor speaks agent protocol 1", protocol.ExitProtocol); !strings.Contains(n.m.Error, want) {
		t.Errorf("refusing agent: %q, want %q", n.m.Error, want)
	}
}

// TestAgentOnHost runs the agent binary here, outside a container, into a temporary
// directory: the JSON lines parse, and a time budget stops the write probe cleanly.
func TestAgentOnHost(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(testAgent, append(append([]string{"agent"}, protocol.Args()...), "--path", dir, "--target", "64m", "--mode", "write", "--budget", "1ms")...).Output()
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	got, err := protocol.ParseOutput(bytes.NewReader(out))
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
