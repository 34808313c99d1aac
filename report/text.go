package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Text writes the report for people: per project its errors, notes and findings grouped by
// service, a table of every service's /dev/shm, and a summary line.
func Text(w io.Writer, r *Report, o Options) error {
	pal := newPalette(o.Color)
	tw := &errWriter{w: w}
	if o.Verbose {
		config := r.Config
		if config == "" {
			config = "none"
		}
		tw.printf("%s\n\n", pal.Dim.Render("config: "+config))
	}
	for i, p := range r.Projects {
		if i > 0 {
			tw.printf("\n")
		}
		textProject(tw, p, pal, o)
	}
	if r.ProbeNote != "" && !o.Quiet {
		tw.printf("\n%s\n", pal.Dim.Render("probe: "+r.ProbeNote))
	}
	s := r.Summarize()
	if !o.Quiet || s.Reported() > 0 || r.Errors() > 0 {
		tw.printf("\n%s\n", summaryLine(r, s, pal, o))
	}
	return tw.err
}

func textProject(w *errWriter, p *Project, pal palette, o Options) {
	title := "project " + p.Name
	if p.Kubernetes {
		title = "manifest " + p.Name
	} else if len(p.Files) > 0 {
		title += " (" + strings.Join(p.Files, ", ") + ")"
	}
	findings := p.Shown(o)
	if !o.Quiet || len(findings) > 0 || len(p.Errors) > 0 {
		w.printf("%s\n", pal.Project.Render(printable(title)))
		if v := p.Variant; v != nil {
			w.printf("  %s\n", pal.Dim.Render(printable(fmt.Sprintf("checked as %s, %s: %s", v.CheckedAs(), v.Mode(), v.Why))))
		}
	}
	for _, e := range p.Errors {
		w.printf("  %s %s %s\n", pal.Severity[analyze.Error].Render("error"), pal.Pos.Render(printable(e.Pos.String())), printable(e.Msg))
	}
	if !o.Quiet {
		for _, n := range p.Notes {
			w.printf("  %s\n", pal.Dim.Render(printable("note: "+n)))
		}
	}
	var current string
	for _, f := range byService(findings) {
		if f.Service != current {
			current = f.Service
			w.printf("  %s\n", pal.Service.Render(f.Service))
		}
		if s := f.Suppressed; s != nil {
			// Listed for review, dimmed: what silences it instead of a fix.
			w.printf("    %s\n", pal.Dim.Render(printable(fmt.Sprintf("%-7s %s %s %s", f.Severity, f.Rule, f.Pos, f.Message))))
			why := fmt.Sprintf("suppressed by %s at %s", s.Kind, s.Pos)
			if s.Reason != "" {
				why += ": " + s.Reason
			}
			w.printf("            %s\n", pal.Dim.Render(printable(why)))
			continue
		}
		sev := pal.Severity[f.Severity].Render(fmt.Sprintf("%-7s", f.Severity))
		w.printf("    %s %s %s %s\n", sev, pal.Rule.Render(f.Rule), pal.Pos.Render(printable(f.Pos.String())), printable(f.Message))
		for _, l := range findingNotes(f) {
			w.printf("            %s\n", pal.Dim.Render(printable(l)))
		}
		// Kubernetes fixes carry YAML snippets: their lines stay under the fix.
		fix := strings.ReplaceAll(printable(f.Remediation, '\n'), "\n", "\n                 ")
		fix = strings.ReplaceAll(fix, "\n                 \n", "\n\n")
		w.printf("            %s\n", pal.Fix.Render("fix: "+fix))
	}
	if o.Verbose {
		if p.Index != nil && !p.Kubernetes {
			w.printf("  %s\n", pal.Dim.Render(printable("read: "+strings.Join(p.Index.Files(), ", "))))
		}
		for _, plan := range p.Plans {
			w.printf("  %s\n", pal.Dim.Render(printable(derivation(plan))))
		}
	}
	if len(p.Plans) > 0 && !o.Quiet {
		w.printf("\n")
		serviceTable(w, p, pal)
		for _, n := range probeNotes(p) {
			w.printf("  %s\n", pal.Dim.Render(printable(n)))
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

// printable writes the control characters of s as Go escapes (\x1b, \n), except those in
// keep: a file name holding an escape sequence or a newline must neither restyle the
// terminal nor forge a line of the report.
func printable(s string, keep ...rune) string {
	escape := func(r rune) bool { return unicode.IsControl(r) && !slices.Contains(keep, r) }
	if !strings.ContainsFunc(s, escape) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if escape(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
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
// the memory limit and, after a probe, the measurement.
func serviceTable(w *errWriter, p *Project, pal palette) {
	head := []string{"SERVICE", "SHM_SIZE", "PREDICTED", "SOURCE", "MEM LIMIT", "PROFILE"}
	if p.Measurements != nil {
		head = append(head, "MEASURED", "WRITE")
	}
	rows := [][]string{head}
	for _, plan := range p.Plans {
		row := []string{plan.Service, configured(plan), predicted(plan), printable(source(plan)), limit(plan), profile(plan)}
		if p.Measurements != nil {
			row = append(row, measured(p.Measurements[plan.Service])...)
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	for i, r := range rows {
		var b strings.Builder
		for j, c := range r {
			if j == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[j]-lipgloss.Width(c)+2))
		}
		line := strings.TrimRight(b.String(), " ")
		if i == 0 {
			line = pal.Header.Render(line)
		}
		w.printf("  %s\n", line)
	}
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
			write += " " + analyze.FormatSize(m.Write.WrittenBytes)
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
	case p.Profile != nil && p.Profile.MinShm == 0:
		fmt.Fprintf(&b, ", profile %s (no minimum)", p.Profile.ID)
	case p.Profile != nil:
		fmt.Fprintf(&b, ", profile %s (min %s)", p.Profile.ID, analyze.FormatSize(p.Profile.MinShm))
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

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
