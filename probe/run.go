package probe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
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
	staleAge  time.Duration // overrides StaleAge, for tests
}

// Defaults.
const (
	// DefaultTimeout bounds a run when Options.Timeout is zero.
	DefaultTimeout = 60 * time.Second
	// DefaultParallel is how many services are measured at once when Options.Parallel is zero.
	DefaultParallel = 4
	// StaleAge is how old a probe container of another run must be before a run removes it
	// as the leftover of a crashed doctor; live runs are younger (see Options.Timeout).
	StaleAge = 10 * time.Minute

	// CleanupGrace is how long cleanup may go on past the run's timeout or an interrupt:
	// the whole run, daemon ping, image import, containers and their removal included, ends
	// within Options.Timeout plus CleanupGrace, even when the daemon stops answering.
	CleanupGrace = 10 * time.Second

	// exitReserve is the part of CleanupGrace kept for what follows cleanup: the report is
	// written and the doctor exits within the grace, not just its last removal.
	exitReserve = time.Second

	// removeTimeout bounds one removal or listing during cleanup, which runs on a context
	// that survives Ctrl-C and the run's timeout (but not the end of its CleanupGrace).
	removeTimeout = 20 * time.Second
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
	return max(StaleAge, 2*o.Timeout+time.Minute)
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
func Run(ctx context.Context, c Client, plans []*analyze.ShmPlan, opts Options) (map[string]*analyze.Measurement, error) {
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

// runner is one run: its id, context, image and the containers it created.
type runner struct {
	c Client
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
	agent  *agentBinary
	lock   *runLock // held while the run lives, nil where the machine gives none

	mu       sync.Mutex
	created  map[string]bool // container id → removed
	cleanErr []error
	hard     time.Time // when cleanup must be over: the timeout, or an interrupt, plus CleanupGrace
	hung     bool      // the run timed out and the daemon did not answer a ping after it
}

// cleanupContext is a context for one cleanup call: it survives Ctrl-C and the run's
// timeout, but ends at the run's hard deadline (see CleanupGrace).
func (r *runner) cleanupContext() (context.Context, context.CancelFunc) {
	r.mu.Lock()
	hard := r.hard
	r.mu.Unlock()
	deadline := time.Now().Add(removeTimeout)
	if hard.Before(deadline) {
		deadline = hard
	}
	return context.WithDeadline(context.WithoutCancel(r.parent), deadline)
}

// start checks the daemon, picks the agent, removes stale leftovers and makes sure the
// probe image exists.
func start(parent context.Context, c Client, o Options) (*runner, error) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	r := &runner{c: c, o: o, engine: analyze.Docker, runID: newRunID(), parent: parent, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, o.Parallel), created: map[string]bool{}, hard: time.Now().Add(o.Timeout + CleanupGrace - exitReserve)}
	stopHard := context.AfterFunc(parent, func() {
		// Interrupted: the grace counts from now.
		r.mu.Lock()
		if t := time.Now().Add(CleanupGrace - exitReserve); t.Before(r.hard) {
			r.hard = t
		}
		r.mu.Unlock()
	})
	r.cancel = func() { stopHard(); cancel() }
	fail := func(err error) (*runner, error) {
		r.cancel()
		r.lock.release()
		if stop := r.stopped(); stop != nil {
			return nil, stop
		}
		return nil, err
	}
	// The ping is bounded by the run's timeout alone, and says so when it ends it.
	if err := Ping(ctx, c); err != nil {
		r.cancel()
		if r.parent.Err() != nil {
			return nil, r.stopped()
		}
		return nil, err
	}
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fail(fmt.Errorf("reading daemon info: %s", reason(err)))
	}
	r.info = info
	// The engine only names the daemon in messages: a daemon that does not say is Docker.
	if r.engine = o.Engine; r.engine.Name == "" {
		r.engine, _, _ = DetectEngine(ctx, c)
	}
	if t, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime); err == nil {
		r.clock = time.Until(t)
	}
	goos, goarch := daemonPlatform(info.Info.OSType, info.Info.Architecture)
	agent, err := selectAgent(o.Binary, goos, goarch)
	if err != nil {
		return fail(err)
	}
	r.agent, r.lock = agent, newRunLock(ctx, r.runID)
	removeLeftovers(ctx, c, r.now(), r.runID, o.staleAfter())
	if r.image, err = ensureImage(ctx, c, agent); err != nil {
		return fail(err)
	}
	return r, nil
}

// now is the daemon's clock, to compare with container creation times.
func (r *runner) now() time.Time { return time.Now().Add(r.clock) }

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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
	ctx, cancel := r.cleanupContext()
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, hungCheck)
	defer cancel2()
	if _, err := r.c.Ping(ctx, client.PingOptions{}); err != nil {
		r.mu.Lock()
		r.hung = true
		r.mu.Unlock()
	}
}

// hungCheck bounds the ping that tells a hung daemon from a slow probe after a timeout.
const hungCheck = 2 * time.Second

// node is one service in the run.
type node struct {
	plan  *analyze.ShmPlan
	spec  *containerSpec
	m     *analyze.Measurement
	donor *node
	// hold: the container stays up after measuring until joiners is done.
	hold bool
	// att is the attach connection that holds the agent's standard input open;
	// budgetNote says how the run's write budget capped the target and fillNote how the
	// size of /dev/shm lowered it (both under runner.mu).
	att        client.HijackedResponse
	budgetNote string
	fillNote   string
	joiners    sync.WaitGroup
	// shm serialises the probes that share one IPC namespace (the root donor's), so that
	// two joiners' write probes do not fill the same /dev/shm at once.
	shm      sync.Mutex
	shmGroup *sync.Mutex

	ready     chan struct{} // closed when joiners may try to join
	readyOnce sync.Once
	// containerID and running are valid once ready is closed.
	containerID string
	running     bool
	inspect     *container.InspectResponse
	report      *AgentReport
}

func (n *node) markReady() { n.readyOnce.Do(func() { close(n.ready) }) }

// link connects joiners to donors, marks donors to hold, and refuses chains that cannot be
// probed (unknown donor, cycle).
func link(order []*node, nodes map[string]*node, o Options) {
	for _, n := range order {
		if n.spec.donor == "" || n.spec.fail != "" {
			continue
		}
		d := nodes[n.spec.donor]
		if d == nil {
			n.spec.fail = fmt.Sprintf("ipc service:%s: service %s is not probed, so there is no namespace to join", n.spec.donor, n.spec.donor)
			continue
		}
		n.donor = d
	}
	for _, n := range order {
		seen := map[*node]bool{}
		for d := n; d != nil; d = d.donor {
			if seen[d] {
				n.spec.fail = fmt.Sprintf("ipc service: chain of %s forms a cycle", n.plan.Service)
				n.donor = nil
				break
			}
			seen[d] = true
		}
	}
	for _, n := range order {
		if n.donor != nil {
			n.donor.hold = true
			n.donor.joiners.Add(1)
			root := n.donor
			for root.donor != nil {
				root = root.donor
			}
			n.shmGroup = &root.shm
		}
	}
	for _, n := range order {
		if n.hold {
			n.spec.config.Cmd = append(n.spec.config.Cmd, "--hold", (o.Timeout + time.Minute).String())
		}
	}
}

// hostSharedChain reports whether the plan's /dev/shm is the host's, following ipc: service:
// to the donor whose namespace it joins.
func hostSharedChain(p *analyze.ShmPlan, nodes map[string]*node) bool {
	seen := map[string]bool{}
	for p != nil && !seen[p.Service] {
		seen[p.Service] = true
		if p.HostShared() {
			return true
		}
		if p.Mount != nil {
			return false
		}
		donor, ok := strings.CutPrefix(p.IPC, "service:")
		if !ok || nodes[donor] == nil {
			return false
		}
		p = nodes[donor].plan
	}
	return false
}

// runAll probes every node and removes everything, then lets the run's lock go; it returns
// the run's error.
func (r *runner) runAll(order []*node) error {
	for _, n := range order {
		r.lock.labelConfig(n.spec.config)
	}
	var wg sync.WaitGroup
	for _, n := range order {
		wg.Go(func() { r.probe(n) })
	}
	wg.Wait()
	r.checkHung()
	if !r.hung {
		r.sweep()
	}
	r.lock.release()

	var errs []error
	if stop := r.stopped(); stop != nil {
		errs = append(errs, stop)
	}
	r.mu.Lock()
	if len(r.cleanErr) > 0 {
		errs = append(errs, fmt.Errorf("removing probe containers: %w; the next run removes leftovers, or run `shmdoctor probe --clean`", joinErrors(r.cleanErr...)))
	}
	r.mu.Unlock()
	return joinErrors(errs...)
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
		r.remove(id)
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
		name, err := r.findVolume(ctx, s.volume)
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
	if err := r.attach(n, id); err != nil {
		// Podman prepares the container's process when it is attached to, and a runtime error
		// then comes back as a bare 409 on the upgrade: starting it gives the daemon's message.
		if _, serr := r.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); serr != nil && !daemonGone(serr) {
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
		r.measureHeld(n, id)
	} else {
		defer r.followWrite(n, id)()
		r.measureExited(n, id)
	}
	return id
}

// create creates the container with a context that survives Ctrl-C, so that its id is
// always known and the container always removed.
func (r *runner) create(s *containerSpec) (string, error) {
	ctx, cancel := r.cleanupContext()
	defer cancel()
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.name, Config: s.config, HostConfig: s.host})
	if noSuchImage(err) {
		// Removed since the run started (shmdoctor probe --clean elsewhere): import it again, once.
		if _, ierr := ensureImage(ctx, r.c, r.agent); ierr == nil {
			res, err = r.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: s.name, Config: s.config, HostConfig: s.host})
		}
	}
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.created[res.ID] = false
	r.mu.Unlock()
	return res.ID, nil
}

// createFailed records why a container could not be created or started: Docker's own
// message for the service's settings (CreateError), or why the probe itself failed.
func (r *runner) createFailed(n *node, err error) {
	m := n.m
	switch {
	case r.ctx.Err() != nil:
		m.Error = r.stopReason()
	case daemonGone(err):
		m.Error = "the " + r.engine.Name + " daemon stopped answering: " + reason(err)
	case n.spec.bindSource != "" && n.spec.bindSource != shmPath && strings.Contains(err.Error(), "does not exist"):
		m.Error = fmt.Sprintf("bind source %s does not exist on the daemon host; the probe does not create it (docker compose would create an empty directory)", n.spec.bindSource)
	default:
		m.CreateError = dockerMessage(err)
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

// daemonGone reports whether err says the daemon no longer answers: a refused or broken
// connection, or a stream cut short.
func daemonGone(err error) bool {
	var opErr *net.OpError
	return client.IsErrConnectionFailed(err) || cerrdefs.IsUnavailable(err) || errors.As(err, &opErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// runFailed records a failure after the container started.
func (r *runner) runFailed(n *node, what string, err error) {
	switch {
	case r.ctx.Err() != nil:
		n.m.Error = r.stopReason()
	case daemonGone(err):
		n.m.Error = fmt.Sprintf("the %s daemon stopped answering while %s: %s", r.engine.Name, what, reason(err))
	default:
		n.m.Error = fmt.Sprintf("%s: %s", what, reason(err))
	}
}

// progressEvery is the least time between two reports of the write probe's progress.
const progressEvery = 100 * time.Millisecond

// writeProgress turns the agent's progress lines into StageWriting events, at most one per
// progressEvery; add returns what out.add returns.
type writeProgress struct {
	r    *runner
	n    *node
	out  AgentOutput
	last time.Time
}

func (w *writeProgress) add(line []byte) bool {
	done := w.out.add(line)
	o := &w.out
	if w.r.o.Progress != nil && o.ProgressMode != "" && !done && time.Since(w.last) >= progressEvery {
		w.last = time.Now()
		w.r.o.Progress(Event{Service: w.n.plan.Service, Stage: StageWriting,
			Write: &analyze.Write{Mode: o.ProgressMode, TargetBytes: o.ProgressTarget, WrittenBytes: o.ProgressBytes}})
	}
	return done
}

// followWrite follows the agent's output while it runs, only when the caller asked for
// progress, and reports how far the write probe has got; measureExited still reads the
// whole output once the agent is done. It returns the function that stops following.
func (r *runner) followWrite(n *node, id string) (stop func()) {
	if r.o.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc, err := r.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, Follow: true})
		if err != nil {
			return // progress is a courtesy: the measurement does not depend on it
		}
		defer rc.Close()
		pr, pw := io.Pipe()
		go func() {
			_, err := stdcopy.StdCopy(pw, io.Discard, rc)
			pw.CloseWithError(err)
		}()
		defer pr.Close()
		w := &writeProgress{r: r, n: n}
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() && !w.add(sc.Bytes()) {
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// measureExited waits for the agent to finish, then reads its state and output.
func (r *runner) measureExited(n *node, id string) {
	ctx := r.ctx
	wait := r.c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		r.runFailed(n, "waiting for the probe container", err)
		return
	case <-ctx.Done():
		n.m.Error = r.stopReason()
		return
	}
	ins, err := r.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		r.runFailed(n, "inspecting the probe container", err)
		return
	}
	n.inspect = &ins.Container
	rc, err := r.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		r.runFailed(n, "reading the agent's output", err)
		return
	}
	defer rc.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, rc); err != nil {
		r.runFailed(n, "reading the agent's output", err)
		return
	}
	out, _ := ParseAgentOutput(&stdout)
	r.fill(n, out, ins.Container.State, stderr.String())
}

// measureHeld follows a donor's output until the agent's report; the container keeps
// running for the joiners.
func (r *runner) measureHeld(n *node, id string) {
	ctx := r.ctx
	rc, err := r.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		r.runFailed(n, "reading the agent's output", err)
		return
	}
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	go func() {
		_, err := stdcopy.StdCopy(pw, &stderr, rc)
		pw.CloseWithError(err)
	}()
	w := &writeProgress{r: r, n: n}
	out := &w.out
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if w.add(sc.Bytes()) {
			break
		}
	}
	scanErr := sc.Err()
	rc.Close()
	pr.Close()
	if !out.Complete && scanErr != nil && !errors.Is(scanErr, io.EOF) {
		r.runFailed(n, "reading the agent's output", scanErr)
		return
	}
	ins, err := r.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		r.runFailed(n, "inspecting the probe container", err)
		return
	}
	n.inspect = &ins.Container
	st := ins.Container.State
	n.containerID = id
	n.running = st != nil && st.Running
	r.fill(n, out, st, stderr.String())
}

// fill turns the agent's output and the container's final state into the Measurement.
func (r *runner) fill(n *node, out *AgentOutput, st *container.State, stderr string) {
	m, s := n.m, n.spec
	if st == nil {
		st = &container.State{}
	}
	n.report = out.Report
	if out.Report != nil {
		got := out.Report.Measurement()
		got.Omitted = m.Omitted
		*m = *got
	}
	switch {
	case s.write != nil:
		w := *s.write
		m.Write = &w
	case out.Complete && out.Report.Write != nil:
		// The agent's own account, corrected by what the daemon saw.
		if st.OOMKilled && m.Write.Outcome == analyze.WriteSkipped && m.Write.WrittenBytes > 0 {
			m.Write.Outcome = analyze.WriteOOMKilled
		}
	case out.ProgressMode != "":
		// The agent itself died during the write probe: when the writer is OOM-killed while
		// its pages are still charged, the kernel may take the agent next.
		m.Write = &analyze.Write{Mode: out.ProgressMode, TargetBytes: out.ProgressTarget, WrittenBytes: out.ProgressBytes,
			Outcome: analyze.WriteSkipped, Reason: "the agent died during the write probe"}
		switch {
		case st.OOMKilled:
			m.Write.Outcome = analyze.WriteOOMKilled
			m.Write.Reason = fmt.Sprintf("the container was OOM-killed after %s", analyze.FormatSize(out.ProgressBytes))
		case killedByKernel(st):
			// The daemon can miss the OOM event when it comes after the exit; nothing but the
			// kernel kills a probe with SIGKILL in the middle of its write probe.
			m.Write.Outcome = analyze.WriteOOMKilled
			m.Write.Reason = fmt.Sprintf("the container was killed (exit code 137) after %s, by the OOM killer (the daemon did not flag it)", analyze.FormatSize(out.ProgressBytes))
		}
	}
	r.mu.Lock()
	budgetNote, fillNote := n.budgetNote, n.fillNote
	r.mu.Unlock()
	if m.Write != nil && budgetNote != "" {
		m.Write.BudgetCapped = true
	}
	for _, note := range []string{budgetNote, fillNote, s.capped} {
		if m.Write != nil && note != "" {
			m.Write.Reason = strings.Trim(note+"; "+m.Write.Reason, "; ")
		}
	}
	if out.Report == nil {
		msg := "the agent printed no report"
		if !st.Running && st.ExitCode != 0 {
			msg += fmt.Sprintf(" (exit code %d", st.ExitCode)
			if st.OOMKilled {
				msg += ", OOM-killed"
			}
			msg += ")"
		}
		if tail := lastLine(stderr); tail != "" {
			msg += ": " + tail
		}
		m.Error = msg
	} else if !out.Complete && !st.OOMKilled && !(killedByKernel(st) && out.ProgressMode != "") && m.Error == "" {
		m.Error = fmt.Sprintf("the agent stopped before its report (exit code %d): %s", st.ExitCode, lastLine(stderr))
	}
}

// killedByKernel reports an exit by SIGKILL the probe did not send.
func killedByKernel(st *container.State) bool { return !st.Running && st.ExitCode == 137 }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return oneLine(lines[len(lines)-1])
}

// findVolume returns the named volume mounted at /dev/shm as the daemon knows it: the name
// as given, else with the compose project prefix. It never creates one.
func (r *runner) findVolume(ctx context.Context, name string) (string, error) {
	candidates := []string{name}
	if r.o.Project != "" && !strings.HasPrefix(name, r.o.Project+"_") {
		candidates = append(candidates, r.o.Project+"_"+name)
	}
	for _, v := range candidates {
		_, err := r.c.VolumeInspect(ctx, v, client.VolumeInspectOptions{})
		if err == nil {
			return v, nil
		}
		if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("inspecting volume %s: %s", v, reason(err))
		}
	}
	return "", fmt.Errorf("volume %s does not exist (looked for %s); the probe does not create volumes: run `docker compose up` once or create it, then probe again",
		name, strings.Join(candidates, ", "))
}

// remove force-removes one container with a context that survives Ctrl-C and the timeout.
func (r *runner) remove(id string) {
	r.mu.Lock()
	if r.created[id] {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	ctx, cancel := r.cleanupContext()
	defer cancel()
	_, err := r.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && !cerrdefs.IsNotFound(err) {
		r.cleanErr = append(r.cleanErr, fmt.Errorf("container %.12s: %s", id, reason(err)))
		return
	}
	r.created[id] = true
}

// sweep removes whatever carries this run's label and is still there: containers whose
// removal failed, or that a cancelled request created behind our back.
func (r *runner) sweep() {
	ctx, cancel := r.cleanupContext()
	defer cancel()
	f := make(client.Filters).Add("label", LabelProbe+"="+r.runID)
	list, err := r.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		r.mu.Lock()
		r.cleanErr = append(r.cleanErr, fmt.Errorf("listing this run's containers: %s", reason(err)))
		r.mu.Unlock()
		return
	}
	pending := make([]string, 0, len(list.Items))
	r.mu.Lock()
	for _, s := range list.Items {
		r.created[s.ID] = false
		pending = append(pending, s.ID)
	}
	r.mu.Unlock()
	// Passes until one removes nothing more: Podman refuses to remove a donor while a
	// container that joined its IPC namespace is still there, whatever the order listed.
	for len(pending) > 0 {
		r.mu.Lock()
		r.cleanErr = nil // what is still there is retried below; what is gone is gone
		r.mu.Unlock()
		var left []string
		for _, id := range pending {
			r.remove(id)
			r.mu.Lock()
			if !r.created[id] {
				left = append(left, id)
			}
			r.mu.Unlock()
		}
		if len(left) == len(pending) {
			return
		}
		pending = left
	}
}

// removeContainers force-removes the probe containers for which pick is true, given their
// age by the daemon's clock, and returns how many it removed.
func removeContainers(ctx context.Context, c Client, now time.Time, pick func(container.Summary, time.Duration) bool) (int, error) {
	return removeLabelled(ctx, c, LabelProbe, "probe container", now, pick)
}

// removeLabelled force-removes the containers carrying label for which pick is true, oldest
// first; what names them in errors.
func removeLabelled(ctx context.Context, c Client, label, what string, now time.Time, pick func(container.Summary, time.Duration) bool) (int, error) {
	f := make(client.Filters).Add("label", label)
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("listing %ss: %s", what, reason(err))
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Created < list.Items[j].Created })
	removed := 0
	var errs []error
	for _, s := range list.Items {
		if !pick(s, now.Sub(time.Unix(s.Created, 0))) {
			continue
		}
		// A removal once begun survives Ctrl-C, but not the caller's deadline.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		if d, ok := ctx.Deadline(); ok {
			cancel()
			if limit := time.Now().Add(removeTimeout); limit.Before(d) {
				d = limit
			}
			rctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), d)
		}
		_, err := c.ContainerRemove(rctx, s.ID, client.ContainerRemoveOptions{Force: true})
		cancel()
		switch {
		case err == nil:
			removed++
		case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
			// Gone already, or being removed by its own run.
		default:
			errs = append(errs, fmt.Errorf("removing %s %.12s: %s", what, s.ID, reason(err)))
		}
	}
	return removed, joinErrors(errs...)
}

// joinErrors is errors.Join on one line: the doctor prints errors as single lines.
func joinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return lineErrors(kept)
}

type lineErrors []error

func (e lineErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e lineErrors) Unwrap() []error { return e }
