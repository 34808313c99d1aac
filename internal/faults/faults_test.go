//go:build faults

package faults

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/watch"
)

// probeStack is the stack the signal and daemon faults probe: a write probe of 1 GiB, an IPC
// donor held up for its joiner, and a service on the host's /dev/shm, so that a fault lands
// while containers run, write, and wait for each other.
const probeStack = `services:
  trainer:
    image: app
    shm_size: 1g
  donor:
    image: app
    ipc: shareable
    shm_size: 128m
  joiner:
    image: app
    ipc: service:donor
  hostipc:
    image: app
    ipc: host
`

// smallStack is the stack many doctors probe at once: small enough that four runs fit in
// the memory cgroup together, so that their verdicts can only differ through a fault.
const smallStack = `services:
  app:
    image: app
    shm_size: 256m
  db:
    image: postgres:16
`

// oversizedStack asks for far more shared memory than the host has, in every service.
const oversizedStack = `services:
  a:
    image: app
    shm_size: 100g
  b:
    image: app
    shm_size: 100g
  c:
    image: app
    shm_size: 100g
  d:
    image: app
    shm_size: 100g
`

// faultTimeout is the --probe-timeout of the runs a daemon fault hits: the doctor must end
// within it plus grace.
const faultTimeout = 10 * time.Second

// eventWait bounds the wait for the event a fault is injected on.
const eventWait = 60 * time.Second

// daemonNamed is how the doctor's message must name the daemon that failed.
var daemonNamed = regexp.MustCompile(`(?i)daemon`)

func checkArgs(timeout time.Duration) []string {
	return []string{"--probe", "always", "--format", "json", "--probe-timeout", timeout.String(), "--no-config"}
}

// midProbe starts a doctor on dir and returns it once one of its probe containers has started
// (the daemon's start event), or nil when none started within eventWait.
func midProbe(t *testing.T, dir string, timeout time.Duration) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	started := d.subscribe(ctx, "type", "container", "event", "start", "label", engine.LabelProbe)
	p := doctor(t, dir, checkArgs(timeout)...)
	if _, err := await(ctx, started, "probe container start"); err != nil {
		p.wait(time.Since(p.started))
		t.Errorf("%v; the doctor: %s: %s", err, p.end(), p.output())
		return nil
	}
	return p
}

// TestSignalMidProbe: Ctrl-C and SIGTERM while probe containers run end the doctor with the
// interrupted status within the grace, with nothing left; after SIGKILL, which the doctor
// cannot handle, the next run removes the dead run's containers.
func TestSignalMidProbe(t *testing.T) {
	dir := stack(t, "probe", probeStack)
	for _, tc := range []struct {
		sig  syscall.Signal
		want []int
	}{{syscall.SIGINT, []int{130}}, {syscall.SIGTERM, []int{130, 143}}} {
		t.Run(sigName[tc.sig], func(t *testing.T) {
			want := fmt.Sprintf("exit %s within %s, nothing left", joinInts(tc.want), grace)
			r := newRow(t, fmt.Sprintf("%s mid-probe", sigName[tc.sig]), want)
			for i := 1; i <= runs; i++ {
				clean(t, false)
				p := midProbe(t, dir, time.Minute)
				if p == nil {
					r.observe("no probe container started")
					continue
				}
				p.signal(tc.sig)
				sent := time.Now()
				p.wait(time.Since(p.started) + grace + 20*time.Second)
				after := p.elapsed - sent.Sub(p.started)
				l := count(t, r)
				r.observe("%s%s", p.end(), leftNote(l))
				if !slices.Contains(tc.want, p.code) || p.killed || after > grace {
					t.Errorf("run %d: %s %s after the signal, want exit %s within %s; stderr: %s", i, p.end(), after.Round(100*time.Millisecond), joinInts(tc.want), grace, p.output())
				}
				if !l.zero() {
					t.Errorf("run %d: left %s", i, l)
				}
			}
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		r := newRow(t, "SIGKILL mid-probe", "the next run removes the dead run's containers, exits 0 or 1; nothing left")
		for i := 1; i <= runs; i++ {
			clean(t, false)
			p := midProbe(t, dir, time.Minute)
			if p == nil {
				r.observe("no probe container started")
				continue
			}
			p.signal(syscall.SIGKILL)
			p.wait(time.Since(p.started) + 10*time.Second)
			next := nextRun(t, i, dir)
			l := count(t, r)
			r.observe("next run %s%s", next.end(), leftNote(l))
			if !l.zero() {
				t.Errorf("run %d: after the next run, left %s", i, l)
			}
		}
	})
}

// TestSignalMidWatch: Ctrl-C and SIGTERM are a watch's normal end (its documented exit
// status 0, with the summary), and leave no companion; after SIGKILL the next watch leaves
// none either.
func TestSignalMidWatch(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sigName[sig], func(t *testing.T) {
			r := newRow(t, sigName[sig]+" mid-watch", "exit 0 with the summary (a watch's normal end), nothing left")
			for i := 1; i <= runs; i++ {
				clean(t, false)
				dir, project := workloads(t)
				p := midWatch(t, dir, project, 0)
				if p == nil {
					r.observe("no companion started")
					continue
				}
				p.signal(sig)
				sent := time.Now()
				p.wait(time.Since(p.started) + grace + 20*time.Second)
				after := p.elapsed - sent.Sub(p.started)
				l := count(t, r)
				summary := strings.Contains(p.stdout.String(), `"type":"summary"`) || strings.Contains(p.stdout.String(), `"type": "summary"`)
				obs := p.end()
				if !summary {
					obs += " without summary"
				}
				r.observe("%s%s", obs, leftNote(l))
				if p.code != 0 || p.killed || after > grace || !summary {
					t.Errorf("run %d: %s %s after the signal (summary printed: %v), want exit 0 with the summary within %s; stderr: %s", i, p.end(), after.Round(100*time.Millisecond), summary, grace, p.output())
				}
				if !l.zero() {
					t.Errorf("run %d: left %s", i, l)
				}
			}
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		r := newRow(t, "SIGKILL mid-watch", "the next watch exits 0; nothing left after it")
		for i := 1; i <= runs; i++ {
			clean(t, false)
			dir, project := workloads(t)
			p := midWatch(t, dir, project, 0)
			if p == nil {
				r.observe("no companion started")
				continue
			}
			p.signal(syscall.SIGKILL)
			p.wait(time.Since(p.started) + 10*time.Second)
			next := nextWatch(t, i, dir, project)
			l := count(t, r)
			r.observe("next watch %s%s", next.end(), leftNote(l))
			if !l.zero() {
				t.Errorf("run %d: after the next watch, left %s", i, l)
			}
		}
	})
}

// TestDaemonKilled: a dockerd that dies mid-probe or mid-watch ends the doctor with exit 2
// and a message naming the daemon, within --probe-timeout plus the grace (a watch: within the
// grace of the death, long before its --duration); once the daemon is back, the next run
// leaves nothing of the dead one.
func TestDaemonKilled(t *testing.T) {
	t.Run("probe", func(t *testing.T) {
		dir := stack(t, "probe", probeStack)
		r := newRow(t, "dockerd SIGKILL mid-probe", fmt.Sprintf("exit 2 naming the daemon within --probe-timeout %s + %s; after a restart the next run leaves nothing", faultTimeout, grace))
		for i := 1; i <= runs; i++ {
			clean(t, false)
			p := midProbe(t, dir, faultTimeout)
			if p == nil {
				r.observe("no probe container started")
				continue
			}
			if err := d.kill(); err != nil {
				t.Fatal(err)
			}
			p.wait(faultTimeout + grace + 20*time.Second)
			r.took(p.elapsed)
			named := daemonNamed.MatchString(p.stderr.String())
			ok := p.code == 2 && !p.killed && p.elapsed <= faultTimeout+grace && named
			if !ok {
				t.Errorf("run %d: %s after %s (daemon named: %v), want exit 2 naming the daemon within %s; stderr: %s", i, p.end(), p.elapsed.Round(100*time.Millisecond), named, faultTimeout+grace, p.output())
			}
			if err := d.restart(); err != nil {
				r.observe("%s%s, the daemon did not restart", p.end(), unnamed(named))
				t.Fatalf("restarting the private dockerd: %v", err)
			}
			next := nextRun(t, i, dir)
			l := count(t, r)
			r.observe("%s%s, next run %s%s", p.end(), unnamed(named), next.end(), leftNote(l))
			if !l.zero() {
				t.Errorf("run %d: after the restart and the next run, left %s", i, l)
			}
		}
	})
	t.Run("watch", func(t *testing.T) {
		r := newRow(t, "dockerd SIGKILL mid-watch", fmt.Sprintf("exit 2 naming the daemon within %s of its death; after a restart the next watch leaves nothing", grace))
		for i := 1; i <= runs; i++ {
			clean(t, false)
			dir, project := workloads(t)
			p := midWatch(t, dir, project, 10*time.Minute)
			if p == nil {
				r.observe("no companion started")
				continue
			}
			died := time.Now() // SIGKILL is sent now; kill also waits for containerd to go
			if err := d.kill(); err != nil {
				t.Fatal(err)
			}
			p.wait(time.Since(p.started) + grace + 20*time.Second)
			after := p.elapsed - died.Sub(p.started)
			r.took(after)
			named := daemonNamed.MatchString(p.stderr.String())
			if p.code != 2 || p.killed || after > grace || !named {
				t.Errorf("run %d: %s %s after the daemon died (daemon named: %v), want exit 2 naming the daemon within %s; stderr: %s", i, p.end(), after.Round(100*time.Millisecond), named, grace, p.output())
			}
			if err := d.restart(); err != nil {
				r.observe("%s%s, the daemon did not restart", p.end(), unnamed(named))
				t.Fatalf("restarting the private dockerd: %v", err)
			}
			// The workload died with the daemon (no live restore): it is started again, the
			// companions of the dead watch are left as they are.
			restartWorkloads(t, project)
			next := nextWatch(t, i, dir, project)
			l := count(t, r)
			r.observe("%s%s, next watch %s%s", p.end(), unnamed(named), next.end(), leftNote(l))
			if !l.zero() {
				t.Errorf("run %d: after the restart and the next watch, left %s", i, l)
			}
		}
	})
}

// TestDaemonHung: a dockerd stopped (SIGSTOP) mid-probe ends the doctor with exit 2 within
// --probe-timeout plus the grace; once it runs again (SIGCONT), the next run leaves nothing.
func TestDaemonHung(t *testing.T) {
	dir := stack(t, "probe", probeStack)
	r := newRow(t, "dockerd SIGSTOP mid-probe", fmt.Sprintf("exit 2 within --probe-timeout %s + %s; after SIGCONT the next run leaves nothing", faultTimeout, grace))
	for i := 1; i <= runs; i++ {
		clean(t, false)
		p := midProbe(t, dir, faultTimeout)
		if p == nil {
			r.observe("no probe container started")
			continue
		}
		if err := d.signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		p.wait(faultTimeout + grace + 5*time.Second)
		if err := d.signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		r.took(p.elapsed)
		if p.code != 2 || p.killed || p.elapsed > faultTimeout+grace {
			t.Errorf("run %d: %s after %s, want exit 2 within %s; stderr: %s", i, p.end(), p.elapsed.Round(100*time.Millisecond), faultTimeout+grace, p.output())
		}
		next := nextRun(t, i, dir)
		l := count(t, r)
		late := ""
		if p.elapsed > faultTimeout+grace {
			late = " late"
		}
		r.observe("%s%s, next run %s%s", p.end(), late, next.end(), leftNote(l))
		if !l.zero() {
			t.Errorf("run %d: after SIGCONT and the next run, left %s", i, l)
		}
	}
}

// cleaners is how many `probe --clean` loops race the doctors.
const cleaners = 3

// TestCleanRace: `probe --clean` run back to back, and again at every image event, while
// three doctors start on a cold cache: no run may lose its image to it (a false SHM205 "No
// such image"), and nothing is left.
func TestCleanRace(t *testing.T) {
	dir := stack(t, "small", smallStack)
	r := newRow(t, "probe --clean racing 3 live runs", "no SHM205 \"No such image\", runs exit 0 or 1, nothing left")
	for i := 1; i <= runs; i++ {
		clean(t, true)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		imageEvents := d.subscribe(ctx, "type", "image")
		var doctors []*proc
		for range 3 {
			doctors = append(doctors, doctor(t, dir, checkArgs(time.Minute)...))
		}
		allDone := make(chan struct{})
		go func() {
			for _, p := range doctors {
				p.wait(time.Minute + grace)
			}
			close(allDone)
		}()
		var cleans sync.WaitGroup
		var mu sync.Mutex
		nClean := 0
		cleanOnce := func() {
			c := doctor(t, dir, "probe", "--clean")
			c.wait(30 * time.Second)
			mu.Lock()
			nClean++
			mu.Unlock()
		}
		// Three cleaners back to back, so that one is always between its listing and its
		// removals, and one more at each image event.
		cleans.Add(cleaners + 1)
		for range cleaners {
			go func() {
				defer cleans.Done()
				for {
					select {
					case <-allDone:
						return
					default:
						cleanOnce()
					}
				}
			}()
		}
		go func() { // at once when an image is imported or tagged
			defer cleans.Done()
			for {
				select {
				case <-allDone:
					return
				case <-ctx.Done():
					return
				case <-imageEvents:
					cleanOnce()
				}
			}
		}()
		<-allDone
		cancel()
		cleans.Wait()
		var bad []string
		var ends []string
		for j, p := range doctors {
			ends = append(ends, p.end())
			out := p.stdout.String() + p.stderr.String()
			switch {
			case strings.Contains(out, "SHM205") || strings.Contains(out, "No such image"):
				bad = append(bad, fmt.Sprintf("doctor %d lost its image (SHM205/No such image), %s: %s", j+1, p.end(), p.output()))
			case p.code != 0 && p.code != 1:
				bad = append(bad, fmt.Sprintf("doctor %d: %s: %s", j+1, p.end(), p.output()))
			}
		}
		l := count(t, r)
		obs := "runs " + strings.Join(ends, ", ")
		if len(bad) > 0 {
			obs += ", " + strconv.Itoa(len(bad)) + " run(s) failed falsely"
		}
		r.observe("%s%s", obs, leftNote(l))
		t.Logf("run %d: %d clean(s) raced the doctors", i, nClean)
		for _, b := range bad {
			t.Errorf("run %d: %s", i, b)
		}
		if !l.zero() {
			t.Errorf("run %d: left %s", i, l)
		}
	}
}

// TestConcurrentDoctors: four doctors probing one stack at once on a cold cache agree on the
// verdict and leave no untagged image (nor anything else).
func TestConcurrentDoctors(t *testing.T) {
	dir := stack(t, "small", smallStack)
	r := newRow(t, "4 concurrent doctors, cold cache", "all 4 agree on the verdict; no untagged image, nothing left")
	for i := 1; i <= runs; i++ {
		clean(t, true)
		var ps []*proc
		for range 4 {
			ps = append(ps, doctor(t, dir, checkArgs(time.Minute)...))
		}
		verdicts := map[string]int{}
		for _, p := range ps {
			p.wait(time.Minute + grace)
			rep, err := p.report()
			if err != nil {
				verdicts[p.end()+" without a report"]++
				continue
			}
			verdicts[rep.verdict(p.code)]++
		}
		l := count(t, r)
		if len(verdicts) == 1 {
			r.observe("all agree%s", leftNote(l))
		} else {
			r.observe("%d different verdicts%s", len(verdicts), leftNote(l))
			t.Errorf("run %d: the doctors disagree: %v", i, verdicts)
		}
		for v := range verdicts {
			if !strings.HasPrefix(v, "exit 0 ") && !strings.HasPrefix(v, "exit 1 ") {
				t.Errorf("run %d: a doctor ended with %s, want exit 0 or 1", i, v)
			}
		}
		if !l.zero() {
			t.Errorf("run %d: left %s", i, l)
		}
	}
}

// TestMemoryBudget: four services with shm_size 100g, probed in the daemon's memory cgroup:
// the write probes together plan at most one budget, half of the host's available memory,
// and the host's available memory never falls below a floor (a tenth of its memory, 1 GiB at
// least) while they write.
func TestMemoryBudget(t *testing.T) {
	dir := stack(t, "oversized", oversizedStack)
	r := newRow(t, "4 × shm_size 100g, memory cgroup", "planned write total ≤ half of MemAvailable; host MemAvailable above its floor; exit 0 or 1")
	for i := 1; i <= runs; i++ {
		clean(t, false)
		avail, total, err := meminfo()
		if err != nil {
			t.Fatal(err)
		}
		floor := max(total/10, 1<<30)
		budget := avail / 2
		p := doctor(t, dir, checkArgs(time.Minute)...)
		low := lowestAvailable(p.done)
		p.wait(time.Minute + grace)
		lowest := <-low
		l := count(t, r)
		rep, err := p.report()
		if err != nil {
			r.observe("%s without a report", p.end())
			t.Errorf("run %d: %v", i, err)
			continue
		}
		var planned int64
		var oom int
		for _, pr := range rep.Projects {
			for _, s := range pr.Services {
				if s.Probe != nil {
					planned += s.Probe.Write.TargetBytes
					if s.Probe.Write.Outcome == analyze.WriteOOMKilled {
						oom++
					}
				}
			}
		}
		over := float64(planned) > 1.05*float64(budget) // MemAvailable moves between readings
		verdict := "within"
		if over {
			verdict = "over"
		}
		kept := "kept"
		if lowest < floor {
			kept = "crossed"
		}
		r.observe("planned total %s the budget, host floor %s, %s", verdict, kept, p.end())
		r.detail("planned up to %.1f× the budget", float64(planned)/float64(budget), func(old, new float64) bool { return new > old })
		t.Logf("run %d: planned %s against a budget of %s (MemAvailable %s); host MemAvailable low %s, floor %s; %d writer(s) OOM-killed in the cgroup", i, gib(planned), gib(budget), gib(avail), gib(lowest), gib(floor), oom)
		if over {
			t.Errorf("run %d: the write probes planned %s together, over the budget of %s (half of MemAvailable %s)", i, gib(planned), gib(budget), gib(avail))
		}
		if lowest < floor {
			t.Errorf("run %d: the host's MemAvailable fell to %s, below the floor %s", i, gib(lowest), gib(floor))
		}
		if p.code != 0 && p.code != 1 {
			t.Errorf("run %d: %s, want exit 0 or 1; stderr: %s", i, p.end(), p.output())
		}
		if !l.zero() {
			t.Errorf("run %d: left %s", i, l)
		}
	}
}

// ---- watch workloads ----

// workloadImage is the suite's workload image: the machine's static busybox, imported.
const workloadImage = "shmdoctor-faults-busybox:1"

// labelWorkload marks the suite's own workload containers.
const labelWorkload = "io.shmdoctor.faults.workload"

var (
	workloadOnce sync.Once
	workloadErr  error
)

// importBusybox imports a scratch image holding /usr/bin/busybox (busybox-static) into the
// private daemon: no registry.
func importBusybox() error {
	bin, err := os.ReadFile("/usr/bin/busybox")
	if err != nil {
		return fmt.Errorf("the watch faults need a static busybox at /usr/bin/busybox (apt-get install busybox-static): %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	hdrs := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	for _, applet := range []string{"sh", "dd", "sleep", "df"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := d.api.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, workloadImage, client.ImageImportOptions{})
	if err != nil {
		return fmt.Errorf("importing the busybox image: %w", err)
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

var projectSeq int

// workloads starts a compose project of two services, a and b, as docker compose would
// label them, each holding 8 MiB in its /dev/shm, and writes its compose file; it returns
// the file's folder and the project name.
func workloads(t *testing.T) (dir, project string) {
	t.Helper()
	workloadOnce.Do(func() { workloadErr = importBusybox() })
	if workloadErr != nil {
		t.Fatal(workloadErr)
	}
	projectSeq++
	project = fmt.Sprintf("faultswatch%d", projectSeq)
	dir = stack(t, project, fmt.Sprintf("name: %s\nservices:\n  a:\n    image: %s\n  b:\n    image: %s\n", project, workloadImage, workloadImage))
	startWorkloads(t, project)
	return dir, project
}

func startWorkloads(t *testing.T, project string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range []string{"a", "b"} {
		cfg := &container.Config{
			Image: workloadImage,
			// sleep as PID 1 ignores SIGTERM: a daemon restarted after a kill would give each
			// workload its 10 seconds before it kills it.
			StopSignal: "SIGKILL",
			Cmd:        []string{"sh", "-c", "dd if=/dev/zero of=/dev/shm/w bs=1M count=8 2>/dev/null; exec sleep 600"},
			Labels: map[string]string{
				watch.ComposeProjectLabel: project, watch.ComposeServiceLabel: svc,
				watch.ComposeNumberLabel: "1", watch.ComposeOneoffLabel: "False", labelWorkload: "1",
			},
		}
		hc := &container.HostConfig{NetworkMode: network.NetworkNone}
		res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{Name: project + "-" + svc + "-1", Config: cfg, HostConfig: hc})
		if err != nil {
			t.Fatalf("creating the workload %s: %v", svc, err)
		}
		if _, err := d.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatalf("starting the workload %s: %v", svc, err)
		}
	}
}

// restartWorkloads removes the project's workload containers (the suite's own, by label)
// and starts them again.
func restartWorkloads(t *testing.T, project string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := make(client.Filters).Add("label", labelWorkload).Add("label", watch.ComposeProjectLabel+"="+project)
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if _, err := d.api.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !isGone(err) {
			t.Fatal(err)
		}
	}
	startWorkloads(t, project)
}

func watchArgs(project string, duration time.Duration) []string {
	args := []string{"watch", "--method", "agent", "--interval", "200ms", "--format", "json", "-p", project}
	if duration > 0 {
		args = append(args, "--duration", duration.String())
	}
	return append(args, "compose.yaml")
}

// midWatch starts a watch of the project and returns it once a companion has started (the
// daemon's start event), or nil when none started within eventWait.
func midWatch(t *testing.T, dir, project string, duration time.Duration) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	started := d.subscribe(ctx, "type", "container", "event", "start", "label", engine.LabelWatch)
	p := doctor(t, dir, watchArgs(project, duration)...)
	if _, err := await(ctx, started, "companion start"); err != nil {
		p.signal(syscall.SIGKILL)
		p.wait(time.Since(p.started) + 10*time.Second)
		t.Errorf("%v; the watch: %s: %s", err, p.end(), p.output())
		return nil
	}
	return p
}

// ---- small helpers ----

// nextRun runs the doctor again on dir, as a user would after a fault: it must remove what
// the run before it left, and end with its verdict (exit 0 or 1).
func nextRun(t *testing.T, i int, dir string) *proc {
	t.Helper()
	next := doctor(t, dir, checkArgs(time.Minute)...)
	next.wait(time.Minute + grace)
	if next.code != 0 && next.code != 1 {
		t.Errorf("run %d: the next run: %s, want exit 0 or 1; stderr: %s", i, next.end(), next.output())
	}
	return next
}

// nextWatch watches project for two seconds after a fault: it must remove what the watch
// before it left, and exit 0.
func nextWatch(t *testing.T, i int, dir, project string) *proc {
	t.Helper()
	next := doctor(t, dir, watchArgs(project, 2*time.Second)...)
	next.wait(time.Minute)
	if next.code != 0 {
		t.Errorf("run %d: the next watch: %s, want exit 0; stderr: %s", i, next.end(), next.output())
	}
	return next
}

// detail records a figure of the row for the matrix, the one better for keep: the worst run.
func (r *row) detail(format string, v float64, worse func(old, new float64) bool) {
	matrixMu.Lock()
	defer matrixMu.Unlock()
	if r.figureSet && !worse(r.figure, v) {
		return
	}
	r.figure, r.figureSet, r.figureFormat = v, true, format
}

// took records how long a doctor took, for the matrix: the longest of the row's runs.
func (r *row) took(d time.Duration) {
	matrixMu.Lock()
	r.longest = max(r.longest, d)
	matrixMu.Unlock()
}

func leftNote(l leftovers) string {
	if l.zero() {
		return ""
	}
	return ", left " + l.String()
}

func unnamed(named bool) string {
	if named {
		return ""
	}
	return " (daemon not named)"
}

var sigName = map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " or ")
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// meminfo reads MemAvailable and MemTotal in bytes.
func meminfo() (avail, total int64, err error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "MemAvailable:":
			avail = kb << 10
		case "MemTotal:":
			total = kb << 10
		}
	}
	if avail == 0 || total == 0 {
		return 0, 0, fmt.Errorf("no MemAvailable or MemTotal in /proc/meminfo")
	}
	return avail, total, sc.Err()
}

// lowestAvailable samples the host's MemAvailable every 50ms until done is closed and then
// sends the lowest reading: a measurement taken while the doctor runs, not a wait.
func lowestAvailable(done <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		lowest, _, _ := meminfo()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				out <- lowest
				return
			case <-tick.C:
				if a, _, err := meminfo(); err == nil && a < lowest {
					lowest = a
				}
			}
		}
	}()
	return out
}
