package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// DefaultMemFloor is the host's MemAvailable below which the writer stops, whatever its
// target: the writer reads /proc/meminfo again before each 1 MiB chunk, so that several
// doctors probing one host at once, or a workload growing meanwhile, stop the write probes
// here rather than at the OOM killer. The agent's --mem-floor overrides it.
const DefaultMemFloor int64 = 1 << 30

// writeGrant is the line the doctor sends a probe agent on its standard input once the
// agent has measured: the most the agent may write, what is left of the run's budget.
type writeGrant struct {
	Target int64 `json:"target"`
}

// memBudget is one run's write budget, shared by all its services: half of the host's
// MemAvailable as the first agent measured it (or Options.WriteBudget). Each service gets
// the smaller of its target and what is left; what is granted is not given back, so the
// targets of a run add up to the budget at most.
type memBudget struct {
	mu      sync.Mutex
	total   int64 // -1: unknown (no measurement): the agents' own cap applies alone
	set     bool
	from    string
	granted int64
}

// grant takes at most want bytes from the budget; note says why less was given, "" when
// want was given in full.
func (b *memBudget) grant(want int64, fixed int64, avail *int64) (int64, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set {
		b.set = true
		switch {
		case fixed > 0:
			b.total, b.from = fixed, "set by the caller"
		case avail != nil:
			b.total = *avail / 2
			b.total -= b.total % (1 << 20)
			b.from = "half of the host's available memory, " + analyze.FormatSize(*avail)
		default:
			b.total = -1
		}
	}
	if b.total < 0 {
		return want, ""
	}
	left := max(b.total-b.granted, 0)
	got := min(want, left)
	b.granted += got
	if got == want {
		return got, ""
	}
	note := fmt.Sprintf("target %s capped at %s by the run's memory budget (%s: %s", analyze.FormatSize(want), analyze.FormatSize(got), analyze.FormatSize(b.total), b.from)
	if before := b.granted - got; before > 0 {
		note += fmt.Sprintf("; %s went to the services probed before", analyze.FormatSize(before))
	}
	return got, note + ")"
}

// attach connects to a created probe container's standard input and output before it
// starts. Standard input stays open for as long as the doctor holds the connection: the
// agent stops when it ends, so a doctor killed with SIGKILL leaves no writer behind. On
// the "measure" event the agent is sent its grant from the run's write budget.
func (r *runner) attach(n *node, id string) error {
	ctx, cancel := r.cleanupContext()
	defer cancel()
	att, err := r.c.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true})
	if err != nil {
		return err
	}
	n.att = att.HijackedResponse
	go func() {
		pr, pw := io.Pipe()
		go func() {
			_, err := stdcopy.StdCopy(pw, io.Discard, att.Reader)
			pw.CloseWithError(err)
		}()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		granted := false
		for sc.Scan() {
			if granted || !bytes.Contains(sc.Bytes(), []byte(`"measure"`)) {
				continue
			}
			var l agentLine
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Event != "measure" || l.Report == nil {
				continue
			}
			granted = true
			want := n.spec.target
			var fillNote string
			if size := l.Report.SizeBytes; n.spec.fill && size != nil && *size < want {
				fillNote = fmt.Sprintf("target %s (the predicted size) lowered to %s, what /dev/shm holds", analyze.FormatSize(want), analyze.FormatSize(*size))
				want = *size
			}
			var got int64
			var note string
			if l.Report.Exists {
				got, note = r.budget.grant(want, r.o.WriteBudget, l.Report.MemAvailableBytes)
			}
			r.mu.Lock()
			n.budgetNote, n.fillNote = note, fillNote
			r.mu.Unlock()
			line, _ := json.Marshal(writeGrant{Target: got})
			_, _ = att.Conn.Write(append(line, '\n'))
		}
	}()
	return nil
}

// detach closes the attach connection, which ends the agent's standard input.
func (n *node) detach() {
	if n.att.Conn != nil {
		n.att.Close()
	}
}

// parseMemAvailable reads MemAvailable out of /proc/meminfo's text, in bytes.
func parseMemAvailable(b []byte) (int64, bool) {
	i := bytes.Index(b, []byte("MemAvailable:"))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+len("MemAvailable:"):])
	if len(f) == 0 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}
