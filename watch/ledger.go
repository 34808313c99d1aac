package watch

import (
	"sort"
	"sync"

	"github.com/moby/moby/api/types/container"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// ledger is what a watch knows: every container seen, grouped by the /dev/shm it uses, with
// the readings recorded in each. Discovery adds to it, readers (stats, df, companions) record
// in it, and the watch's samples are copies of it.
type ledger struct {
	method analyze.WatchMethod // the preferred method; groups may fall back

	mu     sync.Mutex
	byID   map[string]*watched
	order  []*watched
	groups map[string]*shmGroup
}

func newLedger() *ledger {
	return &ledger{byID: map[string]*watched{}, groups: map[string]*shmGroup{}}
}

// members are the running containers of a group.
func (l *ledger) members(g *shmGroup) []*watched {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*watched
	for _, k := range l.order {
		if k.group == g.key && k.Running {
			out = append(out, k)
		}
	}
	return out
}

// watched is one container.
type watched struct {
	analyze.WatchedContainer
	group   string
	pidMode container.PidMode
	ownSize *int64 // from inspect, nil where it depends on the host
	origin  shmOrigin
}

// shmGroup is one /dev/shm: a container's own, or one shared through ipc: service:,
// container: or host. It is read once per sample, whichever member it is read through.
type shmGroup struct {
	key       string
	method    analyze.WatchMethod
	size      *int64
	companion *companion
	starting  bool
	failures  int    // companions that failed in a row
	err       string // why the preferred method failed last
}

func (l *ledger) groupKeys() []string {
	keys := make([]string, 0, len(l.groups))
	for k := range l.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// record stores one reading of a group in each of its running members. A reading that is
// no sample of its own (an agent's rise line) updates use and peak but not the count.
func (l *ledger) record(g *shmGroup, members []*watched, method analyze.WatchMethod, size *int64, used, peak int64, readErr string, sample bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if size != nil {
		g.size = size
	}
	for _, k := range members {
		if !k.Running {
			continue
		}
		k.Method = method
		k.Fallback = ""
		if method != l.method {
			k.Fallback = g.err
		}
		if readErr != "" {
			k.Error = readErr
			continue
		}
		k.Error = ""
		if sample {
			k.Samples++
		}
		k.SizeBytes = g.size
		k.UsedBytes = engine.Ptr(used)
		if k.PeakBytes == nil || max(peak, used) > *k.PeakBytes {
			k.PeakBytes = engine.Ptr(max(peak, used))
		}
	}
}

// containers copies the state of every container seen, in service and number order.
func (l *ledger) containers() []analyze.WatchedContainer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]analyze.WatchedContainer, 0, len(l.order))
	for _, k := range l.order {
		c := k.WatchedContainer
		if c.SharesWith != "" && c.SharesService == "" {
			if owner := l.byID[k.group]; owner != nil {
				c.SharesWith, c.SharesService = owner.Name, owner.Service
			}
		}
		out = append(out, c)
	}
	return out
}
