//go:build linux

package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"golang.org/x/sys/unix"
)

// hostShm is the size of this machine's /dev/shm: the daemon runs here, so a container
// with ipc: host or a bind of /dev/shm must see the same.
func hostShm(t *testing.T) int64 {
	t.Helper()
	var s unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &s); err != nil {
		t.Fatalf("statfs /dev/shm: %v", err)
	}
	return int64(s.Blocks) * s.Frsize
}

func memTotal(t *testing.T) int64 {
	t.Helper()
	// The kernel's MemTotal, as the agent reads it.
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "MemTotal:")
	f := strings.Fields(rest)
	if len(f) == 0 {
		t.Fatalf("no MemTotal in /proc/meminfo")
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return kb << 10
}

// assertSize checks the measured /dev/shm against want within 1% (SHM201's tolerance).
func assertSize(t *testing.T, name string, m *analyze.Measurement, want int64) {
	t.Helper()
	if m == nil {
		t.Errorf("%s: no measurement", name)
		return
	}
	if m.Error != "" || m.CreateError != "" {
		t.Errorf("%s: error %q, create error %q", name, m.Error, m.CreateError)
		return
	}
	if !m.Exists || m.MeasuredBytes == nil {
		t.Errorf("%s: /dev/shm missing: %s", name, describe(m))
		return
	}
	got := *m.MeasuredBytes
	if d := got - want; d > want/100 || -d > want/100 {
		t.Errorf("%s: measured %s (%d), predicted %s (%d)", name, analyze.FormatSize(got), got, analyze.FormatSize(want), want)
	}
}

func assertWrite(t *testing.T, name string, m *analyze.Measurement, outcome analyze.WriteOutcome) *analyze.Write {
	t.Helper()
	if m == nil || m.Write == nil {
		t.Fatalf("%s: no write probe result", name)
	}
	if m.Write.Outcome != outcome {
		t.Errorf("%s: write outcome %s, want %s (%s)", name, m.Write.Outcome, outcome, describe(m))
	}
	return m.Write
}

// TestIPCModes: private (daemon default and explicit), shm_size, shareable, host and none,
// all in one run, each measured size equal to the prediction, on every engine: Podman's
// default is 62.5 MiB, and it refuses shm_size with ipc: host.
func TestIPCModes(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testIPCModes)
}

func testIPCModes(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	o.WriteMode = "write"
	def := e.engine.DefaultShm
	ms := runOn(t, e, o,
		&analyze.ShmPlan{Service: "default", Source: analyze.SourcePrivate, Predicted: i64(def)},
		&analyze.ShmPlan{Service: "private-256m", IPC: "private", Source: analyze.SourcePrivate, Configured: i64(256 * mib), Predicted: i64(256 * mib)},
		&analyze.ShmPlan{Service: "shm-size-0", Source: analyze.SourcePrivate, Configured: i64(0), Predicted: i64(def)},
		&analyze.ShmPlan{Service: "shareable-32m", IPC: "shareable", Source: analyze.SourceShareable, Configured: i64(32 * mib), Predicted: i64(32 * mib)},
		&analyze.ShmPlan{Service: "host", IPC: "host", Source: analyze.SourceHost, Configured: i64(2 * gib)},
		&analyze.ShmPlan{Service: "host-plain", IPC: "host", Source: analyze.SourceHost},
		&analyze.ShmPlan{Service: "none", IPC: "none", Source: analyze.SourceNone, Configured: i64(256 * mib)},
		&analyze.ShmPlan{Service: "none-plain", IPC: "none", Source: analyze.SourceNone},
	)
	assertSize(t, "default", ms["default"], def)
	assertSize(t, "private-256m", ms["private-256m"], 256*mib)
	assertSize(t, "shm-size-0", ms["shm-size-0"], def)
	assertSize(t, "shareable-32m", ms["shareable-32m"], 32*mib)
	assertSize(t, "host-plain", ms["host-plain"], hostShm(t))
	if e.engine.Refuses("host") {
		if m := ms["host"]; !strings.Contains(m.CreateError, "cannot set shmsize") {
			t.Errorf("host: want %s's refusal of shm_size with ipc: host, got %s", e.engine.Name, describe(m))
		}
	} else {
		assertSize(t, "host", ms["host"], hostShm(t)) // shm_size 2g is ignored
		// Where /dev/shm is the host's, the write probe is capped at 256 MiB.
		if w := assertWrite(t, "host", ms["host"], analyze.WriteOK); w.TargetBytes != 256*mib || !strings.Contains(w.Reason, "capped") {
			t.Errorf("host: write target %s (%q), want 256MiB capped", analyze.FormatSize(w.TargetBytes), w.Reason)
		}
	}

	for _, name := range []string{"default", "private-256m", "shareable-32m"} {
		w := assertWrite(t, name, ms[name], analyze.WriteOK)
		if w.WrittenBytes != w.TargetBytes || w.GBps <= 0 {
			t.Errorf("%s: wrote %d of %d at %.2f GB/s", name, w.WrittenBytes, w.TargetBytes, w.GBps)
		}
	}
	if m, opt := ms["default"], fmt.Sprintf("size=%dk", def>>10); m.FSType != "tmpfs" || m.MountSource != "shm" || !strings.Contains(m.MountOptions, opt) {
		t.Errorf("default: fs %q source %q options %q, want tmpfs, shm, %s", m.FSType, m.MountSource, m.MountOptions, opt)
	}
	nones := []string{"none", "none-plain"}
	if e.engine.Refuses("none") {
		if m := ms["none"]; !strings.Contains(m.CreateError, "cannot set shmsize") {
			t.Errorf("none: want %s's refusal of shm_size with ipc: none, got %s", e.engine.Name, describe(m))
		}
		nones = nones[1:]
	}
	for _, name := range nones {
		none := ms[name]
		if none.Exists || none.MeasuredBytes != nil || none.Error != "" || none.CreateError != "" {
			t.Errorf("%s: want no /dev/shm and no error, got %s", name, describe(none))
		}
		assertWrite(t, name, none, analyze.WriteSkipped)
	}
}

// TestMounts: a mount at /dev/shm wins over shm_size in every form compose can declare it.
func TestMounts(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testMounts)
}

func testMounts(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	o.WriteProbe = "off"
	c := e.c
	ctx := context.Background()

	vol := "shmdoctor-test-" + engine.NewRunID()
	if _, err := c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: map[string]string{engine.LabelProbe: "test"}}); err != nil {
		t.Fatalf("creating test volume: %v", err)
	}
	t.Cleanup(func() { _, _ = c.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{Force: true}) })
	missing := "shmdoctor-missing-" + engine.NewRunID()
	missingBind := "/nonexistent/shmdoctor-" + engine.NewRunID()

	ms := runOn(t, e, o,
		&analyze.ShmPlan{Service: "tmpfs-entry", Source: analyze.SourceTmpfs, Configured: i64(2 * gib), Predicted: i64(256 * mib),
			Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Size: i64(256 * mib), Entry: "tmpfs"}},
		&analyze.ShmPlan{Service: "tmpfs-volume", Source: analyze.SourceTmpfs, Predicted: i64(128 * mib),
			Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Size: i64(128 * mib), Entry: "volumes"}},
		&analyze.ShmPlan{Service: "tmpfs-nosize", Source: analyze.SourceTmpfs,
			Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Entry: "tmpfs"}},
		&analyze.ShmPlan{Service: "ipc-host-tmpfs", IPC: "host", Source: analyze.SourceTmpfs, Predicted: i64(64 * mib),
			Mount: &analyze.Mount{Type: analyze.SourceTmpfs, Size: i64(64 * mib), Entry: "volumes"}},
		&analyze.ShmPlan{Service: "bind-shm", Source: analyze.SourceBind,
			Mount: &analyze.Mount{Type: analyze.SourceBind, Source: "/dev/shm", Entry: "volumes"}},
		&analyze.ShmPlan{Service: "volume", Source: analyze.SourceVolume,
			Mount: &analyze.Mount{Type: analyze.SourceVolume, Source: vol, Entry: "volumes"}},
		&analyze.ShmPlan{Service: "volume-missing", Source: analyze.SourceVolume,
			Mount: &analyze.Mount{Type: analyze.SourceVolume, Source: missing, Entry: "volumes"}},
		&analyze.ShmPlan{Service: "bind-missing", Source: analyze.SourceBind,
			Mount: &analyze.Mount{Type: analyze.SourceBind, Source: missingBind, Entry: "volumes"}},
	)
	assertSize(t, "tmpfs-entry", ms["tmpfs-entry"], 256*mib)
	assertSize(t, "tmpfs-volume", ms["tmpfs-volume"], 128*mib)
	assertSize(t, "tmpfs-nosize", ms["tmpfs-nosize"], memTotal(t)/2) // the kernel default: half the RAM
	assertSize(t, "ipc-host-tmpfs", ms["ipc-host-tmpfs"], 64*mib)
	assertSize(t, "bind-shm", ms["bind-shm"], hostShm(t))
	for _, name := range []string{"tmpfs-entry", "tmpfs-volume", "tmpfs-nosize"} {
		if m := ms[name]; m.FSType != "tmpfs" {
			t.Errorf("%s: fs type %q, want tmpfs", name, m.FSType)
		}
	}

	v := ms["volume"]
	if !v.Exists || v.MeasuredBytes == nil || v.Error != "" || v.CreateError != "" || !strings.Contains(v.MountOptions, "ro") {
		t.Errorf("volume: want a read-only measurement, got %s", describe(v))
	}
	if m := ms["volume-missing"]; m.Error == "" || !strings.Contains(m.Error, "does not exist") || m.CreateError != "" {
		t.Errorf("volume-missing: want an error saying it does not exist, got %s", describe(m))
	}
	if _, err := c.VolumeInspect(ctx, missing, client.VolumeInspectOptions{}); err == nil {
		_, _ = c.VolumeRemove(ctx, missing, client.VolumeRemoveOptions{Force: true})
		t.Errorf("the probe created the missing volume %s", missing)
	}
	if e.engine.Name == analyze.Podman.Name {
		// Podman would create a missing bind source: no bind but /dev/shm's is probed there.
		if m := ms["bind-missing"]; !strings.Contains(m.Error, "not probed on Podman") || m.Exists {
			t.Errorf("bind-missing: want an error saying it is not probed, got %s", describe(m))
		}
	} else if m := ms["bind-missing"]; !strings.Contains(m.Error, "does not exist") || m.CreateError != "" {
		t.Errorf("bind-missing: want an error saying it does not exist, got %s", describe(m))
	}
	if _, err := os.Stat(missingBind); err == nil {
		t.Errorf("the probe created the missing bind source %s", missingBind)
		_ = os.Remove(missingBind)
		_ = os.Remove(filepath.Dir(missingBind)) // only if empty
	}
}

// TestDonorChain: ipc: service: joiners measure their donor's /dev/shm, through two hops,
// and the donor stays up until they are done.
func TestDonorChain(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testDonorChain)
}

func testDonorChain(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	o.WriteMode = "write"
	ms := runOn(t, e, o,
		&analyze.ShmPlan{Service: "joiner2", IPC: "service:joiner", Source: analyze.SourceService, Donor: "donor", Via: []string{"joiner", "donor"},
			Configured: i64(2 * gib), Predicted: i64(128 * mib)},
		&analyze.ShmPlan{Service: "joiner", IPC: "service:donor", Source: analyze.SourceService, Donor: "donor", Via: []string{"donor"},
			Predicted: i64(128 * mib)},
		&analyze.ShmPlan{Service: "donor", IPC: "shareable", Source: analyze.SourceShareable, Configured: i64(128 * mib), Predicted: i64(128 * mib)},
		&analyze.ShmPlan{Service: "sibling", IPC: "service:donor", Source: analyze.SourceService, Donor: "donor", Via: []string{"donor"},
			Predicted: i64(128 * mib)},
	)
	assertWrite(t, "sibling", ms["sibling"], analyze.WriteOK) // not disturbed by joiner's write
	for _, name := range []string{"donor", "joiner", "joiner2", "sibling"} {
		assertSize(t, name, ms[name], 128*mib)
	}
	assertWrite(t, "donor", ms["donor"], analyze.WriteOK)
	assertWrite(t, "joiner", ms["joiner"], analyze.WriteOK)
	// joiner2's shm_size 2g is ignored: writing 2 GiB into the donor's 128 MiB fails.
	if w := assertWrite(t, "joiner2", ms["joiner2"], analyze.WriteENOSPC); w.WrittenBytes < 127*mib || w.WrittenBytes > 129*mib {
		t.Errorf("joiner2: wrote %s, want about 128MiB", analyze.FormatSize(w.WrittenBytes))
	}
}

// TestNonShareableDonor: joining a donor that sets no ipc fails the way docker compose fails
// on Docker (private by default), and works on Podman (shareable by default).
func TestNonShareableDonor(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o := engineOptions(t, e)
		def := e.engine.DefaultShm
		ms := runOn(t, e, o,
			&analyze.ShmPlan{Service: "donor", Source: analyze.SourcePrivate, Predicted: i64(def)},
			&analyze.ShmPlan{Service: "joiner", IPC: "service:donor", Source: analyze.SourceService, Donor: "donor", Via: []string{"donor"}, Predicted: i64(def)},
		)
		assertSize(t, "donor", ms["donor"], def)
		if e.engine.DefaultIPC == "shareable" {
			assertSize(t, "joiner", ms["joiner"], def)
			return
		}
		if m := ms["joiner"]; !strings.Contains(m.CreateError, "can't join IPC of container donor: non-shareable IPC") {
			t.Errorf("joiner: want a create error about a non-shareable IPC donor, got %s", describe(m))
		}
	})
}

// TestENOSPC: write(2) of 100 MiB into the default /dev/shm stops at its size (64 MiB on
// Docker, 62.5 MiB on Podman).
func TestENOSPC(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o := engineOptions(t, e)
		def := e.engine.DefaultShm
		ms := runOn(t, e, o, &analyze.ShmPlan{Service: "loader", Source: analyze.SourcePrivate, Predicted: i64(def), Need: i64(100 * mib), NeedFrom: "test"})
		assertSize(t, "loader", ms["loader"], def)
		w := assertWrite(t, "loader", ms["loader"], analyze.WriteENOSPC)
		// Parallel writers may overshoot the tmpfs limit by a few pages: the kernel counts
		// used blocks per CPU.
		if w.Mode != "write" || w.TargetBytes != 100*mib || w.WrittenBytes < def-mib || w.WrittenBytes > def+mib {
			t.Errorf("write probe %+v, want write mode, target 100MiB, about %s written", *w, analyze.FormatSize(def))
		}
	})
}

// TestSIGBUS: touching mmapped pages past the default tmpfs raises SIGBUS, caught.
func TestSIGBUS(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o := engineOptions(t, e)
		o.WriteMode = "mmap"
		def := e.engine.DefaultShm
		ms := runOn(t, e, o, &analyze.ShmPlan{Service: "loader", Source: analyze.SourcePrivate, Predicted: i64(def), Need: i64(100 * mib)})
		w := assertWrite(t, "loader", ms["loader"], analyze.WriteSIGBUS)
		if w.Mode != "mmap" || w.WrittenBytes < def-mib || w.WrittenBytes > def+mib {
			t.Errorf("write probe %+v, want mmap mode, about %s written", *w, analyze.FormatSize(def))
		}
	})
}

// TestFillPrediction: a service that sets nothing and predicted Docker's 64 MiB, probed on
// every engine (on Podman, as with --target compose), fills what its /dev/shm holds and
// passes: the write probe never calls a plain service's full default a failure.
func TestFillPrediction(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		o := engineOptions(t, e)
		dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  plain:\n    image: alpine\n"})
		ps := compose.Load(context.Background(), compose.Options{Paths: []string{dir}})
		if len(ps) != 1 || !ps[0].Loaded() {
			t.Fatalf("loading %s: %d projects", dir, len(ps))
		}
		if p := ps[0].Plan("plain"); p == nil || p.Predicted == nil || *p.Predicted != analyze.DefaultShmSize {
			t.Fatalf("plain: predicted %v, want Docker's default", p)
		}
		ms := runOn(t, e, o, ps[0].Plans...)
		m := ms["plain"]
		assertSize(t, "plain", m, e.engine.DefaultShm)
		w := assertWrite(t, "plain", m, analyze.WriteOK)
		if w.TargetBytes != e.engine.DefaultShm || w.WrittenBytes != w.TargetBytes {
			t.Errorf("plain: wrote %s of %s, want all of %s", analyze.FormatSize(w.WrittenBytes), analyze.FormatSize(w.TargetBytes), analyze.FormatSize(e.engine.DefaultShm))
		}
		if lowered := strings.Contains(w.Reason, "lowered"); lowered != (e.engine.DefaultShm < analyze.DefaultShmSize) {
			t.Errorf("plain: reason %q: the target is lowered only where /dev/shm holds less than predicted", w.Reason)
		}
		for _, f := range rules.CheckMeasurements(ps[0], analyze.Config{}, ms) {
			if f.Severity == analyze.Error {
				t.Errorf("plain: %s %s", f.Rule, f.Message)
			}
		}
	})
}

// TestOOMKill: with mem_limit 128m and shm_size 512m, writing 384 MiB gets the writer
// OOM-killed before /dev/shm fills; the report says how far it got.
func TestOOMKill(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testOOMKill)
}

func testOOMKill(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	ms := runOn(t, e, o, &analyze.ShmPlan{Service: "trainer", Source: analyze.SourcePrivate,
		Configured: i64(512 * mib), Predicted: i64(512 * mib), MemLimit: i64(128 * mib), MemSwapLimit: i64(128 * mib), Need: i64(384 * mib)})
	m := ms["trainer"]
	assertSize(t, "trainer", m, 512*mib)
	if m.CgroupMemory == nil || *m.CgroupMemory != 128*mib {
		t.Errorf("cgroup memory limit %v, want 128MiB", m.CgroupMemory)
	}
	w := assertWrite(t, "trainer", m, analyze.WriteOOMKilled)
	// The limit also holds the agent, the writer and the page cache of the probe image, so the
	// writer dies somewhere below 128 MiB: well before the 384 MiB target and the 512 MiB tmpfs.
	if w.WrittenBytes < 16*mib || w.WrittenBytes > 128*mib {
		t.Errorf("OOM-killed after %s, want between 16MiB and 128MiB", analyze.FormatSize(w.WrittenBytes))
	}
}

// TestUlimitsAndLimits: memlock and stack ulimits and the memory limit reach the container
// through the least-privilege settings. Raising memlock past the daemon's own hard limit
// needs CAP_SYS_RESOURCE, which some engines lack (this one does): then Docker's own
// message is the create error, as docker compose would report it.
func TestUlimitsAndLimits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testUlimitsAndLimits)
}

func testUlimitsAndLimits(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	o.WriteProbe = "off"
	def := e.engine.DefaultShm
	ms := runOn(t, e, o,
		&analyze.ShmPlan{Service: "limits", Source: analyze.SourcePrivate, Predicted: i64(def),
			Memlock: &analyze.Ulimit{Soft: 4 << 20, Hard: 8 << 20}, Stack: &analyze.Ulimit{Soft: 64 << 20, Hard: 64 << 20},
			MemLimit: i64(1 * gib), GPU: true},
		&analyze.ShmPlan{Service: "memlock-unlimited", Source: analyze.SourcePrivate, Predicted: i64(def),
			Memlock: &analyze.Ulimit{Soft: -1, Hard: -1}},
	)
	m := ms["limits"]
	if e.engine.Name == analyze.Podman.Name && strings.Contains(m.CreateError, "error setting rlimit type 7") {
		// Podman sets open files to 1048576 in a container that names any ulimit, whatever its
		// containers.conf says, and a service whose own hard limit is lower (a sandbox) cannot
		// start it: the daemon's message is the create error, as with podman compose.
		t.Logf("limits: not measurable on this Podman service: %s", m.CreateError)
		return
	}
	assertSize(t, "limits", m, def)
	if m.Memlock != "4194304" || m.Stack != "67108864" {
		t.Errorf("memlock %q stack %q, want 4194304 and 67108864", m.Memlock, m.Stack)
	}
	if m.CgroupMemory == nil || *m.CgroupMemory != gib {
		t.Errorf("cgroup memory %v, want 1GiB", m.CgroupMemory)
	}
	if len(m.Omitted) != 1 || !strings.Contains(m.Omitted[0], "GPU") {
		t.Errorf("omitted %q, want the GPU sentence", m.Omitted)
	}
	if m.Write == nil || m.Write.Outcome != analyze.WriteSkipped || m.Write.Reason != "write probe off" {
		t.Errorf("write %+v, want skipped (--write-probe off)", m.Write)
	}
	if u := ms["memlock-unlimited"]; u.Memlock != "unlimited" && !strings.Contains(u.CreateError, "rlimit") {
		t.Errorf("memlock-unlimited: want unlimited or Docker's rlimit error, got %s", describe(u))
	}
}

// waitRunning waits until a container of the project runs, so that a probe is in progress.
func waitRunning(t *testing.T, project string) bool {
	f := make(client.Filters).Add("label", engine.LabelProject+"="+project).Add("status", "running")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := daemon(t).ContainerList(context.Background(), client.ContainerListOptions{Filters: f})
		if err == nil && len(list.Items) > 0 {
			return true
		}
	}
	t.Error("no probe container started")
	return false
}

// TestInterrupt: SIGINT (Ctrl-C) to the doctor's process in the middle of a probe, with a
// donor held up for its joiner, leaves no container behind.
func TestInterrupt(t *testing.T) {
	o := testOptions(t)
	o.agentArgs = []string{"--delay", "30s"}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		if waitRunning(t, o.Project) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		}
	}()
	start := time.Now()
	ms, err := Run(ctx, daemon(t), []*analyze.ShmPlan{
		{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)},
		{Service: "donor", IPC: "shareable", Source: analyze.SourceShareable},
		{Service: "joiner", IPC: "service:donor", Source: analyze.SourceService},
	}, o)
	elapsed := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after SIGINT: %v, want context.Canceled", err)
	}
	if elapsed > 20*time.Second {
		t.Errorf("Run took %v to stop after SIGINT", elapsed)
	}
	if m := ms["a"]; m == nil || m.Error != "probe interrupted" {
		t.Errorf("a: %+v, want error \"probe interrupted\"", m)
	}
	t.Logf("interrupted run returned in %v: %v", elapsed, err)
}

// TestTimeout: --probe-timeout stops a probe that hangs, and removes its container.
func TestTimeout(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	o.agentArgs = []string{"--delay", "30s"}
	o.Timeout = 4 * time.Second
	start := time.Now()
	ms, err := Run(context.Background(), daemon(t), []*analyze.ShmPlan{{Service: "slow", Source: analyze.SourcePrivate}}, o)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 4s") {
		t.Fatalf("Run: %v, want a timeout", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("Run took %v with a 4s timeout", time.Since(start))
	}
	if m := ms["slow"]; m == nil || !strings.Contains(m.Error, "timed out") {
		t.Errorf("slow: %+v, want a timeout error", m)
	}
}

// TestUnreachableDaemon: a DOCKER_HOST nobody listens on gives one clear line.
func TestUnreachableDaemon(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	c, closeClient, err := engine.NewClient(context.Background())
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer closeClient()
	err = engine.Ping(context.Background(), c)
	want := "cannot reach the Docker daemon at unix:///nonexistent.sock: dial unix /nonexistent.sock: connect: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Ping: %v\nwant %s", err, want)
	}
	_, err = Run(context.Background(), c, []*analyze.ShmPlan{{Service: "a"}}, Options{Binary: testAgent})
	if err == nil || err.Error() != want {
		t.Errorf("Run: %v\nwant %s", err, want)
	}
	if _, _, err := engine.Clean(context.Background(), c, engine.CleanScope{}); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Clean: %v, want a one-line error", err)
	}
}

// TestHost: the facts `shmdoctor host` prints, measured on this engine.
func TestHost(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testHost)
}

func testHost(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	h, err := Host(context.Background(), e.c, o)
	if err != nil {
		t.Fatalf("Host: %v", err)
	}
	js, _ := json.Marshal(h)
	t.Logf("%s", js)
	if h.Engine != e.engine.Name {
		t.Errorf("engine %q, want %q", h.Engine, e.engine.Name)
	}
	if h.DefaultShmBytes == nil || *h.DefaultShmBytes != e.engine.DefaultShm || h.DefaultShmSource != "shm" {
		t.Errorf("default /dev/shm %v from %q, want %s from shm", h.DefaultShmBytes, h.DefaultShmSource, analyze.FormatSize(e.engine.DefaultShm))
	}
	if h.HostShmBytes == nil || *h.HostShmBytes != hostShm(t) {
		t.Errorf("host /dev/shm %v, want %d", h.HostShmBytes, hostShm(t))
	}
	if h.DefaultIPCMode != e.engine.DefaultIPC && !(e.engine.DefaultIPC == "private" && h.DefaultIPCMode == "shareable") {
		t.Errorf("default IPC mode %q, want %q", h.DefaultIPCMode, e.engine.DefaultIPC)
	}
	if h.OS != "linux" || h.Arch == "" || h.ServerVersion == "" || h.APIVersion == "" || h.CgroupVersion == "" || h.MemTotalBytes <= 0 || h.MemAvailableBytes == nil {
		t.Errorf("incomplete host info: %+v", *h)
	}
	if len(h.Errors) > 0 {
		t.Errorf("errors: %q", h.Errors)
	}
	if err := h.CanGive(1 * gib); err != nil {
		t.Errorf("CanGive(1GiB): %v", err)
	}
	if err := h.CanGive(1 << 50); err == nil {
		t.Error("CanGive(1PiB): want an error")
	}
}

// TestProgress follows the events of a run: every service goes waiting, starting, measuring,
// writing (bytes never going back within a mode, never past the target), done, in that
// order, and nothing is reported after done; a donor kept up for its joiner reports too.
// The agent's output is followed from its start, so even a quick write reports once.
func TestProgress(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	var mu sync.Mutex
	events := map[string][]Event{}
	o.Progress = func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		events[e.Service] = append(events[e.Service], e)
	}
	run(t, o,
		&analyze.ShmPlan{Service: "loader", Source: analyze.SourcePrivate, Configured: i64(gib), Predicted: i64(gib), Need: i64(gib), NeedFrom: "test"},
		&analyze.ShmPlan{Service: "donor", IPC: "shareable", Source: analyze.SourceShareable, Configured: i64(512 * mib), Predicted: i64(512 * mib), Need: i64(512 * mib), NeedFrom: "test"},
		&analyze.ShmPlan{Service: "joiner", IPC: "service:donor", Source: analyze.SourceService, Donor: "donor", Via: []string{"donor"}, Predicted: i64(512 * mib)},
	)
	order := []Stage{StageWaiting, StageStarting, StageMeasuring, StageWriting, StageDone}
	for _, service := range []string{"loader", "donor", "joiner"} {
		es := events[service]
		var stages []Stage
		var mode string
		var written int64
		for i, e := range es {
			if len(stages) == 0 || stages[len(stages)-1] != e.Stage {
				stages = append(stages, e.Stage)
			}
			switch e.Stage {
			case StageWriting:
				w := e.Write
				if w.Mode != mode {
					mode, written = w.Mode, 0
				}
				if w.WrittenBytes < written || w.WrittenBytes > w.TargetBytes {
					t.Errorf("%s: event %d wrote %d after %d, target %d", service, i, w.WrittenBytes, written, w.TargetBytes)
				}
				written = w.WrittenBytes
			case StageDone:
				if e.Measurement == nil || i != len(es)-1 {
					t.Errorf("%s: done at event %d of %d, measurement %v", service, i, len(es), e.Measurement)
				}
			}
		}
		if !slices.Equal(stages, order) {
			t.Errorf("%s: stages %v, want %v", service, stages, order)
		}
	}
}
