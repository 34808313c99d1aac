package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/probe"
)

// Progress draws one line per service on a terminal while the probe runs, rewriting the
// block in place. It is for terminals only: the caller never creates one for a log or a
// pipe, so CI output holds none of it. Its methods are safe from several goroutines.
type Progress struct {
	title string
	pal   palette
	width int // of the service names
	now   func() time.Time

	mu      sync.Mutex
	block   liveBlock
	order   []string
	lines   map[string]*progressLine
	stopped bool
}

type progressLine struct {
	stage probe.Stage
	since time.Time
	write *analyze.Write // how far the write probe has got
	m     *probeResult
}

// probeResult is what a finished line shows.
type probeResult struct {
	size, write, problem string
	outcome              analyze.WriteOutcome
}

// NewProgress returns a Progress writing to w (a terminal): a title line, then the services
// in this order. The title and the services' names are escaped as Visible escapes them.
func NewProgress(w io.Writer, color bool, title string, services []string) *Progress {
	p := &Progress{title: Visible(title), pal: newPalette(color), now: time.Now, lines: map[string]*progressLine{},
		block: newLiveBlock(w, "  … %d more services")}
	for _, s := range services {
		if _, ok := p.lines[s]; !ok {
			p.order = append(p.order, s)
			p.lines[s] = &progressLine{stage: probe.StageWaiting}
			p.width = max(p.width, utf8.RuneCountInString(Visible(s)))
		}
	}
	p.width = min(p.width, 40)
	return p
}

// Update records an event and redraws; it is a probe.Options.Progress function.
func (p *Progress) Update(e probe.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.lines[e.Service]
	if !ok || p.stopped {
		return
	}
	if e.Stage != l.stage {
		l.stage, l.since = e.Stage, p.now()
	}
	switch e.Stage {
	case probe.StageDone:
		l.m = result(e)
	case probe.StageWriting:
		l.write = e.Write
	}
	p.draw()
}

// Tick redraws the block so running services show their elapsed time.
func (p *Progress) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.draw()
	}
}

// Run redraws every interval until stop is closed, then clears the block so the report
// that follows starts on a clean screen.
func (p *Progress) Run(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.Clear()
			return
		case <-t.C:
			p.Tick()
		}
	}
}

// Clear erases the block and stops drawing.
func (p *Progress) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.block.clear() // a terminal that cannot be written to has nothing to clear
	p.stopped = true
}

// draw rewrites the whole block: the title, then a line per service.
func (p *Progress) draw() {
	// A long service name gives way to the verdict: on a narrow terminal the name is
	// shortened so that "write oom_killed 1.5 GiB @ 0.7 GB/s" keeps its line.
	nameWidth := p.width
	if width, _ := p.block.size(); width > 0 {
		nameWidth = min(p.width, max(8, width-4-verdictWidth))
	}
	lines := []string{p.title}
	for _, s := range p.order {
		lines = append(lines, p.line(s, p.lines[s], nameWidth))
	}
	_ = p.block.draw(lines) // progress is a courtesy: the report says what matters
}

// verdictWidth is the room a finished line's measurement takes after the name: "16.5 GiB  write
// oom_killed 15.5 GiB @ 10.5 GB/s (capped)" and a little more.
const verdictWidth = 54

func (p *Progress) line(service string, l *progressLine, width int) string {
	name := middleTruncate(Visible(service), width)
	name = p.pal.Service.Render(fmt.Sprintf("%-*s", width, name))
	switch l.stage {
	case probe.StageDone:
		if l.m.problem != "" {
			return fmt.Sprintf("  %s  %s", name, p.pal.Severity[analyze.Error].Render(l.m.problem))
		}
		// green only when the write probe filled what it aimed at
		size, write := p.pal.OK, p.pal.Dim
		switch l.m.outcome {
		case analyze.WriteENOSPC, analyze.WriteSIGBUS, analyze.WriteOOMKilled:
			size, write = p.pal.Severity[analyze.Error], p.pal.Severity[analyze.Error]
		case analyze.WriteSkipped:
			size = lipgloss.NewStyle()
		}
		return fmt.Sprintf("  %s  %s  %s", name, size.Render(l.m.size), write.Render(l.m.write))
	case probe.StageWaiting:
		return fmt.Sprintf("  %s  %s", name, p.pal.Dim.Render("waiting"))
	}
	elapsed := p.pal.Dim.Render(fmt.Sprintf("%.1fs", p.now().Sub(l.since).Truncate(100*time.Millisecond).Seconds()))
	if l.stage == probe.StageWriting && l.write != nil {
		w := l.write
		return fmt.Sprintf("  %s  writing %s of %s (%s) %s", name, analyze.FormatSize(w.WrittenBytes), analyze.FormatSize(w.TargetBytes), w.Mode, elapsed)
	}
	return fmt.Sprintf("  %s  %s %s", name, l.stage, elapsed)
}

// result summarizes a finished measurement in the words of the service table.
func result(e probe.Event) *probeResult {
	m := e.Measurement
	cols := measured(m)
	r := &probeResult{size: cols[0], write: cols[1], outcome: outcome(m)}
	switch {
	case m == nil:
		r.problem = "no measurement"
	case m.CreateError != "":
		r.problem = "docker refused the container"
	case m.Error != "":
		r.problem = "failed: " + Visible(firstLine(m.Error))
	}
	if r.write == "-" {
		r.write = ""
	} else {
		r.write = "write " + r.write
	}
	return r
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// middleTruncate shortens a name longer than width in its middle, with "…": services of a
// stack often share a long prefix (worker-gpu-0, worker-gpu-1) and differ at the end, which
// must stay visible to tell their lines apart.
func middleTruncate(name string, width int) string {
	r := []rune(name)
	if len(r) <= width || width < 2 {
		return name
	}
	head := (width - 1) / 3
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
