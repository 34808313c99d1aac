package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// readers read each /dev/shm group once per sample by the group's method: the stats API's
// shmem counter, df in the container, or, for the agent method, a companion that streams its
// readings (started here, run by companions). A group falls back from the agent to df where
// its companion cannot run. Readings go to the ledger.
type readers struct {
	c        engine.Client
	interval time.Duration
	led      *ledger
	cps      *companions
}

// sample reads every group once (stats, df) or makes sure its companion runs (agent).
func (rd *readers) sample(ctx context.Context) {
	rd.led.mu.Lock()
	type job struct {
		g       *shmGroup
		members []*watched
	}
	var jobs []job
	for _, key := range rd.led.groupKeys() {
		g := rd.led.groups[key]
		var members []*watched
		for _, k := range rd.led.order {
			if k.group == key && k.Running {
				members = append(members, k)
			}
		}
		if len(members) > 0 {
			jobs = append(jobs, job{g, members})
		}
	}
	rd.led.mu.Unlock()

	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd.read(ctx, j.g, j.members)
		}()
	}
	wg.Wait()
}

// read samples one group through its running members, falling back from the agent to df
// when the companion cannot run.
func (rd *readers) read(ctx context.Context, g *shmGroup, members []*watched) {
	rctx, cancel := context.WithTimeout(ctx, max(2*rd.interval, 10*time.Second))
	defer cancel()
	rd.led.mu.Lock()
	method := g.method
	rd.led.mu.Unlock()
	if method == analyze.WatchStats && !rd.readStats(rctx, g, members) {
		// The engine reports no shmem here: readStats moved the group to the agent, whose
		// companion must outlive this reading (ctx, not rctx).
		method = analyze.WatchAgent
	}
	switch method {
	case analyze.WatchAgent:
		rd.led.mu.Lock()
		idle := (g.companion == nil || g.companion.ended()) && !g.starting
		if idle {
			g.starting = true
			rd.cps.starters.Add(1)
		}
		rd.led.mu.Unlock()
		if idle {
			// Started aside: a companion takes a second or so to answer, and the other
			// groups' samples must not wait for it.
			go rd.start(ctx, g, members)
		}
	case analyze.WatchDf:
		rd.readDf(rctx, g, members)
	}
}

// start starts a group's companion; where it cannot run, the group falls back to df.
func (rd *readers) start(ctx context.Context, g *shmGroup, members []*watched) {
	defer rd.cps.starters.Done()
	target := members[0]
	before, running := rd.startedAt(ctx, target)
	var err error
	if running {
		err = rd.cps.startCompanion(ctx, g, target)
	}
	if !running || err != nil && ctx.Err() == nil {
		// A container that stopped, or was restarted while its companion was starting
		// (docker restart, a restart policy), refused it for a moment: nothing to fall back
		// for, and no failure to count; the next sample tries again.
		if after, still := rd.startedAt(ctx, target); !running || !still || after != before {
			rd.led.mu.Lock()
			g.starting = false
			rd.led.mu.Unlock()
			return
		}
	}
	rd.led.mu.Lock()
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
	rd.led.mu.Unlock()
	if fallback {
		rctx, cancel := context.WithTimeout(ctx, max(2*rd.interval, 10*time.Second))
		defer cancel()
		rd.readDf(rctx, g, members)
	}
}

// startedAt inspects a container again: when it last started, and whether it runs. One that
// stopped is marked so; one that cannot be inspected counts as running, unchanged, so that
// the fallback says what is wrong.
func (rd *readers) startedAt(ctx context.Context, k *watched) (string, bool) {
	res, err := rd.c.ContainerInspect(ctx, k.ID, client.ContainerInspectOptions{})
	if err == nil && res.Container.State != nil && res.Container.State.Running {
		return res.Container.State.StartedAt, true
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return "", true
	}
	rd.led.mu.Lock()
	k.Running, k.UsedBytes = false, nil
	rd.led.mu.Unlock()
	return "", false
}

// readStats sums the shmem counters of a group's members: pages are charged to the
// container that wrote them, so a shared /dev/shm is the sum of its writers. It returns
// false when the engine reports no shmem counter, after moving the group to the agent.
func (rd *readers) readStats(ctx context.Context, g *shmGroup, members []*watched) bool {
	var total int64
	for _, k := range members {
		n, ok, err := containerShmem(ctx, rd.c, k.ID)
		switch {
		case err != nil:
			rd.led.record(g, members, analyze.WatchStats, nil, 0, 0, "stats: "+err.Error(), true)
			return true
		case !ok:
			// The engine reports no shmem here: fall back for this group and the next ones.
			rd.led.mu.Lock()
			g.method, g.err = analyze.WatchAgent, "stats: the engine reports no shmem counter for this container"
			if rd.led.method == analyze.WatchStats {
				rd.led.method = analyze.WatchAgent
			}
			rd.led.mu.Unlock()
			return false
		}
		total += n
	}
	rd.led.record(g, members, analyze.WatchStats, nil, total, total, "", true)
	return true
}

// readDf executes the image's df in the first member that answers.
func (rd *readers) readDf(ctx context.Context, g *shmGroup, members []*watched) {
	var errs []string
	for _, k := range members {
		size, used, err := execDf(ctx, rd.c, k.ID)
		if err == nil {
			rd.led.record(g, members, analyze.WatchDf, engine.Ptr(size), used, used, "", true)
			return
		}
		if ctx.Err() != nil {
			return
		}
		errs = append(errs, err.Error())
	}
	rd.led.mu.Lock()
	prev := g.err
	rd.led.mu.Unlock()
	msg := "df: " + strings.Join(errs, "; ")
	if prev != "" {
		msg = prev + "; " + msg
	}
	rd.led.record(g, members, analyze.WatchDf, nil, 0, 0, msg, true)
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
