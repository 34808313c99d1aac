package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Text writes the report for people: per project its errors, notes and findings grouped by
// service, a table of every service's /dev/shm, and a summary line. What came from the
// input is escaped as Visible escapes it, and every line is written through a lineWriter.
func Text(w io.Writer, r *Report, o Options) error {
	pal := newPalette(o.Color)
	tw := newLineWriter(w, o)
	if o.Verbose {
		config := r.Config
		if config == "" {
			config = "none"
		}
		tw.lines(wrapWords("", "config: "+Visible(config), o.width(), 2, pal.Dim))
		tw.line("")
	}
	for i, p := range r.Projects {
		if i > 0 {
			tw.line("")
		}
		textProject(tw, p, pal, o)
	}
	if r.ProbeNote != "" && !o.Quiet {
		tw.line("")
		tw.lines(wrapWords("", "probe: "+Visible(r.ProbeNote), o.width(), 2, pal.Dim))
	}
	s := r.Summarize()
	if !o.Quiet || s.Error+s.Warning > 0 || r.Errors() > 0 {
		tw.line("")
		tw.lines(wrapWords("", summaryLine(r, s, pal, o), o.width(), 2, lipgloss.NewStyle()))
	}
	return tw.err
}

func textProject(w *lineWriter, p *Project, pal palette, o Options) {
	width := o.width()
	title := "project " + Visible(p.Name)
	if p.Kubernetes {
		title = "manifest " + Visible(p.Name)
	} else if len(p.Files) > 0 {
		title += " (" + Visible(strings.Join(p.Files, ", ")) + ")"
	}
	findings := p.Shown(o)
	if o.Quiet {
		// errors and warnings only, as hadolint's and kube-linter's quiet modes print
		findings = slices.DeleteFunc(slices.Clone(findings), func(f analyze.Finding) bool { return f.Severity < analyze.Warning })
	}
	if !o.Quiet || len(findings) > 0 || len(p.Errors) > 0 {
		w.lines(wrapWords("", title, width, 2, pal.Project))
		if v := p.Variant; v != nil {
			w.lines(wrapWords("  ", Visible(fmt.Sprintf("checked as %s, %s: %s", v.CheckedAs(), v.Mode(), v.Why)), width, 4, pal.Dim))
		}
	}
	for _, e := range p.Errors {
		lead := "  " + pal.Severity[analyze.Error].Render("error") + " " + pal.Pos.Render(Visible(e.Pos.String()))
		w.lines(wrapWords(lead, Visible(e.Msg), width, 4, lipgloss.NewStyle()))
	}
	if !o.Quiet {
		for _, n := range p.Notes {
			w.lines(wrapWords("  ", "note: "+Visible(n), width, 4, pal.Dim))
		}
	}
	var current string
	for _, f := range byService(findings) {
		if f.Service != current {
			current = f.Service
			w.line("  " + pal.Service.Render(Visible(f.Service)))
		}
		if s := f.Suppressed; s != nil {
			// Listed for review, dimmed: what silences it instead of a fix.
			lead := "    " + pal.Dim.Render(Visible(fmt.Sprintf("%-7s %s %s", f.Severity, f.Rule, f.Pos)))
			w.lines(wrapWords(lead, Visible(f.Message), width, 12, pal.Dim))
			why := suppressedBy(s)
			if s.Reason != "" {
				why += ": " + s.Reason
			}
			w.lines(wrapWords(strings.Repeat(" ", 12), Visible(why), width, 12, pal.Dim))
			continue
		}
		sev := pal.Severity[f.Severity].Render(fmt.Sprintf("%-7s", f.Severity))
		rule := Visible(f.Rule)
		lead := "    " + sev + " " + pal.Rule.Render(rule) + " " + pal.Pos.Render(Visible(f.Pos.String()))
		// The line ends with the rule's page, as compose-lint's do: one click from a
		// finding to its rationale and examples.
		msg := Visible(f.Message)
		if plain := plainWords(f.Message); plain != "" {
			// the engine's raw words stay, under what they mean
			w.lines(wrapWords(lead, Visible(plain), width, 12, lipgloss.NewStyle()))
			lead = strings.Repeat(" ", 12)
		}
		w.lines(wrapWords(lead, msg+" "+pal.Dim.Render(RuleURL(rule)), width, 12, lipgloss.NewStyle()))
		for _, l := range findingNotes(f) {
			w.lines(wrapWords(strings.Repeat(" ", 12), Visible(l), width, 12, pal.Dim))
		}
		textFix(w, visibleFix(f.Remediation), pal, width)
	}
	if o.Verbose {
		if p.Doc != nil && !p.Kubernetes {
			w.lines(wrapWords("  ", "read: "+Visible(strings.Join(p.Doc.FilesRead(), ", ")), width, 4, pal.Dim))
		}
		for _, plan := range p.Plans {
			w.lines(wrapWords("  ", Visible(derivation(plan)), width, 4, pal.Dim))
		}
	}
	if len(p.Plans) > 0 && !o.Quiet {
		w.line("")
		serviceTable(w, p, pal, width)
		for _, n := range probeNotes(p) {
			w.lines(wrapWords("  ", Visible(n), width, 4, pal.Dim))
		}
	}
}

// findingNotes are the lines under a finding before its fix: the measurement that
// reproduced it, and the projects it affects when several read its file.
func findingNotes(f analyze.Finding) []string {
	var out []string
	if e := f.Evidence; e != nil {
		out = append(out, "reproduced: "+e.Message+" ("+e.Rule+")")
	}
	if len(f.Projects) > 1 {
		out = append(out, "in projects "+strings.Join(f.Projects, ", "))
	}
	return out
}

// fixIndent is where a fix's text starts, after "fix: " under the rule ID.
const fixIndent = 17

// textFix prints a finding's remediation under it, its sentences wrapped under "fix:"; the
// indented lines of Kubernetes fixes are YAML snippets, printed as they are.
func textFix(w *lineWriter, fix string, pal palette, width int) {
	first, rest, _ := strings.Cut(fix, "\n")
	w.lines(wrapWords(strings.Repeat(" ", 12)+pal.Fix.Render("fix:"), first, width, fixIndent, pal.Fix))
	if rest == "" {
		return
	}
	for _, l := range strings.Split(rest, "\n") {
		if strings.TrimSpace(l) == "" {
			w.line("")
			continue
		}
		if strings.HasPrefix(l, " ") {
			w.line(strings.Repeat(" ", fixIndent) + pal.Fix.Render(l)) // YAML: as written
			continue
		}
		w.lines(wrapWords(strings.Repeat(" ", fixIndent), l, width, fixIndent, pal.Fix))
	}
}

// byService orders findings into one run per service, services in the order of their first
// finding, each service's findings by file and line: a service whose findings come from
// several files (an extends base, an override) is printed as one block.
func byService(fs []analyze.Finding) []analyze.Finding {
	groups := map[string][]analyze.Finding{}
	var order []string
	for _, f := range fs {
		if _, ok := groups[f.Service]; !ok {
			order = append(order, f.Service)
		}
		groups[f.Service] = append(groups[f.Service], f)
	}
	out := make([]analyze.Finding, 0, len(fs))
	for _, s := range order {
		g := groups[s]
		analyze.SortFindings(g)
		out = append(out, g...)
	}
	return out
}

// serviceTable prints one row per service: configured and predicted /dev/shm, its source,
// the memory limit and, after a probe, the measurement. Laid out for width, in the first
// of these that fits: one table, its cells wrapped between words where needed; the
// measurement in a table of its own, the prediction repeated beside it; each service's
// name on a line of its own above its row (the long names of Kubernetes workloads).
func serviceTable(w *lineWriter, p *Project, pal palette, width int) {
	head := plainCells("SERVICE", "SHM_SIZE", "PREDICTED", "SOURCE", "MEM LIMIT", "PROFILE")
	wrap := map[int]bool{2: true, 4: true, 5: true}
	measuredHead := plainCells("MEASURED", "WRITE")
	rows := [][]cell{head}
	split := [][]cell{append(plainCells("SERVICE", "PREDICTED"), measuredHead...)}
	for _, plan := range p.Plans {
		row := plainCells(plan.Service, configured(plan), predicted(plan), source(plan), limit(plan), profile(plan))
		if p.Measurements != nil {
			m := measuredCells(p.Measurements[plan.Service], pal)
			split = append(split, append(plainCells(plan.Service, predicted(plan)), m...))
			row = append(row, m...)
		}
		rows = append(rows, row)
	}
	if p.Measurements != nil {
		rows[0] = append(rows[0], measuredHead...)
		wrap[6], wrap[7] = true, true
	}
	tables := [][][]cell{rows}
	if p.Measurements != nil {
		predictedOnly := make([][]cell, len(rows))
		for i := range rows {
			predictedOnly[i] = rows[i][:len(head)]
		}
		tables = [][][]cell{predictedOnly, split}
		if lines, fits := layoutTable(rows, wrap, 2, width, pal.Header); fits {
			w.lines(lines)
			return
		}
	}
	var out []string
	fits := true
	for i, t := range tables {
		lines, ok := layoutTable(t, map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true}, 2, width, pal.Header)
		if i > 0 {
			out = append(out, "")
		}
		out, fits = append(out, lines...), fits && ok
	}
	if fits {
		w.lines(out)
		return
	}
	out = out[:0]
	for i, t := range tables {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, stackedTable(t, width, pal)...)
	}
	w.lines(out)
}

// stackedTable lays rows out with the first cell on a line of its own above the others.
func stackedTable(rows [][]cell, width int, pal palette) []string {
	rows = visibleCells(rows)
	rest := make([][]cell, len(rows))
	for i, r := range rows {
		rest[i] = r[1:]
	}
	wrap := map[int]bool{}
	for i := range rest[0] {
		wrap[i] = true
	}
	byRow, _ := layoutRows(rest, wrap, 4, width, pal.Header)
	out := []string{"  " + pal.Header.Render(rows[0][0].text), byRow[0][0]}
	for i, r := range rows[1:] {
		out = append(out, wrapWords("  ", r[0].text, width, 4, lipgloss.NewStyle())...)
		out = append(out, byRow[i+1]...)
	}
	return out
}

// measuredCells are the MEASURED and WRITE cells, coloured by the outcome: a size is green
// only when the write probe filled what it aimed at.
func measuredCells(m *analyze.Measurement, pal palette) []cell {
	cols := measured(m)
	size, write := cell{text: cols[0]}, cell{text: cols[1]}
	switch o := outcome(m); o {
	case analyze.WriteOK:
		size.style = pal.OK
	case analyze.WriteENOSPC, analyze.WriteSIGBUS, analyze.WriteOOMKilled:
		size.style, write.style = pal.Severity[analyze.Error], pal.Severity[analyze.Error]
	}
	if m != nil && (m.CreateError != "" || m.Error != "") {
		size.style = pal.Severity[analyze.Error]
	}
	return []cell{size, write}
}

// outcome is how a measurement's write probe ended, "" when none ran.
func outcome(m *analyze.Measurement) analyze.WriteOutcome {
	if m == nil || m.Write == nil {
		return ""
	}
	return m.Write.Outcome
}

func configured(p *analyze.ShmPlan) string {
	switch {
	case p.DependsOn(analyze.ShmKey) != nil:
		return "$" + strings.Join(p.DependsOn(analyze.ShmKey), ",$") + " unset"
	case p.Configured == nil:
		return "-"
	}
	return analyze.FormatSize(*p.Configured)
}

func predicted(p *analyze.ShmPlan) string {
	switch {
	case p.Predicted != nil:
		return analyze.FormatSize(*p.Predicted)
	case p.Source == analyze.SourceHost || p.HostShared():
		return "host's"
	case p.Mount != nil && p.Mount.Type == analyze.SourceTmpfs && p.DependsOn(p.Mount.Entry) == nil:
		return "half of RAM"
	}
	return "unknown"
}

func source(p *analyze.ShmPlan) string {
	s := string(p.Source)
	switch {
	case len(p.Via) > 0:
		s += ":" + strings.Join(shownAll(p, p.Via), ">")
	case p.Donor != "":
		s += ":" + p.Shown(p.Donor)
	case p.Mount != nil && p.Mount.Source != "":
		s += ":" + p.Shown(p.Mount.Source)
	}
	return s
}

func limit(p *analyze.ShmPlan) string {
	if p.MemLimit != nil {
		return analyze.FormatSize(*p.MemLimit)
	}
	for _, k := range []string{"mem_limit", "deploy.resources.limits.memory"} {
		if vars := p.DependsOn(k); vars != nil {
			return "$" + strings.Join(vars, ",$") + " unset"
		}
	}
	return "-"
}

func profile(p *analyze.ShmPlan) string {
	switch {
	case p.Profile != nil && p.Need != nil:
		return p.Profile.ID + ", need " + analyze.FormatSize(*p.Need)
	case p.Use.Sized():
		return p.Profile.ID + " " + analyze.FormatSize(p.Use.Need)
	case p.Use.Uses():
		return p.Profile.ID + " ?"
	case p.Profile != nil:
		return p.Profile.ID
	case p.Need != nil:
		return "need " + analyze.FormatSize(*p.Need)
	}
	return "-"
}

func measured(m *analyze.Measurement) []string {
	switch {
	case m == nil:
		return []string{"-", "-"}
	case m.CreateError != "":
		return []string{"create failed", "-"}
	case m.Error != "":
		return []string{"error", "-"}
	case !m.Exists:
		return []string{"none", "-"}
	}
	size := "?"
	if m.MeasuredBytes != nil {
		size = analyze.FormatSize(*m.MeasuredBytes)
	}
	write := "-"
	if m.Write != nil {
		write = string(m.Write.Outcome)
		if m.Write.Outcome != analyze.WriteSkipped {
			// /dev/shm never holds more than its measured size: the column says what
			// it held, not what the agent counted.
			written := m.Write.WrittenBytes
			if m.MeasuredBytes != nil && written > *m.MeasuredBytes {
				written = *m.MeasuredBytes
			}
			write += " " + analyze.FormatSize(written)
		}
		if m.Write.GBps > 0 {
			write += fmt.Sprintf(" @ %.1f GB/s", m.Write.GBps)
		}
		if m.Write.BudgetCapped {
			write += " (capped)"
		}
	}
	return []string{size, write}
}

// probeNotes gathers what the probe says about its own measurements (settings it did not
// copy, services it could not measure), once per distinct sentence.
func probeNotes(p *Project) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, plan := range p.Plans {
		m := p.Measurements[plan.Service]
		if m == nil {
			continue
		}
		for _, o := range m.Omitted {
			add("probe: " + o)
		}
		if m.Error != "" {
			if plain := plainWords(m.Error); plain != "" {
				add("probe: " + plan.Service + ": " + plain)
			}
			add("probe: " + plan.Service + ": " + m.Error)
		}
		if w := m.Write; w != nil && w.BudgetCapped {
			add("probe: " + plan.Service + ": the write probe did not test the service's full size: " + w.Reason)
		}
	}
	return out
}

// derivation explains how a plan was reached, for --verbose.
func derivation(p *analyze.ShmPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: source %s", p.Service, p.Source)
	if p.IPC != "" {
		fmt.Fprintf(&b, " (ipc %s)", p.Shown(p.IPC))
	}
	if len(p.Via) > 0 {
		fmt.Fprintf(&b, " via %s", strings.Join(shownAll(p, p.Via), " -> "))
	}
	fmt.Fprintf(&b, ", shm_size %s, predicted %s, memory limit %s", configured(p), predicted(p), limit(p))
	switch {
	case p.Use.Sized():
		fmt.Fprintf(&b, ", profile %s (needs %s)", p.Profile.ID, analyze.FormatSize(p.Use.Need))
	case p.Use.Uses():
		fmt.Fprintf(&b, ", profile %s (uses /dev/shm, size not known)", p.Profile.ID)
	case p.Profile != nil:
		fmt.Fprintf(&b, ", profile %s (no need beyond the default)", p.Profile.ID)
	}
	if p.Need != nil {
		fmt.Fprintf(&b, ", need %s from %s", analyze.FormatSize(*p.Need), p.NeedFrom)
	}
	for _, ig := range p.Ignored {
		fmt.Fprintf(&b, "; %s ignored: %s", ig.Key, ig.Reason)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "; %s", n)
	}
	return b.String()
}

func summaryLine(r *Report, s Summary, pal palette, o Options) string {
	services := 0
	for _, p := range r.Projects {
		services += len(p.Plans)
	}
	parts := []string{
		pal.Severity[analyze.Error].Render(plural(s.Error, "error")),
		pal.Severity[analyze.Warning].Render(plural(s.Warning, "warning")),
		pal.Severity[analyze.Info].Render(plural(s.Info, "info")),
	}
	line := fmt.Sprintf("%s in %s, %s", strings.Join(parts, ", "), plural(len(r.Projects), "project"), plural(services, "service"))
	if n := r.Errors(); n > 0 {
		line += fmt.Sprintf("; the input has %s", plural(n, "error"))
	}
	if s.Reported() == 0 && r.Errors() == 0 {
		line = pal.OK.Render("no findings") + " in " + plural(len(r.Projects), "project") + ", " + plural(services, "service")
	}
	if s.Suppressed > 0 {
		line += fmt.Sprintf("; %d suppressed", s.Suppressed)
		if !o.ShowSuppressed {
			line += " (--show-suppressed lists them)"
		}
	}
	return line
}

func plural(n int, word string) string {
	if n == 1 || word == "info" {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// errWriter writes what a machine reads line by line (workflow commands, an XML header),
// keeping the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// suppressedBy says what silenced a finding: the kind and where it is written, or the
// flag on the command line.
func suppressedBy(s *analyze.Suppression) string {
	if s.Kind == analyze.SuppressFlag {
		return "suppressed by --ignore"
	}
	return fmt.Sprintf("suppressed by %s at %s", s.Kind, s.Pos)
}
