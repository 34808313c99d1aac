package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
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

// watcher is one watch: a ledger of the containers seen and their samples, the companions
// that read /dev/shm for the agent method, and the loop that drives them (discover, sample).
type watcher struct {
	c    engine.Client
	o    Options
	life context.Context // for cleanup: survives Ctrl-C, ends engine.CleanupGrace after the watch

	*ledger
	*companions
}

// newWatcher is a watcher with an empty ledger and no companion yet; life is its cleanup
// context (see lifeOr), nil for one made by a test.
func newWatcher(c engine.Client, o Options, life context.Context) *watcher {
	led := newLedger()
	return &watcher{c: c, o: o, life: life, ledger: led,
		companions: &companions{c: c, interval: o.Interval, binary: o.Binary, life: life, led: led}}
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

// discover lists the project's running containers, inspects new ones and marks the ones
// that stopped.
func (w *watcher) discover(ctx context.Context) error {
	f, keep := w.listFilter()
	list, err := w.c.ContainerList(ctx, client.ContainerListOptions{Filters: f})
	if engine.DaemonGone(err) {
		return fmt.Errorf("the Docker daemon at %s stopped answering: %s", w.c.DaemonHost(), engine.Reason(err))
	}
	if err != nil {
		return fmt.Errorf("listing the containers of %s: %s", w.watchedName(), engine.Reason(err))
	}
	running := map[string]bool{}
	var fresh []container.Summary
	w.mu.Lock()
	for _, s := range list.Items {
		if !keep(s) {
			continue
		}
		running[s.ID] = true
		if k := w.byID[s.ID]; k == nil || !k.Running {
			fresh = append(fresh, s)
		}
	}
	for _, k := range w.order {
		if k.Running && !running[k.ID] {
			k.Running, k.UsedBytes = false, nil
		}
	}
	if w.o.Fleet {
		w.forgetStopped()
	}
	w.mu.Unlock()
	for _, s := range fresh {
		res, err := w.c.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if err != nil {
			if cerrdefs.IsNotFound(err) || ctx.Err() != nil {
				continue
			}
			if engine.DaemonGone(err) {
				return fmt.Errorf("the Docker daemon at %s stopped answering: %s", w.c.DaemonHost(), engine.Reason(err))
			}
			return fmt.Errorf("inspecting container %.12s: %s", s.ID, engine.Reason(err))
		}
		if res.Container.State == nil || !res.Container.State.Running {
			continue
		}
		w.add(ctx, &res.Container)
	}
	return nil
}

// add records a container that runs, new or restarted.
func (w *watcher) add(ctx context.Context, in *container.InspectResponse) {
	hc := in.HostConfig
	if hc == nil {
		hc = &container.HostConfig{}
	}
	labels := map[string]string{}
	if in.Config != nil {
		labels = in.Config.Labels
	}
	num, _ := strconv.Atoi(labels[ComposeNumberLabel])
	k := &watched{WatchedContainer: analyze.WatchedContainer{
		ID: in.ID, Name: strings.TrimPrefix(in.Name, "/"), Service: labels[ComposeServiceLabel], Number: num, Running: true,
	}, pidMode: hc.PidMode}
	if hc.Memory > 0 {
		k.MemLimitBytes = engine.Ptr(hc.Memory)
	}
	k.group, k.ownSize, k.Mount = w.groupOf(ctx, in)
	k.HostIPC = k.group == "host"
	k.origin = originOf(in, labels, k.Mount)

	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.byID[in.ID]; old != nil {
		// A restart: same container, new processes; keep what was seen before.
		old.Running, old.pidMode, old.Error = true, k.pidMode, ""
		return
	}
	if k.group != in.ID && k.group != "host" {
		if owner := w.byID[k.group]; owner != nil {
			k.SharesWith, k.SharesService = owner.Name, owner.Service
		} else {
			k.SharesWith = k.group
		}
	}
	w.byID[in.ID] = k
	w.order = append(w.order, k)
	g := w.groups[k.group]
	if g == nil {
		g = &shmGroup{key: k.group, method: w.method}
		if k.ownSize != nil && *k.ownSize == 0 {
			g.method, g.err = "", "ipc: none: the container has no /dev/shm" // nothing to read
		}
		if g.method == analyze.WatchStats && k.ownSize == nil {
			// The stats API tells no size, and inspect tells none for the host's /dev/shm
			// or a bind or volume there: statfs tells both.
			g.method = analyze.WatchAgent
		}
		w.groups[k.group] = g
	}
	if g.size == nil && k.ownSize != nil {
		g.size = k.ownSize
	}
	k.SizeBytes = g.size // until the first reading, what inspect says
	if g.method == "" {
		k.Error = g.err
	}
	sort.SliceStable(w.order, func(i, j int) bool {
		a, b := w.order[i], w.order[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Number < b.Number
	})
}

// groupOf says whose /dev/shm a container uses, and its size where inspect tells it: a
// mount at /dev/shm wins over every IPC mode, as in the engine. The third result is the type
// of that mount, "" when there is none.
func (w *watcher) groupOf(ctx context.Context, in *container.InspectResponse) (string, *int64, string) {
	hc := in.HostConfig
	if opts, ok := hc.Tmpfs["/dev/shm"]; ok {
		return in.ID, tmpfsOptionSize(opts), "tmpfs"
	}
	for _, m := range hc.Mounts {
		if strings.TrimRight(m.Target, "/") == "/dev/shm" {
			if m.Type == mount.TypeTmpfs && m.TmpfsOptions != nil && m.TmpfsOptions.SizeBytes > 0 {
				return in.ID, engine.Ptr(m.TmpfsOptions.SizeBytes), string(m.Type)
			}
			return in.ID, nil, string(m.Type)
		}
	}
	for _, m := range in.Mounts {
		if strings.TrimRight(m.Destination, "/") == "/dev/shm" {
			return in.ID, nil, string(m.Type)
		}
	}
	switch {
	case hc.IpcMode.IsHost():
		return "host", nil, ""
	case hc.IpcMode.IsNone():
		return in.ID, engine.Ptr(int64(0)), ""
	case hc.IpcMode.IsContainer():
		ref := hc.IpcMode.Container()
		w.mu.Lock()
		for id, k := range w.byID {
			if id == ref || k.Name == ref {
				w.mu.Unlock()
				return id, k.ownSize, ""
			}
		}
		w.mu.Unlock()
		if res, err := w.c.ContainerInspect(ctx, ref, client.ContainerInspectOptions{}); err == nil {
			size := res.Container.HostConfig.ShmSize
			if size <= 0 {
				size = analyze.DefaultShmSize
			}
			return res.Container.ID, engine.Ptr(size), ""
		}
		return ref, nil, ""
	}
	size := hc.ShmSize
	if size <= 0 {
		size = analyze.DefaultShmSize
	}
	return in.ID, engine.Ptr(size), ""
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

// sample reads every group once (stats, df) or makes sure its companion runs (agent).
func (w *watcher) sample(ctx context.Context) {
	w.mu.Lock()
	type job struct {
		g       *shmGroup
		members []*watched
	}
	var jobs []job
	for _, key := range w.groupKeys() {
		g := w.groups[key]
		var members []*watched
		for _, k := range w.order {
			if k.group == key && k.Running {
				members = append(members, k)
			}
		}
		if len(members) > 0 {
			jobs = append(jobs, job{g, members})
		}
	}
	w.mu.Unlock()

	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.read(ctx, j.g, j.members)
		}()
	}
	wg.Wait()
}

// read samples one group through its running members, falling back from the agent to df
// when the companion cannot run.
func (w *watcher) read(ctx context.Context, g *shmGroup, members []*watched) {
	rctx, cancel := context.WithTimeout(ctx, max(2*w.o.Interval, 10*time.Second))
	defer cancel()
	w.mu.Lock()
	method := g.method
	w.mu.Unlock()
	if method == analyze.WatchStats && !w.readStats(rctx, g, members) {
		// The engine reports no shmem here: readStats moved the group to the agent, whose
		// companion must outlive this reading (ctx, not rctx).
		method = analyze.WatchAgent
	}
	switch method {
	case analyze.WatchAgent:
		w.mu.Lock()
		idle := (g.companion == nil || g.companion.ended()) && !g.starting
		if idle {
			g.starting = true
			w.starters.Add(1)
		}
		w.mu.Unlock()
		if idle {
			// Started aside: a companion takes a second or so to answer, and the other
			// groups' samples must not wait for it.
			go w.start(ctx, g, members)
		}
	case analyze.WatchDf:
		w.readDf(rctx, g, members)
	}
}

// start starts a group's companion; where it cannot run, the group falls back to df.
func (w *watcher) start(ctx context.Context, g *shmGroup, members []*watched) {
	defer w.starters.Done()
	target := members[0]
	before, running := w.startedAt(ctx, target)
	var err error
	if running {
		err = w.startCompanion(ctx, g, target)
	}
	if !running || err != nil && ctx.Err() == nil {
		// A container that stopped, or was restarted while its companion was starting
		// (docker restart, a restart policy), refused it for a moment: nothing to fall back
		// for, and no failure to count; the next sample tries again.
		if after, still := w.startedAt(ctx, target); !running || !still || after != before {
			w.mu.Lock()
			g.starting = false
			w.mu.Unlock()
			return
		}
	}
	w.mu.Lock()
	g.starting = false
	fallback := err != nil && ctx.Err() == nil
	if fallback {
		// This sample is read with df; the agent is tried again at the next ones until it
		// has failed agentTries times in a row on the same running container.
		g.err = "agent: " + err.Error()
		if g.failures++; g.failures >= agentTries {
			g.method = analyze.WatchDf
		}
	} else if err == nil {
		g.failures = 0
	}
	w.mu.Unlock()
	if fallback {
		rctx, cancel := context.WithTimeout(ctx, max(2*w.o.Interval, 10*time.Second))
		defer cancel()
		w.readDf(rctx, g, members)
	}
}

// startedAt inspects a container again: when it last started, and whether it runs. One that
// stopped is marked so; one that cannot be inspected counts as running, unchanged, so that
// the fallback says what is wrong.
func (w *watcher) startedAt(ctx context.Context, k *watched) (string, bool) {
	res, err := w.c.ContainerInspect(ctx, k.ID, client.ContainerInspectOptions{})
	if err == nil && res.Container.State != nil && res.Container.State.Running {
		return res.Container.State.StartedAt, true
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return "", true
	}
	w.mu.Lock()
	k.Running, k.UsedBytes = false, nil
	w.mu.Unlock()
	return "", false
}

// readStats sums the shmem counters of a group's members: pages are charged to the
// container that wrote them, so a shared /dev/shm is the sum of its writers. It returns
// false when the engine reports no shmem counter, after moving the group to the agent.
func (w *watcher) readStats(ctx context.Context, g *shmGroup, members []*watched) bool {
	var total int64
	for _, k := range members {
		n, ok, err := containerShmem(ctx, w.c, k.ID)
		switch {
		case err != nil:
			w.record(g, members, analyze.WatchStats, nil, 0, 0, "stats: "+err.Error(), true)
			return true
		case !ok:
			// The engine reports no shmem here: fall back for this group and the next ones.
			w.mu.Lock()
			g.method, g.err = analyze.WatchAgent, "stats: the engine reports no shmem counter for this container"
			if w.method == analyze.WatchStats {
				w.method = analyze.WatchAgent
			}
			w.mu.Unlock()
			return false
		}
		total += n
	}
	w.record(g, members, analyze.WatchStats, nil, total, total, "", true)
	return true
}

// containerShmem reads memory_stats.stats.shmem from the stats API, once; ok is false when the
// engine does not report it (cgroup v1).
func containerShmem(ctx context.Context, c engine.Client, id string) (int64, bool, error) {
	res, err := c.ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return 0, false, errors.New(engine.Reason(err))
	}
	defer res.Body.Close()
	return parseShmem(res.Body)
}

// parseShmem reads the shmem counter out of one stats document.
func parseShmem(r io.Reader) (int64, bool, error) {
	var doc struct {
		MemoryStats struct {
			Stats map[string]uint64 `json:"stats"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return 0, false, fmt.Errorf("reading stats: %w", err)
	}
	n, ok := doc.MemoryStats.Stats["shmem"]
	return int64(n), ok, nil
}

// readDf executes the image's df in the first member that answers.
func (w *watcher) readDf(ctx context.Context, g *shmGroup, members []*watched) {
	var errs []string
	for _, k := range members {
		size, used, err := execDf(ctx, w.c, k.ID)
		if err == nil {
			w.record(g, members, analyze.WatchDf, engine.Ptr(size), used, used, "", true)
			return
		}
		if ctx.Err() != nil {
			return
		}
		errs = append(errs, err.Error())
	}
	w.mu.Lock()
	prev := g.err
	w.mu.Unlock()
	msg := "df: " + strings.Join(errs, "; ")
	if prev != "" {
		msg = prev + "; " + msg
	}
	w.record(g, members, analyze.WatchDf, nil, 0, 0, msg, true)
}

// execDf runs `df -P -k /dev/shm` in a container: a short process that ends by itself, so
// nothing stays behind when the doctor stops in the middle.
func execDf(ctx context.Context, c engine.Client, id string) (size, used int64, err error) {
	ex, err := c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"df", "-P", "-k", "/dev/shm"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, 0, errors.New(engine.Reason(err))
	}
	att, err := c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, 0, errors.New(engine.Reason(err))
	}
	var out, errb bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &errb, att.Reader)
	att.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("reading df: %w", err)
	}
	st, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return 0, 0, errors.New(engine.Reason(err))
	}
	if st.ExitCode != 0 {
		msg := engine.OneLine(errb.String() + " " + out.String())
		if msg == "" {
			msg = fmt.Sprintf("exit %d", st.ExitCode)
		}
		return 0, 0, fmt.Errorf("df -P -k /dev/shm failed: %s", msg)
	}
	return parseDf(out.String())
}

// parseDf reads the POSIX output of df -P -k: a header, then one line per filesystem with
// 1024-byte blocks and used blocks in the second and third columns.
func parseDf(out string) (size, used int64, err error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		return 0, 0, fmt.Errorf("df printed no filesystem: %q", engine.OneLine(out))
	}
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 6 {
		return 0, 0, fmt.Errorf("df line %q has %d columns, want 6", lines[len(lines)-1], len(f))
	}
	blocks, err1 := strconv.ParseInt(f[1], 10, 64)
	usedBlocks, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("df line %q: blocks and used are not numbers", lines[len(lines)-1])
	}
	return blocks << 10, usedBlocks << 10, nil
}

func (w *watcher) snapshot(now time.Time) analyze.WatchSample {
	cs := w.containers()
	return analyze.WatchSample{Type: "sample", Time: now.UTC(), Project: w.o.Project, Services: analyze.SummarizeServices(cs), Containers: cs}
}
