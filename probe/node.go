package probe

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
)

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
	// size of /dev/shm lowered it (both under notes).
	att        client.HijackedResponse
	notes      sync.Mutex
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
	report      *protocol.Report
}

func (n *node) markReady() { n.readyOnce.Do(func() { close(n.ready) }) }

// detach closes the attach connection, which ends the agent's standard input.
func (n *node) detach() {
	if n.att.Conn != nil {
		n.att.Close()
	}
}

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
