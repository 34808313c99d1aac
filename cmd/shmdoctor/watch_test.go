//go:build linux

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/reference"
	"github.com/shmdoctor/shmdoctor/watch"
)

// watchStack is the stack the watch tests run with the reference docker compose. Each
// service writes a known amount into /dev/shm with busybox dd (dd truncates the file, so the
// use never exceeds the larger of two steps):
//   - rise climbs to 48 MiB and falls back to 0, over and over, with a guessed shm_size of
//     1g where 128m is enough;
//   - scaled has two replicas holding 40 MiB each under a 64 MiB memory limit, which cannot
//     hold the recommended 64m;
//   - donor holds 16 MiB and joiner, which joins donor's IPC namespace from a read-only root,
//     adds 8 MiB to the same /dev/shm: 24 MiB, counted once;
//   - brief holds 24 MiB until the test stops it;
//   - late (profile late) is started in the middle of the watch and holds 32 MiB;
//   - pidshare shares donor's PID namespace, where the companion cannot tell its /dev/shm
//     from donor's: it is read with the image's df, and holds 8 MiB.
const watchStack = `services:
  rise:
    image: {{image}}
    pull_policy: never
    shm_size: 1g
    command: ["sh", "-c", "while :; do for n in 8 16 32 48 32 16 8 0; do dd if=/dev/zero of=/dev/shm/w bs=1M count=$$n 2>/dev/null; sleep 0.3; done; done"]
  scaled:
    image: {{image}}
    pull_policy: never
    scale: 2
    mem_limit: 64m
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/w bs=1M count=40 2>/dev/null; exec sleep 600"]
  donor:
    image: {{image}}
    pull_policy: never
    ipc: shareable
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/d bs=1M count=16 2>/dev/null; exec sleep 600"]
  joiner:
    image: {{image}}
    pull_policy: never
    ipc: service:donor
    read_only: true
    command: ["sh", "-c", "sleep 0.5; dd if=/dev/zero of=/dev/shm/j bs=1M count=8 2>/dev/null; exec sleep 600"]
  brief:
    image: {{image}}
    pull_policy: never
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/b bs=1M count=24 2>/dev/null; exec sleep 600"]
  pidshare:
    image: {{image}}
    pull_policy: never
    pid: service:donor
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/p bs=1M count=8 2>/dev/null; exec sleep 600"]
  late:
    image: {{image}}
    pull_policy: never
    profiles: [late]
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/l bs=1M count=32 2>/dev/null; exec sleep 600"]
`

// busyboxImage imports a scratch image holding the machine's static busybox, as the probe
// image is imported from the doctor's binary: no registry. It is removed at cleanup.
func busyboxImage(t *testing.T, c *client.Client) string {
	t.Helper()
	bin, err := os.ReadFile("/usr/bin/busybox")
	if err == nil {
		var f *elf.File
		if f, err = elf.NewFile(bytes.NewReader(bin)); err == nil {
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					err = errors.New("it is dynamically linked")
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("the watch tests need a static busybox at /usr/bin/busybox (apt-get install busybox-static): %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}))
	must(tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime}))
	_, err = tw.Write(bin)
	must(err)
	for _, applet := range []string{"sh", "dd", "sleep", "df", "ls"} {
		must(tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: mtime}))
	}
	must(tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: mtime}))
	must(tw.Close())
	ref := "shmdoctor-watchtest:" + randomSuffix()
	ctx := context.Background()
	rc, err := c.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{})
	if err != nil {
		t.Fatalf("importing the busybox image: %v", err)
	}
	_, _ = bytes.NewBuffer(nil).ReadFrom(rc)
	rc.Close()
	t.Cleanup(func() {
		if _, err := c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("removing %s: %v", ref, err)
		}
	})
	return ref
}

func randomSuffix() string {
	return strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""))
}

// upWatchStack brings the stack up as project watchtest-<random> and takes it down at
// cleanup. It returns the folder of compose.yaml, the project name and a function that runs
// the reference docker compose on the project.
func upWatchStack(t *testing.T) (dir, project string, compose func(args ...string)) {
	t.Helper()
	return upStack(t, watchStack)
}

// upStack is upWatchStack for any stack written like watchStack.
func upStack(t *testing.T, stack string) (dir, project string, compose func(args ...string)) {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ref := reference.ComposeFor(t)
	image := busyboxImage(t, c)
	dir = t.TempDir()
	project = "watchtest-" + randomSuffix()
	stack = strings.ReplaceAll(stack, "{{image}}", image)
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	compose = func(args ...string) {
		t.Helper()
		cmd := exec.Command(ref, append([]string{"-f", filepath.Join(dir, "compose.yaml"), "-p", project}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Registered before up, so that a failed up is taken down too; it runs after the image's
	// removal is registered, hence before it.
	t.Cleanup(func() { compose("--profile", "late", "down", "-v", "-t", "0") })
	compose("up", "-d")
	return dir, project, compose
}

// watchCompanions lists the companion containers still there for the project's containers.
func watchCompanions(t *testing.T, project string) []string {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	mine := map[string]bool{}
	f := make(client.Filters).Add("label", watch.ComposeProjectLabel+"="+project)
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		mine[s.ID] = true
	}
	list, err = c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", engine.LabelWatch)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range list.Items {
		if mine[s.Labels[engine.LabelWatch]] {
			left = append(left, strings.Join(s.Names, ",")+" "+string(s.State))
		}
	}
	return left
}

// within reports whether got is within 5% of want.
func within(got *int64, want int64) bool {
	return got != nil && float64(*got) >= 0.95*float64(want) && float64(*got) <= 1.05*float64(want)
}

// TestWatch follows the stack through the JSON stream and acts on what it reads: once every
// service has been read and rise has climbed to its top, it starts late and stops brief; once
// those are seen, it restarts the scaled replicas; once they are read again, Ctrl-C ends the
// watch. However long each step takes on a loaded machine, the watch goes on until its
// sample comes (watchUntil). Then it checks every service's peak and recommendation.
// Subtests end watches with Ctrl-C by both reading methods and with --duration.
func TestWatch(t *testing.T) {
	dir, project, compose := upWatchStack(t)

	var samples []analyze.WatchSample
	const mib = 1 << 20
	phase := 0
	var restarted time.Time   // when compose restart returned
	after := map[string]int{} // each scaled replica's sample count at its first reading after it
	awaited := func() string {
		return [...]string{
			"every service read and rise at 48 MiB",
			"late read and brief stopped",
			"both scaled replicas read again after their restart",
		}[phase]
	}
	sum := watchUntil(t, awaited, func(s analyze.WatchSample) bool {
		samples = append(samples, s)
		peak := map[string]int64{}
		running := map[string]int{}
		for _, u := range s.Services {
			if u.PeakBytes != nil {
				peak[u.Service] = *u.PeakBytes
			}
			running[u.Service] = u.Running
		}
		switch {
		case phase == 0 && len(peak) == 6 && peak["rise"] >= 48*mib:
			phase = 1
			compose("--profile", "late", "up", "-d", "late")
			compose("stop", "-t", "0", "brief")
		case phase == 1 && peak["late"] > 0 && running["brief"] == 0:
			phase = 2
			compose("restart", "-t", "0", "scaled")
			restarted = time.Now()
		case phase == 2 && s.Time.After(restarted):
			// Only samples taken after the restart ended count: those the watch wrote while
			// compose restarted the replicas (read from the pipe since) may show them running
			// before the watch saw them go.
			again := 0
			for _, c := range s.Containers {
				if c.Service != "scaled" || !c.Running {
					continue
				}
				if _, ok := after[c.Name]; !ok {
					after[c.Name] = c.Samples
				}
				if c.Samples > after[c.Name]+3 {
					again++
				}
			}
			return again == 2
		}
		return false
	}, "watch", "--format", "json", "--interval", "150ms", "-p", project, dir)
	if !sum.Interrupted {
		t.Fatalf("the watch ended by itself in phase %d after %d samples, not by Ctrl-C", phase, len(samples))
	}
	for _, u := range sum.Services {
		t.Logf("%s: %d seen, %d running, size %v, peak %v, shares %q", u.Service, u.Seen, u.Running, deref(u.SizeBytes), deref(u.PeakBytes), u.SharesService)
	}

	svc := map[string]analyze.ServiceUsage{}
	for _, u := range sum.Services {
		svc[u.Service] = u
	}
	recs := map[string]analyze.ShmRecommendation{}
	for _, r := range sum.Recommendations {
		recs[r.Service] = r
	}
	for name, want := range map[string]int64{"rise": 48 * mib, "scaled": 40 * mib, "donor": 24 * mib, "brief": 24 * mib, "late": 32 * mib, "pidshare": 8 * mib} {
		if !within(svc[name].PeakBytes, want) {
			t.Errorf("%s: peak %v, want %s within 5%%", name, deref(svc[name].PeakBytes), analyze.FormatSize(want))
		}
	}
	if u := svc["scaled"]; u.Seen != 2 || u.Running != 2 {
		t.Errorf("scaled: %d seen, %d running, want 2 and 2", u.Seen, u.Running)
	}
	if u := svc["joiner"]; u.SharesService != "donor" {
		t.Errorf("joiner shares %q, want donor", u.SharesService)
	}
	if _, ok := recs["joiner"]; ok {
		t.Errorf("joiner has a recommendation of its own; its /dev/shm is donor's")
	}
	if u := svc["brief"]; u.Running != 0 || u.Seen != 1 {
		t.Errorf("brief: %d running, %d seen, want it seen and exited", u.Running, u.Seen)
	}
	for _, s := range samples[:5] {
		for _, u := range s.Services {
			if u.Service == "late" {
				t.Errorf("late is in a sample at %s, before it was started", s.Time)
			}
		}
	}

	// rise: 48 MiB × 1.5 = 72 MiB, rounded up to 128m: shm_size at compose.yaml:5 changes.
	rise := recs["rise"]
	if rise.ShmSize != "128m" || !rise.Set || rise.Pos.Line != 5 || !rise.Change || *rise.CurrentBytes != 1<<30 {
		t.Errorf("rise: %+v, want shm_size 1g at compose.yaml:5 changed to 128m", rise)
	}
	if !strings.Contains(rise.Diff, "-    shm_size: 1g\n+    shm_size: 128m\n") || !strings.HasPrefix(rise.Diff, "--- ") {
		t.Errorf("rise: diff %q, want shm_size 1g replaced by 128m", rise.Diff)
	}
	// scaled: 40 MiB × 1.5 = 60 MiB, which the default 64 MiB holds, but not the 64m limit.
	scaled := recs["scaled"]
	if scaled.ShmSize != "64m" || scaled.Fits || scaled.MemLimitKey != "mem_limit" || !strings.Contains(scaled.Verdict, "OOM-killed") {
		t.Errorf("scaled: %+v, want 64m that the 64 MiB mem_limit cannot hold", scaled)
	}
	// donor: 24 MiB × 1.5 = 36 MiB: the default holds it.
	if donor := recs["donor"]; donor.ShmSize != "64m" || donor.Change || !donor.Fits {
		t.Errorf("donor: %+v, want the default 64m, nothing to change", donor)
	}
	for _, c := range sum.Containers {
		want := analyze.WatchAgent
		if c.Service == "pidshare" {
			want = analyze.WatchDf
			if !strings.Contains(c.Fallback, "PID namespace") {
				t.Errorf("pidshare: fallback %q, want why the agent could not read it", c.Fallback)
			}
		}
		if c.Method != want {
			t.Errorf("%s read with %q, want %s", c.Name, c.Method, want)
		}
	}
	if !slicesContain(sum.Methods, analyze.WatchAgent) {
		t.Errorf("methods %v: this engine (cgroup v1) has no shmem in its stats, the agent reads", sum.Methods)
	}
	if left := watchCompanions(t, project); len(left) > 0 {
		t.Errorf("companions left behind: %v", left)
	}

	for _, method := range []string{"agent", "df"} {
		t.Run("interrupt-"+method, func(t *testing.T) {
			watchInterrupt(t, dir, project, method)
		})
	}
	t.Run("duration", func(t *testing.T) {
		code, out, errs := doctor(t, nil, "watch", "--format", "json", "--interval", "100ms", "--duration", "2s", "-p", project, dir)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last analyze.WatchSummary
		// How many samples fit in 2s depends on the machine's load (a df exec per sample for
		// pidshare): at least one, then the summary, which --duration ends after 2s.
		if code != exitClean || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Type != "summary" || last.Interrupted || len(lines) < 2 || last.Seconds < 2 {
			t.Errorf("exit %d, %d lines, last %q: %s", code, len(lines), lines[len(lines)-1], errs)
		}
		if left := watchCompanions(t, project); len(left) > 0 {
			t.Errorf("companions left behind: %v", left)
		}
	})
}

func slicesContain(ms []analyze.WatchMethod, m analyze.WatchMethod) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// watchInterrupt sends SIGINT to a watch once its stream shows that it has read the stack
// (rise read, scaled's 40 MiB seen): the summary is printed, the exit status is 0, and
// neither a companion nor an exec'd process nor a file is left. The summary's text is the
// report package's (its goldens); here its facts are checked.
func watchInterrupt(t *testing.T, dir, project, method string) {
	companionSeen := method != "agent"
	awaited := func() string { return "rise read and scaled at 40 MiB" }
	sum := watchUntil(t, awaited, func(s analyze.WatchSample) bool {
		read := map[string]analyze.ServiceUsage{}
		for _, u := range s.Services {
			read[u.Service] = u
		}
		ready := read["rise"].UsedBytes != nil && within(read["scaled"].PeakBytes, 40<<20)
		companionSeen = companionSeen || ready && len(watchCompanions(t, project)) > 0
		return ready
	}, "watch", "--format", "json", "--interval", "100ms", "--method", method, dir, "-p", project)
	if !companionSeen {
		t.Errorf("no companion is running during the watch")
	}
	if !sum.Interrupted || !slicesContain(sum.Methods, analyze.WatchMethod(method)) {
		t.Errorf("summary: interrupted %v, methods %v, want ended by Ctrl-C and read by %s", sum.Interrupted, sum.Methods, method)
	}
	recs := map[string]analyze.ShmRecommendation{}
	for _, r := range sum.Recommendations {
		recs[r.Service] = r
	}
	// rise's readings ask for less than its 1g: the agent keeps peaks and advises it; df
	// reads once per interval and may have missed one (it often reads 0 B here), so it
	// advises no reduction and says why.
	rise := recs["rise"]
	switch {
	case method == "agent" && (!rise.Change || rise.RecommendedBytes >= 1<<30 || rise.NoReduction != ""):
		t.Errorf("rise read by the agent: %+v, want less than its 1g advised", rise)
	case method == "df" && (rise.ShmSize != "1g" || rise.Change || !strings.Contains(rise.NoReduction, "once per --interval")):
		t.Errorf("rise read by df: %+v, want 1g kept and why", rise)
	}
	if scaled := recs["scaled"]; scaled.Fits || !strings.Contains(scaled.Verdict, "OOM-killed") {
		t.Errorf("scaled: %+v, want a size its 64 MiB limit cannot hold", scaled)
	}
	if left := watchCompanions(t, project); len(left) > 0 {
		t.Errorf("companions left behind: %v", left)
	}
	// Nothing runs in the watched container but its own shell and sleep, and /dev/shm holds
	// only what the workload wrote.
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := project + "-donor-1"
	top, err := c.ContainerTop(context.Background(), name, client.ContainerTopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range top.Processes {
		if cmdline := strings.Join(p, " "); !strings.Contains(cmdline, "sleep 600") {
			t.Errorf("a process other than the workload runs in %s: %s", name, cmdline)
		}
	}
	ls := exec.Command("docker", "exec", name, "ls", "-a", "/dev/shm")
	if got, err := ls.Output(); err != nil || strings.Join(strings.Fields(string(got)), " ") != ". .. d j" {
		t.Errorf("/dev/shm of %s holds %q (%v), want only d and j", name, got, err)
	}
}

// TestWatchKeepsLastPeak watches with an interval longer than the test, so that no
// interval's line ever comes, and kills the container the way a workload dies when /dev/shm
// fills: what the companion read before must still make the service's peak. The workload
// writes only once the test has attached to the companion's output, and is killed once the
// companion has written the rise line of that write: the test waits on events, not time.
func TestWatchKeepsLastPeak(t *testing.T) {
	const stack = `services:
  spike:
    image: {{image}}
    pull_policy: never
    command: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done; dd if=/dev/zero of=/dev/shm/s bs=1M count=32 2>/dev/null; exec sleep 600"]
`
	dir, project, compose := upStack(t, stack)
	cmd := exec.Command(buildDoctor(t), "watch", "--format", "json", "--interval", "1h", "-p", project, dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	budget := watchBudget(t)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(budget); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %s after %s\n%s", what, budget, errb.String())
			}
		}
	}
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The companion's output, attached to while it runs (a companion that is replaced or not
	// yet there is looked for again).
	var att client.ContainerAttachResult
	waitFor("companion to attach to", func() bool {
		for _, cp := range watchCompanions(t, project) {
			name, state, _ := strings.Cut(cp, " ") // "/name[,/other] state"
			name, _, _ = strings.Cut(name, ",")
			if state != "running" {
				continue
			}
			if att, err = c.ContainerAttach(context.Background(), strings.TrimPrefix(name, "/"), client.ContainerAttachOptions{Stream: true, Stdout: true}); err == nil {
				return true
			}
		}
		return false
	})
	defer att.Close()
	agentOut, w := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(w, io.Discard, att.Reader); w.CloseWithError(err) }()
	if err := exec.Command("docker", "exec", project+"-spike-1", "sh", "-c", ": >/tmp/go").Run(); err != nil {
		t.Fatal(err)
	}
	// A companion that never writes that line is cut off after the budget.
	safety := time.AfterFunc(budget, func() { att.Close() })
	for sc := bufio.NewScanner(agentOut); ; {
		if !sc.Scan() {
			t.Fatalf("the companion ended, or wrote no rise line of the write within %s: %v", budget, sc.Err())
		}
		var l protocol.WatchLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Rise && l.UsedBytes >= 32<<20 {
			break
		}
	}
	safety.Stop()
	compose("kill", "spike")
	waitFor("end of the companion", func() bool { return len(watchCompanions(t, project)) == 0 })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum analyze.WatchSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || len(sum.Services) != 1 {
		t.Fatalf("last line: %v\n%s", err, out.String())
	}
	if u := sum.Services[0]; !within(u.PeakBytes, 32<<20) {
		t.Errorf("spike: peak %v, want 32 MiB: the readings of a container that ended between two lines were lost", deref(u.PeakBytes))
	}
}

// TestWatchNoReductionWithoutPeaks watches a service whose shm_size of 256m is more than its
// readings (8 MiB) ask for. Read by df, once per interval, a spike between two readings
// could have been missed: the summary keeps 256m, writes no patch and says why. Read by
// the agent, which keeps peaks, the same readings size it down to 64m.
func TestWatchNoReductionWithoutPeaks(t *testing.T) {
	const stack = `services:
  held:
    image: {{image}}
    pull_policy: never
    shm_size: 256m
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/shm/h bs=1M count=8 2>/dev/null; exec sleep 600"]
`
	dir, project, _ := upStack(t, stack)
	for _, c := range []struct {
		method, size string
		change       bool
		why, diff    string
	}{
		{"df", "256m", false, "df reads /dev/shm once per --interval", ""},
		{"agent", "64m", true, "", "-    shm_size: 256m\n+    shm_size: 64m\n"},
	} {
		t.Run(c.method, func(t *testing.T) {
			awaited := func() string { return "held's 8 MiB read" }
			sum := watchUntil(t, awaited, func(s analyze.WatchSample) bool {
				return len(s.Services) == 1 && s.Services[0].PeakBytes != nil && *s.Services[0].PeakBytes >= 8<<20
			}, "watch", "--format", "json", "--interval", "100ms", "--method", c.method, "-p", project, dir)
			if len(sum.Recommendations) != 1 {
				t.Fatalf("recommendations: %+v", sum.Recommendations)
			}
			r := sum.Recommendations[0]
			if !slicesContain(sum.Methods, analyze.WatchMethod(c.method)) || r.ShmSize != c.size || r.Change != c.change ||
				!strings.Contains(r.NoReduction, c.why) || (c.why == "") != (r.NoReduction == "") || !strings.Contains(r.Diff, c.diff) || (c.diff == "") != (r.Diff == "") {
				t.Errorf("read by %s (methods %v), peak %s: shm_size %s, change %v, no_reduction %q, diff %q; want %s, change %v, a reason naming %q, diff %q",
					c.method, sum.Methods, analyze.FormatSize(r.PeakBytes), r.ShmSize, r.Change, r.NoReduction, r.Diff, c.size, c.change, c.why, c.diff)
			}
		})
	}
}

// watchBudget bounds how long a watch of these tests may go without the sample it waits for:
// a safety net for a watch that hangs or a stack that never gets there, far above what a
// loaded machine needs (the tests wait on the samples, not on the clock), and short of the
// test binary's own deadline, so that the failure says what was awaited.
func watchBudget(t *testing.T) time.Duration {
	budget := 5 * time.Minute
	if d, ok := t.Deadline(); ok {
		budget = max(min(budget, time.Until(d)-time.Minute), 0)
	}
	return budget
}

// watchUntil runs a watch with --format json, sends it Ctrl-C at the first sample that
// satisfies done, and returns the summary. A watch that has not shown that sample within
// watchBudget gets Ctrl-C all the same, and is killed a minute later if it has not ended
// then; the test fails naming what it awaited (awaited) and the last sample's readings.
func watchUntil(t *testing.T, awaited func() string, done func(analyze.WatchSample) bool, args ...string) analyze.WatchSummary {
	t.Helper()
	cmd := exec.Command(buildDoctor(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var (
		mu      sync.Mutex
		sent    bool // Ctrl-C sent
		expired bool // the budget ran out before the awaited sample
	)
	budget := watchBudget(t)
	safety := time.AfterFunc(budget, func() {
		mu.Lock()
		defer mu.Unlock()
		if !sent {
			expired, sent = true, true
			_ = cmd.Process.Signal(syscall.SIGINT)
		}
		time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	})
	defer safety.Stop()
	var sum analyze.WatchSummary
	var last analyze.WatchSample
	samples := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s analyze.WatchSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, sc.Text())
		}
		if s.Type == "summary" {
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if s.Type != "sample" {
			t.Fatalf("line of type %q: %s", s.Type, sc.Text())
		}
		samples++
		last = s
		mu.Lock()
		waiting := !sent
		mu.Unlock()
		if waiting && done(s) {
			mu.Lock()
			var err error
			if !sent {
				sent = true
				err = cmd.Process.Signal(syscall.SIGINT)
			}
			mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	mu.Lock()
	timedOut := expired
	mu.Unlock()
	if timedOut {
		var read []string
		for _, u := range last.Services {
			read = append(read, fmt.Sprintf("%s used %v peak %v running %d", u.Service, deref(u.UsedBytes), deref(u.PeakBytes), u.Running))
		}
		t.Fatalf("the watch did not show %s within %s (%d samples; the last read %s); exit %v\n%s",
			awaited(), budget, samples, strings.Join(read, ", "), err, errb.String())
	}
	if err != nil || sum.Type != "summary" {
		t.Fatalf("watch: %v, summary %q\n%s", err, sum.Type, errb.String())
	}
	return sum
}
