package watch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// finder discovers the containers a watch follows (a compose project, several, or a whole
// engine for the exporter), inspects the new ones, works out which /dev/shm each uses (its
// own, a donor's through ipc: service: or container:, the host's, a mount) and enters them in
// the ledger; it marks, or for a fleet forgets, the ones that stopped.
type finder struct {
	c   engine.Client
	o   Options
	led *ledger
	cps *companions
}

// discover lists the project's running containers, inspects new ones and marks the ones
// that stopped.
func (fd *finder) discover(ctx context.Context) error {
	f, keep := fd.listFilter()
	list, err := fd.c.ContainerList(ctx, client.ContainerListOptions{Filters: f})
	if engine.DaemonGone(err) {
		return fmt.Errorf("the Docker daemon at %s stopped answering: %s", fd.c.DaemonHost(), engine.Reason(err))
	}
	if err != nil {
		return fmt.Errorf("listing the containers of %s: %s", fd.watchedName(), engine.Reason(err))
	}
	running := map[string]bool{}
	var fresh []container.Summary
	fd.led.mu.Lock()
	for _, s := range list.Items {
		if !keep(s) {
			continue
		}
		running[s.ID] = true
		if k := fd.led.byID[s.ID]; k == nil || !k.Running {
			fresh = append(fresh, s)
		}
	}
	for _, k := range fd.led.order {
		if k.Running && !running[k.ID] {
			k.Running, k.UsedBytes = false, nil
		}
	}
	if fd.o.Fleet {
		fd.forgetStopped()
	}
	fd.led.mu.Unlock()
	for _, s := range fresh {
		res, err := fd.c.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if err != nil {
			if cerrdefs.IsNotFound(err) || ctx.Err() != nil {
				continue
			}
			if engine.DaemonGone(err) {
				return fmt.Errorf("the Docker daemon at %s stopped answering: %s", fd.c.DaemonHost(), engine.Reason(err))
			}
			return fmt.Errorf("inspecting container %.12s: %s", s.ID, engine.Reason(err))
		}
		if res.Container.State == nil || !res.Container.State.Running {
			continue
		}
		fd.add(ctx, &res.Container)
	}
	return nil
}

// add records a container that runs, new or restarted.
func (fd *finder) add(ctx context.Context, in *container.InspectResponse) {
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
	k.group, k.ownSize, k.Mount = fd.groupOf(ctx, in)
	k.HostIPC = k.group == "host"
	k.origin = originOf(in, labels, k.Mount)

	fd.led.mu.Lock()
	defer fd.led.mu.Unlock()
	if old := fd.led.byID[in.ID]; old != nil {
		// A restart: same container, new processes; keep what was seen before.
		old.Running, old.pidMode, old.Error = true, k.pidMode, ""
		return
	}
	if k.group != in.ID && k.group != "host" {
		if owner := fd.led.byID[k.group]; owner != nil {
			k.SharesWith, k.SharesService = owner.Name, owner.Service
		} else {
			k.SharesWith = k.group
		}
	}
	fd.led.byID[in.ID] = k
	fd.led.order = append(fd.led.order, k)
	g := fd.led.groups[k.group]
	if g == nil {
		g = &shmGroup{key: k.group, method: fd.led.method}
		if k.ownSize != nil && *k.ownSize == 0 {
			g.method, g.err = "", "ipc: none: the container has no /dev/shm" // nothing to read
		}
		if g.method == analyze.WatchStats && k.ownSize == nil {
			// The stats API tells no size, and inspect tells none for the host's /dev/shm
			// or a bind or volume there: statfs tells both.
			g.method = analyze.WatchAgent
		}
		fd.led.groups[k.group] = g
	}
	if g.size == nil && k.ownSize != nil {
		g.size = k.ownSize
	}
	k.SizeBytes = g.size // until the first reading, what inspect says
	if g.method == "" {
		k.Error = g.err
	}
	sort.SliceStable(fd.led.order, func(i, j int) bool {
		a, b := fd.led.order[i], fd.led.order[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Number < b.Number
	})
}

// groupOf says whose /dev/shm a container uses, and its size where inspect tells it: a
// mount at /dev/shm wins over every IPC mode, as in the engine. The third result is the type
// of that mount, "" when there is none.
func (fd *finder) groupOf(ctx context.Context, in *container.InspectResponse) (string, *int64, string) {
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
		fd.led.mu.Lock()
		for id, k := range fd.led.byID {
			if id == ref || k.Name == ref {
				fd.led.mu.Unlock()
				return id, k.ownSize, ""
			}
		}
		fd.led.mu.Unlock()
		if res, err := fd.c.ContainerInspect(ctx, ref, client.ContainerInspectOptions{}); err == nil {
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

// listFilter is what discover lists, and which of the listed containers it keeps: the compose
// project's non-oneoff containers, or with Fleet those of Projects (and Project), or every
// container but the doctor's companions.
func (fd *finder) listFilter() (client.Filters, func(container.Summary) bool) {
	if !fd.o.Fleet {
		f := make(client.Filters).Add("label", ComposeProjectLabel+"="+fd.o.Project).Add("label", ComposeOneoffLabel+"=False")
		return f, func(container.Summary) bool { return true }
	}
	projects := fd.fleetProjects()
	f := make(client.Filters)
	switch len(projects) {
	case 0:
	case 1:
		f.Add("label", ComposeProjectLabel+"="+projects[0])
	default:
		// Two label filters must both match: list compose's containers and keep the projects.
		f.Add("label", ComposeProjectLabel)
	}
	return f, func(s container.Summary) bool {
		if _, companion := s.Labels[engine.LabelWatch]; companion {
			return false
		}
		return len(projects) == 0 || slices.Contains(projects, s.Labels[ComposeProjectLabel])
	}
}

// fleetProjects are the projects a Fleet sampler watches, none for every container.
func (fd *finder) fleetProjects() []string {
	ps := slices.Clone(fd.o.Projects)
	if fd.o.Project != "" {
		ps = append(ps, fd.o.Project)
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// watchedName names what discover lists, for its errors.
func (fd *finder) watchedName() string {
	if !fd.o.Fleet {
		return "project " + fd.o.Project
	}
	if ps := fd.fleetProjects(); len(ps) > 0 {
		return "projects " + strings.Join(ps, ", ")
	}
	return "the engine"
}

// forgetStopped drops the containers that stopped, and the /dev/shm groups left without a
// member, stopping their companions: a fleet sampler keeps one entry per running container.
// A companion still starting for a dropped group ends with its container's PID namespace,
// and Close sweeps it. Called with the ledger's mu held.
func (fd *finder) forgetStopped() {
	kept := fd.led.order[:0]
	members := map[string]int{}
	for _, k := range fd.led.order {
		if k.Running {
			kept = append(kept, k)
			members[k.group]++
			continue
		}
		delete(fd.led.byID, k.ID)
	}
	clear(fd.led.order[len(kept):])
	fd.led.order = kept
	for key, g := range fd.led.groups {
		if members[key] > 0 || g.starting {
			continue
		}
		delete(fd.led.groups, key)
		if cp := g.companion; cp != nil {
			g.companion = nil
			go fd.cps.stopCompanion(context.Background(), cp)
		}
	}
}
