package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// session is the doctor's conversation with the agent in one service's probe container,
// once the runner has created it: the attach that grants the write budget and holds the
// agent's standard input, the agent's lines as they come, and its final state.
type session struct {
	r  *runner
	n  *node
	id string
}

// attach connects to a created probe container's standard input and output before it
// starts. Standard input stays open for as long as the doctor holds the connection: the
// agent stops when it ends, so a doctor killed with SIGKILL leaves no writer behind. On
// the "measure" event the agent is sent its grant from the run's write budget.
func (s *session) attach() error {
	r, n, id := s.r, s.n, s.id
	ctx, cancel := r.reap.cleanupContext()
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
			// A line of another protocol grants nothing: fill says why the write probe did
			// not run.
			l, ok, err := protocol.ParseLine(sc.Bytes())
			if !ok || err != nil || l.Event != protocol.EventMeasure || l.Report == nil {
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
			n.notes.Lock()
			n.budgetNote, n.fillNote = note, fillNote
			n.notes.Unlock()
			line, _ := json.Marshal(protocol.Grant{Protocol: protocol.Version, Target: got})
			_, _ = att.Conn.Write(append(line, '\n'))
		}
	}()
	return nil
}

// progressEvery is the least time between two reports of the write probe's progress.
const progressEvery = 100 * time.Millisecond

// writeProgress turns the agent's progress lines into StageWriting events, at most one per
// progressEvery; add returns what out.add returns.
type writeProgress struct {
	r    *runner
	n    *node
	out  protocol.Output
	last time.Time
}

func (w *writeProgress) add(line []byte) bool {
	done := w.out.Add(line)
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
func (s *session) followWrite() (stop func()) {
	r, n, id := s.r, s.n, s.id
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
func (s *session) measureExited() {
	r, n, id := s.r, s.n, s.id
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
	out, _ := protocol.ParseOutput(&stdout)
	n.fill(out, ins.Container.State, stderr.String())
}

// measureHeld follows a donor's output until the agent's report; the container keeps
// running for the joiners.
func (s *session) measureHeld() {
	r, n, id := s.r, s.n, s.id
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
	n.fill(out, st, stderr.String())
}

// fill turns the agent's output and the container's final state into the Measurement.
func (n *node) fill(out *protocol.Output, st *container.State, stderr string) {
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
	n.notes.Lock()
	budgetNote, fillNote := n.budgetNote, n.fillNote
	n.notes.Unlock()
	if m.Write != nil && budgetNote != "" {
		m.Write.BudgetCapped = true
	}
	for _, note := range []string{budgetNote, fillNote, s.capped} {
		if m.Write != nil && note != "" {
			m.Write.Reason = strings.Trim(note+"; "+m.Write.Reason, "; ")
		}
	}
	if out.Report == nil && out.Err != nil {
		// An agent of another version: nothing it printed was read.
		m.Error = out.Err.Error()
	} else if out.Report == nil {
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
	return engine.OneLine(lines[len(lines)-1])
}
