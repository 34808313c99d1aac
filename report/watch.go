package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// barWidth is the width of the use bar in the live view, between its brackets;
// narrowBar is its width when the view does not fit the terminal otherwise.
const barWidth, narrowBar = 20, 10

// LiveView redraws the lines of `shmdoctor watch` in place on a terminal: one line per
// service with its /dev/shm size, current use, peak, a bar and the memory limit headroom.
type LiveView struct {
	liveBlock
	pal palette
}

// NewLiveView draws on w, which must be a terminal.
func NewLiveView(w io.Writer, color bool) *LiveView {
	return &LiveView{liveBlock: newLiveBlock(w, "  … %d more lines: enlarge the terminal, or use --format json"), pal: newPalette(color)}
}

// Draw replaces the previous drawing with the state of s.
func (v *LiveView) Draw(s analyze.WatchSample, started time.Time, interval time.Duration) error {
	width, _ := v.size()
	if width <= 0 {
		width = DefaultWidth
	}
	return v.draw(liveLines(s, started, interval, v.pal, width))
}

// Clear erases the drawing, so that the summary takes its place.
func (v *LiveView) Clear() error { return v.clear() }

// liveLines are the lines of the live view for a terminal of width columns, without the
// terminal's control sequences. The bar narrows, then the memory limit's cell wraps,
// rather than a line be cut: the headroom is the verdict.
func liveLines(s analyze.WatchSample, started time.Time, interval time.Duration, pal palette, width int) []string {
	head := fmt.Sprintf("watching %s every %s, %s elapsed (Ctrl-C for the summary)", Visible(s.Project), interval, s.Time.Sub(started).Round(time.Second))
	lines := wrapWords("", head, width, 2, pal.Dim)
	if len(s.Services) == 0 {
		return append(lines, wrapWords("  ", "no running container of project "+Visible(s.Project)+" yet", width, 4, lipgloss.NewStyle())...)
	}
	var table []string
	for _, try := range []struct {
		bar  int
		wrap map[int]bool
	}{{barWidth, nil}, {narrowBar, map[int]bool{5: true}}, {narrowBar, map[int]bool{5: true, 6: true}}} {
		bw := try.bar
		rows := [][]cell{plainCells("SERVICE", "CTRS", "SIZE", "USED", "PEAK", "USE", "MEM LIMIT")}
		for _, u := range s.Services {
			ctrs := fmt.Sprintf("%d", u.Running)
			if u.SharesService != "" {
				rows = append(rows, plainCells(u.Service, ctrs, "-", "-", "-", "uses the /dev/shm of "+u.SharesService, ""))
				continue
			}
			if u.Running == 0 {
				rows = append(rows, plainCells(u.Service, "0", sizeOr(u.SizeBytes, "?"), "exited", sizeOr(u.PeakBytes, "-"), "", headroom(u.MemLimitBytes, nil)))
				continue
			}
			use := cell{text: bar(u.UsedBytes, u.PeakBytes, u.SizeBytes, bw, pal), keep: true, own: true}
			if len(u.Errors) > 0 && u.UsedBytes == nil {
				use = cell{text: "cannot read: " + u.Errors[0], style: pal.Severity[analyze.Error]}
			}
			rows = append(rows, []cell{{text: u.Service}, {text: ctrs}, {text: sizeOr(u.SizeBytes, hostOr(u.HostIPC))}, {text: sizeOr(u.UsedBytes, "-")}, {text: sizeOr(u.PeakBytes, "-")}, use, {text: headroom(u.MemLimitBytes, u.UsedBytes)}})
		}
		var fits bool
		table, fits = layoutTable(rows, try.wrap, 2, width, pal.Header)
		if fits {
			break
		}
	}
	return append(lines, table...)
}

// bar draws use against size in barWidth cells, with the peak marked by a bar.
func bar(used, peak, size *int64, barWidth int, pal palette) string {
	if used == nil || size == nil || *size <= 0 {
		return ""
	}
	frac := func(n int64) int {
		return min(barWidth, int(math.Round(float64(n)/float64(*size)*float64(barWidth))))
	}
	fill := frac(*used)
	cells := []rune(strings.Repeat("#", fill) + strings.Repeat(".", barWidth-fill))
	if peak != nil && *peak > *used {
		if p := frac(*peak); p > 0 {
			cells[p-1] = '|'
		}
	}
	share := float64(*used) / float64(*size)
	style := pal.OK
	switch {
	case share >= 0.9:
		style = pal.Severity[analyze.Error]
	case share >= 0.75:
		style = pal.Severity[analyze.Warning]
	}
	return "[" + style.Render(string(cells)) + fmt.Sprintf("] %3.0f%%", share*100)
}

// headroom is the memory limit and what it leaves beside the /dev/shm in use.
func headroom(limit, used *int64) string {
	switch {
	case limit == nil:
		return "no limit"
	case used == nil:
		return analyze.FormatSize(*limit)
	}
	return fmt.Sprintf("%s, %s headroom", analyze.FormatSize(*limit), analyze.FormatSize(*limit-*used))
}

func sizeOr(n *int64, or string) string {
	if n == nil {
		return or
	}
	return analyze.FormatSize(*n)
}

func hostOr(host bool) string {
	if host {
		return "host's"
	}
	return "?"
}

// WatchText writes the summary of a watch for people: what each service used at its peak,
// the shm_size that follows, whether the memory limit holds it, and where to write it.
// What the engine and the compose file name is escaped as Visible escapes it.
func WatchText(w io.Writer, s *analyze.WatchSummary, o Options) error {
	pal := newPalette(o.Color)
	tw := newLineWriter(w, o)
	end := "--duration"
	switch {
	case s.DaemonError != "":
		end = "the daemon: " + Visible(s.DaemonError)
	case s.Interrupted:
		end = "Ctrl-C"
	}
	tw.line(pal.Project.Render(fmt.Sprintf("watched project %s for %s (ended by %s), %s, %s",
		Visible(s.Project), s.Duration.Round(100*time.Millisecond), end, plural(len(s.Services), "service"), plural(len(s.Containers), "container"))))
	if len(s.Services) == 0 {
		tw.line("  no container of project " + Visible(s.Project) + " ran during the watch")
		return tw.err
	}
	rows := [][]cell{plainCells("SERVICE", "CONTAINERS", "SIZE", "PEAK", "SHM_SIZE", "MEMORY LIMIT")}
	recs := map[string]*analyze.ShmRecommendation{}
	for i := range s.Recommendations {
		recs[s.Recommendations[i].Service] = &s.Recommendations[i]
	}
	for _, u := range s.Services {
		ctrs := fmt.Sprintf("%d seen", u.Seen)
		if u.Running > 0 {
			ctrs = fmt.Sprintf("%d seen, %d running", u.Seen, u.Running)
		}
		switch r := recs[u.Service]; {
		case u.SharesService != "":
			rows = append(rows, plainCells(u.Service, ctrs, "-", "-", "see "+u.SharesService, ""))
		case r == nil:
			rows = append(rows, plainCells(u.Service, ctrs, sizeOr(u.SizeBytes, hostOr(u.HostIPC)), "not read", "-", sizeOr(u.MemLimitBytes, "no limit")))
		default:
			fit := cell{text: "no limit"}
			if r.MemLimitBytes != nil {
				fit.text = analyze.FormatSize(*r.MemLimitBytes) + ", holds it"
				if !r.Fits {
					fit = cell{text: analyze.FormatSize(*r.MemLimitBytes) + ", too small", style: pal.Severity[analyze.Error]}
				}
			}
			rows = append(rows, []cell{{text: u.Service}, {text: ctrs}, {text: sizeOr(u.SizeBytes, hostOr(u.HostIPC))}, {text: analyze.FormatSize(r.PeakBytes)}, {text: r.ShmSize, style: pal.Fix}, fit})
		}
	}
	tw.line("")
	lines, _ := layoutTable(rows, map[int]bool{1: true, 5: true}, 2, o.width(), pal.Header)
	tw.lines(lines)
	for _, r := range s.Recommendations {
		watchRecommendation(tw, r, pal, o.width())
	}
	for _, u := range s.Services {
		for _, e := range u.Errors {
			tw.line("")
			tw.lines(wrapWords("  "+pal.Severity[analyze.Warning].Render("not read"), Visible(e), o.width(), 4, lipgloss.NewStyle()))
		}
	}
	if len(s.Notes) > 0 {
		tw.line("")
		for _, n := range s.Notes {
			tw.lines(wrapWords("", Visible(n), o.width(), 2, pal.Dim))
		}
	}
	return tw.err
}

// watchRecommendation prints one service's recommendation: one line when nothing is to
// change, else the verdict on the memory limit and the compose text to write, and where.
func watchRecommendation(tw *lineWriter, r analyze.ShmRecommendation, pal palette, width int) {
	say := func(text string, style lipgloss.Style) { tw.lines(wrapWords("  ", Visible(text), width, 4, style)) }
	head := pal.Service.Render(Visible(r.Service))
	if r.NoReduction != "" {
		tw.line("")
		tw.lines(wrapWords(head, Visible(recommendationLine(r)), width, 2, lipgloss.NewStyle()))
		say(r.NoReduction, pal.Severity[analyze.Warning])
		if !r.Fits {
			say(r.Verdict, pal.Severity[analyze.Error])
		}
		return
	}
	if !r.Change && r.Fits {
		holds := "/dev/shm already has this size"
		if r.RecommendedBytes == analyze.DefaultShmSize && !r.Set {
			holds = "Docker's default 64 MiB holds it"
		}
		tw.line("")
		tw.lines(wrapWords(head, Visible(recommendationLine(r))+": "+pal.OK.Render(holds+", nothing to change"), width, 2, lipgloss.NewStyle()))
		return
	}
	tw.line("")
	tw.lines(wrapWords(head, Visible(recommendationLine(r)), width, 2, lipgloss.NewStyle()))
	if r.FloorFrom != "" && r.RecommendedBytes == r.FloorBytes {
		say("not below the minimum: "+r.FloorFrom, pal.Dim)
	}
	if r.Fits {
		say(r.Verdict, lipgloss.NewStyle())
	} else {
		say(r.Verdict, pal.Severity[analyze.Error])
	}
	if r.Note != "" {
		say("note: "+r.Note, pal.Dim)
	}
	if !r.Change {
		return // the memory limit is what must change, and the verdict says so
	}
	where := "add to the compose file"
	switch {
	case r.Pos.File != "" && r.Set:
		where = "change " + r.Key + " at " + r.Pos.String()
	case r.Pos.File != "":
		where = "add under the service at " + r.Pos.String()
	}
	if r.Diff != "" {
		// Not indented: the patch applies as printed (git apply, patch -p1).
		say(where+", as a patch:", pal.Fix)
		tw.patch(r.Diff, "")
		return
	}
	say(where+":", pal.Fix)
	tw.patch(r.Snippet, "    ")
}

// recommendationLine is "peak 48 MiB × 1.5 → shm_size: 128m (now 64 MiB)", or "peak 0 B →
// shm_size: 256m (as now)" when no reduction is advised.
func recommendationLine(r analyze.ShmRecommendation) string {
	if r.NoReduction != "" {
		// peak × headroom is not what is recommended: the size stays
		return fmt.Sprintf("peak %s → shm_size: %s (as now)", analyze.FormatSize(r.PeakBytes), r.ShmSize)
	}
	line := fmt.Sprintf("peak %s × %g → shm_size: %s", analyze.FormatSize(r.PeakBytes), r.Headroom, r.ShmSize)
	if r.CurrentBytes != nil {
		switch {
		case *r.CurrentBytes == r.RecommendedBytes:
			line += " (as now)"
		default:
			line += " (now " + analyze.FormatSize(*r.CurrentBytes) + ")"
		}
	}
	return line
}

// WatchJSONSample writes one sample as one line of JSON, for dashboards reading the stream.
func WatchJSONSample(w io.Writer, s analyze.WatchSample) error {
	return encodeJSON(w, s, "")
}

// WatchJSONSummary writes the summary as the stream's last line of JSON.
func WatchJSONSummary(w io.Writer, s *analyze.WatchSummary) error {
	return encodeJSON(w, s, "")
}
