package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// The labels docker compose puts on the containers of a project.
const (
	ComposeProjectLabel = "com.docker.compose.project"
	ComposeServiceLabel = "com.docker.compose.service"
	ComposeNumberLabel  = "com.docker.compose.container-number"
	ComposeOneoffLabel  = "com.docker.compose.oneoff"
)

// Options tune a watch.
type Options struct {
	// Project is the compose project name whose containers are watched.
	Project string
	// Interval is the time between two samples; default 1s.
	Interval time.Duration
	// Duration ends the watch; 0 watches until ctx is done.
	Duration time.Duration
	// Method is "auto" (default: stats where the engine reports shmem, else agent, with df
	// where the companion cannot run), or one of the analyze.WatchMethod values.
	Method string
	// Binary is the doctor's own binary for the companion's image; default os.Executable().
	Binary string
	// OnSample is called after every sample with the state of every container seen so far.
	OnSample func(analyze.WatchSample)

	// Fleet, for a Sampler that runs as long as a host does (the exporter): every running
	// container of the engine is watched when Project and Projects are empty, the doctor's own
	// companions excepted, and a container that stops is forgotten. See watchsampler.go.
	Fleet bool
	// Projects, with Fleet, are the compose projects watched; Project counts as one more.
	Projects []string
}

// Watch samples the /dev/shm of every running container of a compose project until ctx is
// done or opts.Duration has passed, following containers that start later and keeping the
// peak of those that exit. It returns every container seen, with the error that stopped it
// early or spoiled its end (a daemon that died or stopped answering) if any. Companion
// containers are removed on every path, within CleanupGrace of the end; ctx being done is the
// normal end of a watch, not an error. A daemon call that does not answer within
// max(2 × Interval, 10s), or by the end of the watch, ends it with an error.
func Watch(ctx context.Context, c engine.Client, opts Options) ([]analyze.WatchedContainer, error) {
	s, err := NewSampler(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close() // stops the companions, sweeps, then releases the run lock
	w := s.w

	runCtx := ctx
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	tick := time.NewTicker(w.o.Interval)
	defer tick.Stop()
	for {
		if err = w.step(runCtx); err != nil {
			break
		}
		if ctx.Err() != nil {
			err = nil
			break
		}
		if opts.OnSample != nil {
			opts.OnSample(w.snapshot(time.Now()))
		}
		select {
		case <-runCtx.Done():
		case <-tick.C:
		}
		if runCtx.Err() != nil {
			err = nil
			break
		}
	}
	time.AfterFunc(engine.CleanupGrace, s.endLife)
	if err == nil && ctx.Err() == nil {
		// The end came with the duration, maybe in the middle of a call the daemon never
		// answered: a watch of a hung daemon must not pass for a full one.
		err = w.checkAlive()
	}
	w.stopAll() // before the final state, so that no companion reports after it
	return w.containers(), err
}

// step is one sample, shared by Watch and Sampler: list and inspect the containers, then read
// every /dev/shm. Its error is the daemon's (the reading is then skipped); one that comes
// because ctx is done is none.
func (w *watcher) step(ctx context.Context) error {
	if err := w.discoverBounded(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	w.sample(ctx)
	return nil
}

// watchCall bounds one daemon call of the watch loop.
func (w *watcher) watchCall() time.Duration { return max(2*w.o.Interval, 10*time.Second) }

// discoverBounded is discover with each call bounded by watchCall; a daemon that does not
// answer in that time is said to have stopped answering.
func (w *watcher) discoverBounded(runCtx context.Context) error {
	ctx, cancel := context.WithTimeout(runCtx, w.watchCall())
	defer cancel()
	err := w.discover(ctx)
	switch {
	case err == nil || runCtx.Err() != nil:
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the Docker daemon at %s stopped answering: it did not answer within %s", w.c.DaemonHost(), w.watchCall())
	}
	return err
}

// checkAlive pings the daemon once at the end of a watch.
func (w *watcher) checkAlive() error {
	ctx, cancel := context.WithTimeout(w.life, engine.HungCheck)
	defer cancel()
	if _, err := w.c.Ping(ctx, client.PingOptions{}); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the Docker daemon at %s stopped answering: it did not answer within %s at the end of the watch", w.c.DaemonHost(), engine.HungCheck)
		}
		return fmt.Errorf("the Docker daemon at %s stopped answering: %s", w.c.DaemonHost(), engine.Reason(err))
	}
	return nil
}

// watcher is one watch: a ledger of the containers seen and their samples, the readers of
// each /dev/shm (stats, df, and the companions that read it for the agent method), and the
// loop that drives them; its finder enters the containers it discovers in the ledger.
type watcher struct {
	c    engine.Client
	o    Options
	life context.Context // for cleanup: survives Ctrl-C, ends engine.CleanupGrace after the watch

	*ledger
	*companions
	*readers
	*finder
}

// newWatcher is a watcher with an empty ledger and no companion yet; life is its cleanup
// context (see lifeOr), nil for one made by a test.
func newWatcher(c engine.Client, o Options, life context.Context) *watcher {
	led := newLedger()
	cps := &companions{c: c, interval: o.Interval, binary: o.Binary, life: life, led: led}
	return &watcher{c: c, o: o, life: life, ledger: led, companions: cps,
		readers: &readers{c: c, interval: o.Interval, led: led, cps: cps},
		finder:  &finder{c: c, o: o, led: led, cps: cps}}
}

// agentTries is how many companions in a row may fail before a group is read with df alone.
const agentTries = 3

// chooseMethod settles the preferred method: stats only where the engine reports shmem.
func (w *watcher) chooseMethod(ctx context.Context) error {
	m := analyze.WatchMethod(w.o.Method)
	switch m {
	case analyze.WatchAgent, analyze.WatchDf:
		w.method = m
		return nil
	case "", "auto", analyze.WatchStats:
	default:
		return fmt.Errorf("invalid watch method %q: want auto, stats, agent or df", w.o.Method)
	}
	info, err := w.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("reading daemon info: %s", engine.Reason(err))
	}
	v2 := info.Info.CgroupVersion == "2"
	switch {
	case m == analyze.WatchStats && !v2:
		return fmt.Errorf("the stats method needs cgroup v2: the engine at %s runs cgroup v%s, whose stats carry no shmem counter; use --method agent or df", w.c.DaemonHost(), info.Info.CgroupVersion)
	case v2:
		w.method = analyze.WatchStats // checked again on the first reading
	default:
		w.method = analyze.WatchAgent
	}
	return nil
}

// tmpfsOptionSize reads size= from tmpfs mount options ("rw,size=256m").
func tmpfsOptionSize(opts string) *int64 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(o), "size="); ok {
			if n, err := analyze.ParseSize(v); err == nil {
				return engine.Ptr(n)
			}
		}
	}
	return nil
}

func (w *watcher) snapshot(now time.Time) analyze.WatchSample {
	cs := w.containers()
	return analyze.WatchSample{Type: "sample", Time: now.UTC(), Project: w.o.Project, Services: analyze.SummarizeServices(cs), Containers: cs}
}
