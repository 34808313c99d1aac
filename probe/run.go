package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// Options tune a probe run. The zero value probes with the defaults.
type Options struct {
	// Project is the compose project name, for container names and labels.
	Project string
	// WriteProbe is "auto" (default: the target follows the plan), "off", or a size such as
	// "512m" that overrides the target (and the 256 MiB cap where /dev/shm is the host's).
	WriteProbe string
	// WriteMode is "both" (default: write(2), then mmap if write(2) reached the target; the
	// result is the first mode that failed, else write(2)'s throughput with mode
	// "write+mmap"), "write" or "mmap".
	WriteMode string
	// Timeout bounds the whole run (--probe-timeout); default 60s. The write probe of each
	// service may take half of it.
	Timeout time.Duration
	// Parallel bounds how many services are measured at once; default 4. IPC donors kept
	// up for their joiners do not count once measured.
	Parallel int
	// Binary is the doctor's own binary to put in the probe image; default os.Executable().
	Binary string
	// Progress, when set, is told each time a service's probe moves to the next stage. It is
	// called from several goroutines at once.
	Progress func(Event)
	// WriteBudget is how many bytes the write probes of the run may target in all; 0 takes
	// half of the host's MemAvailable as the first agent to measure sees it. Each service
	// writes the smaller of its own target and what the services before it left, and a
	// service the budget capped says so in its Write.Reason.
	WriteBudget int64
	// Engine is the daemon's engine when the caller has read it already (DetectEngine);
	// the zero Engine has the run ask the daemon.
	Engine analyze.Engine

	writeSize int64         // WriteProbe parsed
	agentArgs []string      // extra agent flags, for tests
	staleAge  time.Duration // overrides engine.StaleAge, for tests
}

// Defaults.
const (
	// DefaultTimeout bounds a run when Options.Timeout is zero.
	DefaultTimeout = 60 * time.Second
	// DefaultParallel is how many services are measured at once when Options.Parallel is zero.
	DefaultParallel = 4

	// exitReserve is the part of CleanupGrace kept for what follows cleanup: the report is
	// written and the doctor exits within the grace, not just its last removal.
	exitReserve = time.Second
)

// Stage is how far a service's probe has got.
type Stage string

// The stages of a service's probe, in order.
const (
	StageWaiting   Stage = "waiting"   // for a free slot (Parallel) or for its IPC donor
	StageStarting  Stage = "starting"  // creating and starting the container
	StageMeasuring Stage = "measuring" // the agent measures /dev/shm
	StageWriting   Stage = "writing"   // the write probe runs: Event.Write says how far
	StageDone      Stage = "done"      // the Measurement is final
)

// Event is one service reaching a stage.
type Event struct {
	Service string
	Stage   Stage
	// Measurement is the service's result, set at StageDone.
	Measurement *analyze.Measurement
	// Write is how far the write probe has got, set at StageWriting: its mode, target and
	// the bytes written so far.
	Write *analyze.Write
}

// progress reports an event when the caller asked for progress.
func (o Options) progress(n *node, s Stage) {
	if o.Progress == nil {
		return
	}
	e := Event{Service: n.plan.Service, Stage: s}
	if s == StageDone {
		e.Measurement = n.m
	}
	o.Progress(e)
}

func (o Options) normalized() (Options, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	switch o.WriteMode {
	case "":
		o.WriteMode = "both"
	case "both", "write", "mmap":
	default:
		return o, fmt.Errorf("invalid write probe mode %q: want both, write or mmap", o.WriteMode)
	}
	switch w := strings.ToLower(strings.TrimSpace(o.WriteProbe)); w {
	case "", "auto":
		o.WriteProbe = "auto"
	case "off", "0":
		o.WriteProbe = "off"
	default:
		n, err := analyze.ParseSize(w)
		if err != nil {
			return o, fmt.Errorf("invalid --write-probe %q: want auto, off or a size such as 512m", o.WriteProbe)
		}
		o.WriteProbe, o.writeSize = w, n
	}
	return o, nil
}

// staleAfter is the age from which another run's container counts as a leftover: never less
// than StaleAge, and longer than any run this doctor could still be doing.
func (o Options) staleAfter() time.Duration {
	if o.staleAge > 0 {
		return o.staleAge
	}
	return max(engine.StaleAge, 2*o.Timeout+time.Minute)
}

// Run probes every plan: one throwaway container per service with the service's shm
// settings, the agent inside it, and one Measurement per service name. IPC donors (the X of
// ipc: service:X) start first and stay up while their joiners are measured. Services are
// probed in parallel, at most opts.Parallel at once.
//
// Every container is removed on every path: normal end, error, ctx cancellation (Ctrl-C),
// timeout, and a daemon that stops answering (then the leftovers are removed by the next run
// or by Clean). Run removes other runs' leftovers first: at once those of a doctor whose run
// lock (LabelRunLock) says it is over, else those older than StaleAge; containers of a live
// run are never touched.
//
// Failures that concern one service are in its Measurement (CreateError, Error). Run returns
// an error when it could not probe at all, when it was interrupted or timed out (wrapping
// context.Canceled or context.DeadlineExceeded; the measurements gathered so far are
// returned too), or when a container could not be removed.
func Run(ctx context.Context, c engine.Client, plans []*analyze.ShmPlan, opts Options) (map[string]*analyze.Measurement, error) {
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	results := make(map[string]*analyze.Measurement, len(plans))
	if len(plans) == 0 {
		return results, nil
	}
	r, err := start(ctx, c, o)
	if err != nil {
		return nil, err
	}
	defer r.cancel()

	nodes := make(map[string]*node, len(plans))
	var order []*node
	for _, p := range plans {
		if p == nil || nodes[p.Service] != nil {
			continue
		}
		n := &node{plan: p, m: &analyze.Measurement{}, ready: make(chan struct{})}
		nodes[p.Service] = n
		order = append(order, n)
		results[p.Service] = n.m
	}
	for _, n := range order {
		n.spec = buildSpec(n.plan, o, r.runID, r.image, r.now(), hostSharedChain(n.plan, nodes))
	}
	link(order, nodes, o)
	for _, n := range order {
		o.progress(n, StageWaiting)
	}

	err = r.runAll(order)
	return results, err
}

// runner is one run's session: its id, contexts, image, agent and write budget, and the
// probe of every service from plan to measurement. Its reaper removes what it created.
type runner struct {
	c engine.Client
	o Options
	// engine names the daemon in messages (Docker until its version says otherwise).
	engine analyze.Engine
	runID  string
	image  string
	parent context.Context // the caller's: cancelled on Ctrl-C
	ctx    context.Context // parent plus the timeout
	cancel context.CancelFunc
	sem    chan struct{}
	info   client.SystemInfoResult
	clock  time.Duration // daemon time minus local time
	budget memBudget
	agent  *engine.Agent
	lock   *engine.RunLock // held while the run lives, nil where the machine gives none

	reap *reaper // the cleanup half: the containers created and their removal

	mu   sync.Mutex
	hung bool // the run timed out and the daemon did not answer a ping after it
}

// start checks the daemon, picks the agent, removes stale leftovers and makes sure the
// probe image exists.
func start(parent context.Context, c engine.Client, o Options) (*runner, error) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	runID := engine.NewRunID()
	r := &runner{c: c, o: o, engine: analyze.Docker, runID: runID, parent: parent, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, o.Parallel), reap: newReaper(c, parent, runID, time.Now().Add(o.Timeout+engine.CleanupGrace-exitReserve))}
	// Interrupted: the grace counts from now.
	stopHard := context.AfterFunc(parent, func() { r.reap.interrupted(time.Now().Add(engine.CleanupGrace - exitReserve)) })
	r.cancel = func() { stopHard(); cancel() }
	fail := func(err error) (*runner, error) {
		r.cancel()
		r.lock.Release()
		if stop := r.stopped(); stop != nil {
			return nil, stop
		}
		return nil, err
	}
	// The ping is bounded by the run's timeout alone, and says so when it ends it.
	if err := engine.Ping(ctx, c); err != nil {
		r.cancel()
		if r.parent.Err() != nil {
			return nil, r.stopped()
		}
		return nil, err
	}
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fail(fmt.Errorf("reading daemon info: %s", engine.Reason(err)))
	}
	r.info = info
	// The engine only names the daemon in messages: a daemon that does not say is Docker.
	if r.engine = o.Engine; r.engine.Name == "" {
		r.engine, _, _ = engine.DetectEngine(ctx, c)
	}
	if t, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime); err == nil {
		r.clock = time.Until(t)
	}
	goos, goarch := engine.DaemonPlatform(info.Info.OSType, info.Info.Architecture)
	agent, err := engine.SelectAgent(o.Binary, goos, goarch)
	if err != nil {
		return fail(err)
	}
	r.agent, r.lock = agent, engine.NewRunLock(ctx, r.runID)
	engine.RemoveLeftovers(ctx, c, r.now(), r.runID, o.staleAfter())
	if r.image, err = engine.EnsureImage(ctx, c, agent); err != nil {
		return fail(err)
	}
	return r, nil
}

// now is the daemon's clock, to compare with container creation times.
func (r *runner) now() time.Time { return time.Now().Add(r.clock) }

// stopped is the error to return when the run was interrupted or timed out, nil otherwise.
func (r *runner) stopped() error {
	if err := r.parent.Err(); err != nil {
		return fmt.Errorf("probe interrupted: %w", err)
	}
	if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		if r.hung {
			return fmt.Errorf("probe timed out after %s (--probe-timeout): the %s daemon at %s stopped answering: %w", r.o.Timeout, r.engine.Name, r.c.DaemonHost(), context.DeadlineExceeded)
		}
		return fmt.Errorf("probe timed out after %s (--probe-timeout): %w", r.o.Timeout, context.DeadlineExceeded)
	}
	return nil
}

// checkHung asks the daemon, after a timeout, whether it still answers, so that the run's
// error says which of the daemon and the probe was slow.
func (r *runner) checkHung() {
	if !errors.Is(r.ctx.Err(), context.DeadlineExceeded) || r.parent.Err() != nil {
		return
	}
	ctx, cancel := r.reap.cleanupContext()
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, engine.HungCheck)
	defer cancel2()
	if _, err := r.c.Ping(ctx, client.PingOptions{}); err != nil {
		r.mu.Lock()
		r.hung = true
		r.mu.Unlock()
	}
}

// runAll probes every node and removes everything, then lets the run's lock go; it returns
// the run's error.
func (r *runner) runAll(order []*node) error {
	for _, n := range order {
		r.lock.LabelConfig(n.spec.config)
	}
	var wg sync.WaitGroup
	for _, n := range order {
		wg.Go(func() { r.probe(n) })
	}
	wg.Wait()
	r.checkHung()
	r.mu.Lock()
	hung := r.hung
	r.mu.Unlock()
	if !hung {
		r.reap.sweep()
	}
	r.lock.Release()

	var errs []error
	if stop := r.stopped(); stop != nil {
		errs = append(errs, stop)
	}
	if err := r.reap.err(); err != nil {
		errs = append(errs, fmt.Errorf("removing probe containers: %w; the next run removes leftovers, or run `shmdoctor probe --clean`", err))
	}
	return engine.JoinErrors(errs...)
}

// probe measures one node and removes its container, after its joiners for a donor.
func (r *runner) probe(n *node) {
	if n.donor != nil {
		// The donor stays up until this node's container is gone.
		defer n.donor.joiners.Done()
	}
	id := r.measure(n)
	r.o.progress(n, StageDone)
	n.markReady()
	if n.hold {
		n.joiners.Wait()
	}
	n.detach()
	if id != "" {
		r.reap.remove(id)
	}
}

// measure creates and starts the node's container and fills its Measurement. It returns the
// id of the container it created, "" if none.
func (r *runner) measure(n *node) string {
	m, s := n.m, n.spec
	m.Omitted = append(m.Omitted, s.omitted...)
	if s.fail != "" {
		m.Error = s.fail
		return ""
	}
	ctx := r.ctx
	if n.donor != nil {
		select {
		case <-n.donor.ready:
		case <-ctx.Done():
			m.Error = r.stopReason()
			return ""
		}
		if !n.donor.running {
			m.Error = fmt.Sprintf("cannot join the IPC namespace of %s: its probe container is not running", n.donor.plan.Service)
			if d := n.donor.m; d.CreateError != "" || d.Error != "" {
				m.Error += " (" + strings.TrimSpace(d.CreateError+" "+d.Error) + ")"
			}
			return ""
		}
		s.host.IpcMode = container.IpcMode("container:" + n.donor.containerID)
		n.shmGroup.Lock()
		defer n.shmGroup.Unlock()
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		m.Error = r.stopReason()
		return ""
	}
	r.o.progress(n, StageStarting)
	if s.volume != "" {
		name, err := findVolume(ctx, r.c, r.o.Project, s.volume)
		if err != nil {
			m.Error = err.Error()
			return ""
		}
		s.host.Mounts[len(s.host.Mounts)-1].Source = name
	}

	if s.bindSource != "" && s.bindSource != shmPath && r.engine.Name == analyze.Podman.Name {
		// Podman's Docker-compatible API creates a missing bind source on the host, and the
		// probe creates nothing there: unlike Docker's, its create cannot tell.
		m.Error = fmt.Sprintf("the bind of %s at /dev/shm is not probed on Podman: its Docker-compatible API would create %s on the host if it were missing", s.bindSource, s.bindSource)
		return ""
	}
	if ctx.Err() != nil {
		m.Error = r.stopReason()
		return ""
	}
	id, err := r.create(s)
	if err != nil {
		r.createFailed(n, err)
		return ""
	}
	if ctx.Err() != nil {
		m.Error = r.stopReason()
		return id
	}
	ss := &session{r: r, n: n, id: id}
	if err := ss.attach(); err != nil {
		// Podman prepares the container's process when it is attached to, and a runtime error
		// then comes back as a bare 409 on the upgrade: starting it gives the daemon's message.
		if _, serr := r.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); serr != nil && !engine.DaemonGone(serr) {
			err = serr
		}
		r.createFailed(n, err)
		return id
	}
	if _, err := r.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		r.createFailed(n, err)
		return id
	}
	r.o.progress(n, StageMeasuring)
	if n.hold {
		ss.measureHeld()
	} else {
		defer ss.followWrite()()
		ss.measureExited()
	}
	return id
}

// create creates the container with a context that survives Ctrl-C, so that its id is
// always known and the container always removed.
func (r *runner) create(s *containerSpec) (string, error) {
	ctx, cancel := r.reap.cleanupContext()
	defer cancel()
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.name, Config: s.config, HostConfig: s.host})
	if engine.NoSuchImage(err) {
		// Removed since the run started (shmdoctor probe --clean elsewhere): import it again, once.
		if _, ierr := engine.EnsureImage(ctx, r.c, r.agent); ierr == nil {
			res, err = r.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.name, Config: s.config, HostConfig: s.host})
		}
	}
	if err != nil {
		return "", err
	}
	r.reap.track(res.ID)
	return res.ID, nil
}

// createFailed records why a container could not be created or started: Docker's own
// message for the service's settings (CreateError), or why the probe itself failed.
func (r *runner) createFailed(n *node, err error) {
	m := n.m
	switch {
	case r.ctx.Err() != nil:
		m.Error = r.stopReason()
	case engine.DaemonGone(err):
		m.Error = "the " + r.engine.Name + " daemon stopped answering: " + engine.Reason(err)
	case n.spec.bindSource != "" && n.spec.bindSource != shmPath && strings.Contains(err.Error(), "does not exist"):
		m.Error = fmt.Sprintf("bind source %s does not exist on the daemon host; the probe does not create it (docker compose would create an empty directory)", n.spec.bindSource)
	default:
		m.CreateError = engine.DockerMessage(err)
		if n.donor != nil && n.donor.containerID != "" {
			// Name the donor by its service rather than by a probe container's id.
			m.CreateError = strings.ReplaceAll(m.CreateError, n.donor.containerID, n.donor.plan.Service)
		}
	}
}

func (r *runner) stopReason() string {
	if r.parent.Err() != nil {
		return "probe interrupted"
	}

	return fmt.Sprintf("probe timed out after %s (--probe-timeout)", r.o.Timeout)
}

// runFailed records a failure after the container started.
func (r *runner) runFailed(n *node, what string, err error) {
	switch {
	case r.ctx.Err() != nil:
		n.m.Error = r.stopReason()
	case engine.DaemonGone(err):
		n.m.Error = fmt.Sprintf("the %s daemon stopped answering while %s: %s", r.engine.Name, what, engine.Reason(err))
	default:
		n.m.Error = fmt.Sprintf("%s: %s", what, engine.Reason(err))
	}
}
