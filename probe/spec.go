package probe

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

const (
	shmPath = "/dev/shm"
	// hostSharedCap bounds the write probe where /dev/shm is the host's.
	hostSharedCap int64 = 256 << 20
	// probeUser is nobody: the agent needs no privilege.
	probeUser = "65534:65534"
	// pidsLimit leaves room for two Go processes and their threads.
	pidsLimit int64 = 64
)

// containerSpec is one probe container, derived from a plan.
type containerSpec struct {
	service string
	name    string
	config  *container.Config
	host    *container.HostConfig
	// donor is the service whose probe container this one joins (ipc: service:X).
	donor string
	// volume is a named volume mounted at /dev/shm, to be checked before creating.
	volume string
	// bindSource is the host path bound at /dev/shm.
	bindSource string
	// write is the write probe as decided by the doctor; nil when the agent runs it.
	write *analyze.Write
	// target is the write probe target passed to the agent (0: none); capped says why it is
	// lower than the plan asks.
	target int64
	capped string
	// fill is set when the target is only the predicted size of /dev/shm (no need, profile or
	// shm_size asks for more): the doctor then lowers it to what the mounted /dev/shm holds, so
	// that filling a plain service's whole /dev/shm is never a failure.
	fill    bool
	omitted []string
	// fail is set when the service cannot be reproduced: no container is created.
	fail string
}

// buildSpec maps a plan to a probe container the way docker compose maps the settings that
// decide /dev/shm, and adds the probe's own least-privilege settings.
//
// hostShared says /dev/shm is the host's, directly or through the ipc donor chain.
func buildSpec(p *analyze.ShmPlan, o Options, runID, image string, now time.Time, hostShared bool) *containerSpec {
	s := &containerSpec{service: p.Service, name: containerName(o.Project, p.Service, runID)}
	hc := &container.HostConfig{
		NetworkMode:    network.NetworkNone,
		CapDrop:        []string{"ALL"},
		ReadonlyRootfs: true,
		SecurityOpt:    []string{"no-new-privileges"},
		LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "4m"}},
		AutoRemove:     false,
	}
	hc.PidsLimit = engine.Ptr(pidsLimit)
	s.host = hc

	// ipc, as compose passes it; service:X is resolved to X's probe container at start.
	switch ipc := p.IPC; {
	case ipc == "":
	case strings.HasPrefix(ipc, "service:"):
		s.donor = strings.TrimPrefix(ipc, "service:")
	case strings.HasPrefix(ipc, "container:"):
		s.fail = fmt.Sprintf("ipc %s joins a container outside the stack; the probe does not join foreign containers, so this service's /dev/shm cannot be reproduced", ipc)
	default:
		hc.IpcMode = container.IpcMode(ipc)
	}
	if p.Configured != nil {
		hc.ShmSize = *p.Configured
	}

	readOnly := false
	if m := p.Mount; m != nil {
		switch {
		case m.Type == analyze.SourceTmpfs && m.Entry == "tmpfs":
			// compose: service `tmpfs:` entries go to HostConfig.Tmpfs.
			opts := ""
			if m.Size != nil {
				opts = "size=" + strconv.FormatInt(*m.Size, 10)
			}
			hc.Tmpfs = map[string]string{shmPath: opts}
		case m.Type == analyze.SourceTmpfs:
			// compose: volumes of type tmpfs go to HostConfig.Mounts.
			mt := mount.Mount{Type: mount.TypeTmpfs, Target: shmPath}
			if m.Size != nil {
				mt.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: *m.Size}
			}
			hc.Mounts = append(hc.Mounts, mt)
		case m.Type == analyze.SourceBind:
			hostShm := m.Source == shmPath
			readOnly = m.ReadOnly || !hostShm
			s.bindSource = m.Source
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: shmPath, ReadOnly: readOnly})
			if !hostShm && !m.ReadOnly {
				s.omitted = append(s.omitted, fmt.Sprintf("the bind of %s at /dev/shm is mounted read-only by the probe and not written", m.Source))
			}
		case m.Type == analyze.SourceVolume:
			readOnly = true
			s.volume = m.Source
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Source, Target: shmPath, ReadOnly: true,
				VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
			if !m.ReadOnly {
				s.omitted = append(s.omitted, fmt.Sprintf("the volume %s at /dev/shm is mounted read-only by the probe and not written", m.Source))
			}
		}
	}

	if p.MemLimit != nil {
		hc.Memory = *p.MemLimit
	}
	if p.MemSwapLimit != nil {
		hc.MemorySwap = *p.MemSwapLimit
	}
	for _, u := range []struct {
		name string
		l    *analyze.Ulimit
	}{{"memlock", p.Memlock}, {"stack", p.Stack}} {
		if u.l != nil {
			hc.Ulimits = append(hc.Ulimits, &container.Ulimit{Name: u.name, Soft: u.l.Soft, Hard: u.l.Hard})
		}
	}
	if p.GPU {
		s.omitted = append(s.omitted, "GPU requests and runtimes are not copied: they do not change /dev/shm.")
	}

	s.target, s.capped, s.write = writeTarget(p, o, readOnly, hostShared)
	s.fill = s.write == nil && o.writeSize <= 0 && p.Target() <= 0 && (p.Configured == nil || *p.Configured <= 0)
	// The write probe may take half the run's time; the rest is for the containers.
	// The agent stops with its attach stream (the doctor is gone) or at its hard deadline.
	args := append(protocol.Args(), "--target", strconv.FormatInt(s.target, 10), "--mode", o.WriteMode, "--budget", (o.Timeout / 2).String(),
		"--attached", "--deadline", (o.Timeout + engine.CleanupGrace).String())
	args = append(args, o.agentArgs...)
	s.config = &container.Config{
		Image: image,
		Cmd:   args,
		User:  probeUser,
		Labels: map[string]string{
			engine.LabelProbe:     runID,
			engine.LabelCreatedAt: now.UTC().Format(time.RFC3339),
			engine.LabelService:   p.Service,
			engine.LabelProject:   o.Project,
		},
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: true,
	}
	return s
}

// writeTarget decides the write probe's target: the declared need, else the profile's
// minimum, else the configured shm_size, else the predicted size; at most 256 MiB where
// /dev/shm is the host's unless --write-probe gives a size. The run's write budget (see
// Options.WriteBudget) and the agent further cap it at a share of the host's available memory. A non-nil Write means the agent does not write.
func writeTarget(p *analyze.ShmPlan, o Options, readOnly, hostShared bool) (target int64, capped string, skipped *analyze.Write) {
	skip := func(reason string) (int64, string, *analyze.Write) {
		return 0, "", &analyze.Write{Outcome: analyze.WriteSkipped, Reason: reason}
	}
	if o.WriteProbe == "off" {
		return skip("write probe off")
	}
	if p.Source == analyze.SourceNone && p.Mount == nil {
		return skip("no /dev/shm (ipc: none)")
	}
	if readOnly {
		return skip("/dev/shm is mounted read-only by the probe")
	}
	if o.writeSize > 0 {
		return o.writeSize, "", nil
	}
	switch {
	case p.Target() > 0:
		target = p.Target()
	case p.Configured != nil && *p.Configured > 0:
		target = *p.Configured
	case p.Predicted != nil && *p.Predicted > 0:
		target = *p.Predicted
	default:
		return skip("no target: no declared need, workload minimum, shm_size or predicted size")
	}
	if (hostShared || p.HostShared()) && target > hostSharedCap {
		capped = fmt.Sprintf("target %s capped at %s: /dev/shm is the host's (--write-probe SIZE overrides)", analyze.FormatSize(target), analyze.FormatSize(hostSharedCap))
		target = hostSharedCap
	}
	return target, capped, nil
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is readable in `docker ps` and unique per run.
func containerName(project, service, runID string) string {
	parts := []string{"shmdoctor-probe"}
	for _, p := range []string{project, service} {
		if p = strings.Trim(nameUnsafe.ReplaceAllString(p, "-"), "-._"); p != "" {
			parts = append(parts, p)
		}
	}
	parts = append(parts, runID)
	return strings.Join(parts, "-")
}

// findVolume returns the named volume mounted at /dev/shm as the daemon knows it: the name
// as given, else with the compose project prefix. It never creates one.
func findVolume(ctx context.Context, c engine.Client, project, name string) (string, error) {
	candidates := []string{name}
	if project != "" && !strings.HasPrefix(name, project+"_") {
		candidates = append(candidates, project+"_"+name)
	}
	for _, v := range candidates {
		_, err := c.VolumeInspect(ctx, v, client.VolumeInspectOptions{})
		if err == nil {
			return v, nil
		}
		if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("inspecting volume %s: %s", v, engine.Reason(err))
		}
	}
	return "", fmt.Errorf("volume %s does not exist (looked for %s); the probe does not create volumes: run `docker compose up` once or create it, then probe again",
		name, strings.Join(candidates, ", "))
}
