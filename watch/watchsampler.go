package watch

import (
	"context"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// Sampler is a watch taken one sample at a time, for a caller that owns the loop: the
// exporter samples at its own pace for as long as a host runs. Watch drives one too. It holds
// a run lock and the companions it starts until Close.
type Sampler struct {
	w       *watcher
	endLife context.CancelFunc
}

// NewSampler settles the method (see Options.Method) and takes the run lock that labels
// the companions. The companions' cleanup outlives ctx, until CleanupGrace after Close.
func NewSampler(ctx context.Context, c engine.Client, opts Options) (*Sampler, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	w := newWatcher(c, opts, life)
	if err := w.chooseMethod(ctx); err != nil {
		endLife()
		return nil, err
	}
	w.lock = engine.NewRunLock(ctx, engine.NewRunID())
	return &Sampler{w: w, endLife: endLife}, nil
}

// Sample lists the containers watched, inspects the new ones, forgets (Fleet) or marks the
// ones that stopped, and reads every /dev/shm once; an agent's readings keep arriving between
// two calls. Its error is the daemon's: a call not answered within max(2 × Interval, 10s).
func (s *Sampler) Sample(ctx context.Context) error { return s.w.step(ctx) }

// Method is the method the sampler prefers; a container may be read another way (its Method
// and Fallback say so).
func (s *Sampler) Method() analyze.WatchMethod {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.w.method
}

// Close stops every companion, removes any left in Created, and releases the run lock.
func (s *Sampler) Close() {
	time.AfterFunc(engine.CleanupGrace, s.endLife)
	s.w.stopAll()
	s.w.sweep()
	s.w.lock.Release() // after the companions are gone
	s.endLife()
}

// SampledContainer is one container's state, with what the exporter labels it by.
type SampledContainer struct {
	analyze.WatchedContainer
	// Project is the compose project (com.docker.compose.project), "" for a container that
	// compose did not start.
	Project string
	// Source is whose /dev/shm the container uses: private, shareable (its own, which others
	// may join), joined (another container's), host, none, or mount (a tmpfs, bind or volume
	// mounted at /dev/shm).
	Source string
	// SizeFrom says what sized it: shm_size, default (the engine's 64 MiB), tmpfs (a tmpfs
	// mount's size=), host (the host's /dev/shm), mount (a bind or volume), none, or unknown
	// (a joined container whose owner is not watched).
	SizeFrom string
}

// Containers is the state of every container watched, in service and number order: with
// Fleet, the running ones.
func (s *Sampler) Containers() []SampledContainer {
	cs := s.w.containers()
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	out := make([]SampledContainer, 0, len(cs))
	for _, c := range cs {
		k := s.w.byID[c.ID]
		if k == nil {
			continue // forgotten since
		}
		o := k.origin
		if o.sizeFrom == "" {
			o.sizeFrom = "unknown"
			if owner := s.w.byID[k.group]; owner != nil && owner != k {
				o.sizeFrom = owner.origin.sizeFrom
			}
		}
		out = append(out, SampledContainer{WatchedContainer: c, Project: o.project, Source: o.source, SizeFrom: o.sizeFrom})
	}
	return out
}

// shmOrigin is where a container's /dev/shm comes from, as inspect tells it.
type shmOrigin struct {
	project  string
	source   string
	sizeFrom string // "" for a joined container: its owner's
}

// originOf reads a container's shmOrigin; mount is groupOf's mount type. The engine writes its
// default into HostConfig.ShmSize when none was asked, so a size equal to the default is
// called the default.
func originOf(in *container.InspectResponse, labels map[string]string, mount string) shmOrigin {
	o := shmOrigin{project: labels[ComposeProjectLabel]}
	hc := in.HostConfig
	switch {
	case mount == "tmpfs":
		o.source, o.sizeFrom = "mount", "tmpfs"
	case mount != "":
		o.source, o.sizeFrom = "mount", "mount"
	case hc.IpcMode.IsHost():
		o.source, o.sizeFrom = "host", "host"
	case hc.IpcMode.IsNone():
		o.source, o.sizeFrom = "none", "none"
	case hc.IpcMode.IsContainer():
		o.source = "joined"
	default:
		o.source = "private"
		if hc.IpcMode.IsShareable() {
			o.source = "shareable"
		}
		o.sizeFrom = "shm_size"
		if hc.ShmSize <= 0 || hc.ShmSize == analyze.DefaultShmSize {
			o.sizeFrom = "default"
		}
	}
	return o
}
