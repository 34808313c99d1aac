//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// agentBound is how long an agent may outlive its doctor, or a companion its watch: the
// agent stops when the doctor's attach stream ends, whatever the machine's load.
const agentBound = 5 * time.Second

// TestSignalUnderLoad: with both cores busy compiling (four go build loops, each from an
// empty build cache), a doctor killed or stopped mid-probe leaves no agent running more than
// agentBound after the signal, and a watch killed mid-watch leaves no companion: the agent
// follows its doctor's attach stream, not its deadline (--probe-timeout plus the grace).
func TestSignalUnderLoad(t *testing.T) {
	stop := busy(t, 4)
	defer stop()
	if share, err := waitBusy(0.9, eventWait); err != nil {
		t.Fatalf("the load never kept the cores busy (at most %.0f%%): %v", 100*share, err)
	}
	dir := stack(t, "probeload", probeStack)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run("probe "+sigName[sig], func(t *testing.T) {
			after := "nothing left"
			if sig == syscall.SIGKILL {
				after = "nothing left after the next run"
			}
			r := newRow(t, sigName[sig]+" mid-probe, both cores busy", fmt.Sprintf("every agent stops within %s; %s", agentBound, after))
			for i := 1; i <= runs; i++ {
				clean(t, false)
				err := signalMid(t, r, i, dir, checkArgs(time.Minute), engine.LabelProbe, sig, events.ActionDie)
				if err != nil {
					t.Errorf("run %d: %v", i, err)
				}
				if sig == syscall.SIGKILL {
					nextRun(t, i, dir)
				}
				left := count(t, r)
				r.observe("agents stopped in time %v%s", err == nil, leftNote(left))
				if !left.zero() {
					t.Errorf("run %d: left %s", i, left)
				}
			}
		})
	}
	t.Run("watch SIGKILL", func(t *testing.T) {
		r := newRow(t, "SIGKILL mid-watch, both cores busy", fmt.Sprintf("every companion stops and goes within %s; nothing left after the next watch", agentBound))
		for i := 1; i <= runs; i++ {
			clean(t, false)
			dir, project := workloads(t)
			// Companions are removed by the engine when they end (AutoRemove): wait for that.
			err := signalMid(t, r, i, dir, watchArgs(project, 0), engine.LabelWatch, syscall.SIGKILL, events.ActionDestroy)
			if err != nil {
				t.Errorf("run %d: %v", i, err)
			}
			// A companion created and never started (the watch died between the two calls)
			// is the next watch's to remove.
			nextWatch(t, i, dir, project)
			left := count(t, r)
			r.observe("companions gone in time %v%s", err == nil, leftNote(left))
			if !left.zero() {
				t.Errorf("run %d: left %s", i, left)
			}
		}
	})
}

// signalMid starts a doctor in dir with args, sends it sig once one of its containers (those
// carrying label) has started, and follows them until each has ended (end: its death, or for
// a companion its removal), at most agentBound after the signal. It records the row's
// figures, and returns why they did not all end in time.
func signalMid(t *testing.T, r *row, i int, dir string, args []string, label string, sig syscall.Signal, end events.Action) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	evs := d.subscribe(ctx, "type", "container", "label", label)
	before := readCPU()
	p := doctor(t, dir, args...)
	l := newLives()
	if err := l.untilStart(ctx, evs); err != nil {
		p.signal(syscall.SIGKILL)
		p.wait(time.Since(p.started) + 10*time.Second)
		t.Fatalf("run %d: %v; the doctor: %s: %s", i, err, p.end(), p.output())
	}
	load := readCPU().busySince(before)
	r.detailBusy(load)
	p.signal(sig)
	sent := time.Now()
	p.wait(time.Since(p.started) + grace + 20*time.Second)
	last, err := l.untilStopped(ctx, evs, label, sent.Add(agentBound), end)
	r.detail("longest %.1f s after the signal", last.Sub(sent).Seconds(), func(old, new float64) bool { return new > old })
	if err != nil {
		return fmt.Errorf("cores %.0f%% busy: %w", 100*load, err)
	}
	return nil
}

// lives follows the containers of one doctor through the daemon's events.
type lives struct {
	started map[string]bool
	ended   map[string]bool
}

func newLives() *lives { return &lives{started: map[string]bool{}, ended: map[string]bool{}} }

func (l *lives) note(m events.Message, end events.Action) {
	switch m.Action {
	case events.ActionStart:
		l.started[m.Actor.ID] = true
	case end:
		l.ended[m.Actor.ID] = true
	}
}

// untilStart reads events until the first container starts.
func (l *lives) untilStart(ctx context.Context, evs <-chan events.Message) error {
	for len(l.started) == 0 {
		m, err := await(ctx, evs, "container start")
		if err != nil {
			return err
		}
		l.note(m, "")
	}
	return nil
}

// untilStopped reads events until every container seen to start has ended (its end
// event) and the daemon lists none of the label running, or until the bound passes. It
// returns when the last one ended. A container whose start was in flight when its doctor
// died starts after the signal: it is waited for too.
func (l *lives) untilStopped(ctx context.Context, evs <-chan events.Message, label string, bound time.Time, end events.Action) (time.Time, error) {
	last := time.Now()
	ctx, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	for {
		for l.running() > 0 {
			m, err := await(ctx, evs, "the end of every container")
			if err != nil {
				return time.Now(), fmt.Errorf("%d container(s) still there %s after the signal", l.running(), agentBound)
			}
			l.note(m, end)
			last = time.Now()
		}
		// A start the daemon has not reported yet shows in its list.
		res, err := d.api.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", label).Add("status", "running")})
		if err != nil {
			return time.Now(), fmt.Errorf("listing running containers: %v", err)
		}
		if len(res.Items) == 0 {
			return last, nil
		}
		for _, c := range res.Items {
			l.started[c.ID] = true
		}
	}
}

func (l *lives) running() int {
	n := 0
	for id := range l.started {
		if !l.ended[id] {
			n++
		}
	}
	return n
}

// busy keeps n go build loops compiling the doctor, each from a build cache it empties
// before every build, until the returned function is called; it waits for them to stop.
func busy(t *testing.T, n int) (stop func()) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	builds := make(chan error, n)
	for i := range n {
		cache := filepath.Join(t.TempDir(), fmt.Sprint("gocache", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_ = os.RemoveAll(cache)
				cmd := exec.CommandContext(ctx, goBin, "build", "-o", os.DevNull, "./cmd/shmdoctor")
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-buildvcs=false")
				if out, err := cmd.CombinedOutput(); err != nil && ctx.Err() == nil {
					builds <- fmt.Errorf("go build: %v: %s", err, strings.TrimSpace(string(out)))
					return
				}
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		close(builds)
		for err := range builds {
			t.Errorf("the load did not run: %v", err)
		}
	}
}

// cpuTimes is the machine's CPU time from /proc/stat's first line, in clock ticks.
type cpuTimes struct{ busy, total int64 }

func readCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var c cpuTimes
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		c.total += n
		if i != 3 && i != 4 { // idle, iowait
			c.busy += n
		}
	}
	return c
}

// busySince is the share of the CPUs' time spent busy since before (0 to 1).
func (c cpuTimes) busySince(before cpuTimes) float64 {
	if c.total <= before.total {
		return 0
	}
	return float64(c.busy-before.busy) / float64(c.total-before.total)
}

// waitBusy waits until the CPUs spend at least share of half a second busy, for at most
// bound; it returns the highest share seen.
func waitBusy(share float64, bound time.Duration) (float64, error) {
	best := 0.0
	for end := time.Now().Add(bound); time.Now().Before(end); {
		before := readCPU()
		time.Sleep(500 * time.Millisecond) // the window the share is measured over
		got := readCPU().busySince(before)
		if best = max(best, got); got >= share {
			return best, nil
		}
	}
	return best, fmt.Errorf("not %.0f%% busy within %s", 100*share, bound)
}

// detailBusy records in the row the least busy the CPUs were during a run, up to its signal.
func (r *row) detailBusy(share float64) {
	matrixMu.Lock()
	defer matrixMu.Unlock()
	if r.busySet && share >= r.busy {
		return
	}
	r.busy, r.busySet = share, true
}
