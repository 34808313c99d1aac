package watch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// companions are a watch's agents: one container per /dev/shm group that shares a watched
// container's PID namespace and streams its readings into the ledger. They carry the watch's
// run lock, and are stopped, removed and swept on every path.
type companions struct {
	c        engine.Client
	interval time.Duration
	binary   string
	life     context.Context // for cleanup: survives Ctrl-C, ends engine.CleanupGrace after the watch
	lock     *engine.RunLock // labels the companions; held while the watch lives
	led      *ledger

	imageMu  sync.Mutex
	image    string
	starters sync.WaitGroup // companions being started
}

// companion is the agent in a container that shares a watched container's PID namespace.
type companion struct {
	id   string
	att  client.HijackedResponse
	done chan struct{}
	err  string
}

func (c *companion) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// companionEvery is how often the agent samples within an interval.
const companionEvery = 50 * time.Millisecond

// startCompanion starts the agent next to target and streams its lines into the group.
//
// Why a companion rather than an exec: nothing is copied into the watched container or run
// in it, so read-only root filesystems, images without a shell or df, and non-root users are
// all watched alike, and the workload's memory and pids limits are not charged. The agent
// reads /proc/PID/root/dev/shm, which needs CAP_SYS_PTRACE over the watched process; it has
// no other capability, no network and a read-only root. It ends when the doctor's attach
// connection closes (its standard input ends), when the watched container's PID namespace
// goes away, and is removed by the engine when it ends (AutoRemove).
func (cs *companions) startCompanion(ctx context.Context, g *shmGroup, target *watched) error {
	path := "/proc/1/root/dev/shm"
	switch {
	case target.pidMode.IsHost():
		res, err := cs.c.ContainerInspect(ctx, target.ID, client.ContainerInspectOptions{})
		if err != nil {
			return errors.New(engine.Reason(err))
		}
		path = fmt.Sprintf("/proc/%d/root/dev/shm", res.Container.State.Pid)
	case target.pidMode.IsContainer():
		return errors.New("the container shares another container's PID namespace")
	}
	image, err := cs.companionImage(ctx, false)
	if err != nil {
		return err
	}
	interval := cs.interval
	cfg := &container.Config{
		Image:       image,
		Cmd:         append(append([]string{"watch"}, protocol.Args()...), "--path", path, "--interval", interval.String(), "--every", min(companionEvery, interval).String()),
		User:        "0:0",
		OpenStdin:   true,
		StdinOnce:   true,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Labels: map[string]string{engine.LabelWatch: target.ID, engine.LabelCreatedAt: time.Now().UTC().Format(time.RFC3339)},
	}
	cs.lock.LabelConfig(cfg)
	hc := &container.HostConfig{
		PidMode:        container.PidMode("container:" + target.ID),
		NetworkMode:    network.NetworkNone,
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"SYS_PTRACE"},
		ReadonlyRootfs: true,
		SecurityOpt:    []string{"no-new-privileges"},
		AutoRemove:     true,
		LogConfig:      container.LogConfig{Type: "none"},
	}
	hc.PidsLimit = engine.Ptr(int64(16))
	hc.Memory = 64 << 20
	// Created with a context that survives Ctrl-C, so that its id is always known.
	cctx, cancel := context.WithTimeout(cs.lifeOr(ctx), 30*time.Second)
	defer cancel()
	name := "shmdoctor-watch-" + target.Name + "-" + engine.NewRunID()[:6]
	res, err := cs.c.ContainerCreate(cctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: hc})
	if cerrdefs.IsNotFound(err) {
		// The image was removed since (shmdoctor probe --clean): import it again, once.
		if cfg.Image, err = cs.companionImage(ctx, true); err == nil {
			res, err = cs.c.ContainerCreate(cctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: hc})
		}
	}
	if err != nil {
		return errors.New(engine.DockerMessage(err))
	}
	cp := &companion{id: res.ID, done: make(chan struct{})}
	att, err := cs.c.ContainerAttach(cctx, res.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		cs.removeCompanion(ctx, res.ID)
		return fmt.Errorf("attaching to the companion: %s", engine.Reason(err))
	}
	cp.att = att.HijackedResponse
	if _, err := cs.c.ContainerStart(cctx, res.ID, client.ContainerStartOptions{}); err != nil {
		att.Close()
		cs.removeCompanion(ctx, res.ID)
		return errors.New(engine.DockerMessage(err))
	}
	first := make(chan string, 1)
	go cs.follow(cp, g, first)
	cs.led.mu.Lock()
	g.companion = cp
	cs.led.mu.Unlock()
	// The first line tells whether the agent can read the container's /dev/shm at all.
	select {
	case msg := <-first:
		if msg != "" {
			cs.stopCompanion(ctx, cp)
			return errors.New(msg)
		}
	case <-ctx.Done():
	}
	return nil
}

// follow reads the companion's lines until it ends. The first line's error, or why the
// stream ended before any line, goes to first.
func (cs *companions) follow(cp *companion, g *shmGroup, first chan<- string) {
	defer close(cp.done)
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	go func() {
		_, err := stdcopy.StdCopy(pw, &stderr, cp.att.Reader)
		pw.CloseWithError(err)
	}()
	sc := bufio.NewScanner(pr)
	n := 0
	for sc.Scan() {
		var l protocol.WatchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue
		}
		if err := l.Check(); err != nil {
			// An agent of another version: its lines are not read, and the first says why.
			l = protocol.WatchLine{Protocol: protocol.Version, Error: err.Error()}
		}
		n++
		if n == 1 {
			first <- l.Error
		}
		if l.Error != "" {
			continue
		}
		cs.led.record(g, cs.led.members(g), analyze.WatchAgent, engine.Ptr(l.SizeBytes), l.UsedBytes, l.PeakBytes, "", !l.Rise)
	}
	_ = pr.Close()
	if n == 0 {
		msg := engine.OneLine(stderr.String())
		if msg == "" {
			msg = "the companion ended before its first reading"
		}
		first <- msg
	}
}

// companionImage is the probe image the companions run, imported once per watch, or again
// when again is set.
func (cs *companions) companionImage(ctx context.Context, again bool) (string, error) {
	cs.imageMu.Lock()
	defer cs.imageMu.Unlock()
	if cs.image == "" || again {
		image, err := engine.Image(ctx, cs.c, cs.binary)
		if err != nil {
			return "", err
		}
		cs.image = image
	}
	return cs.image, nil
}

// stopCompanion closes its standard input, which ends the agent, and removes it.
func (cs *companions) stopCompanion(ctx context.Context, cp *companion) {
	cp.att.Close()
	cs.removeCompanion(ctx, cp.id)
	select {
	case <-cp.done:
	case <-time.After(engine.RemoveTimeout):
	case <-cs.lifeOr(ctx).Done():
	}
}

// lifeOr is the watch's cleanup context, or ctx without its cancellation where there is none
// (a watcher made by a test).
func (cs *companions) lifeOr(ctx context.Context) context.Context {
	if cs.life != nil {
		return cs.life
	}
	return context.WithoutCancel(ctx)
}

// removeCompanion force-removes a companion with a context that survives Ctrl-C. Its error
// is of no use: a companion the engine is removing already, or has removed, is the common
// case (AutoRemove), and one that could not be removed ends by itself with its stdin.
func (cs *companions) removeCompanion(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(cs.lifeOr(ctx), engine.RemoveTimeout)
	defer cancel()
	_, _ = cs.c.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true})
}

// sweep removes whatever companion carries this watch's run lock and is still there: one
// stuck in Created that a failed start or a cancelled request left behind.
func (cs *companions) sweep() {
	if cs.lock == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), engine.RemoveTimeout)
	defer cancel()
	f := make(client.Filters).Add("label", engine.LabelWatch).Add("label", engine.LabelRunLock+"="+cs.lock.Path())
	list, err := cs.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return
	}
	for _, s := range list.Items {
		cs.removeCompanion(ctx, s.ID)
	}
}

// stopAll stops every companion, once those being started have started.
func (cs *companions) stopAll() {
	started := make(chan struct{})
	go func() {
		cs.starters.Wait()
		close(started)
	}()
	select {
	case <-started:
	case <-cs.lifeOr(context.Background()).Done():
		// A daemon that hangs holds a start: its companion ends with the attach, or at
		// the next run's cleanup.
	}
	cs.led.mu.Lock()
	var cps []*companion
	for _, g := range cs.led.groups {
		if g.companion != nil {
			cps = append(cps, g.companion)
			g.companion = nil
		}
	}
	cs.led.mu.Unlock()
	var wg sync.WaitGroup
	for _, cp := range cps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs.stopCompanion(context.Background(), cp)
		}()
	}
	wg.Wait()
}
