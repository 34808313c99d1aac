// Package report renders what the doctor found, one renderer per format. It is the only
// package that styles text.
package report

import (
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Report is everything one run found, in the order the projects were loaded.
type Report struct {
	Projects []*Project
	// ProbeNote says why the probe did not run, when it did not ("" when it ran or was off).
	ProbeNote string
	// Interrupted is set when Ctrl-C ended the run before the probe did: the report holds
	// what was found before it.
	Interrupted bool
	// Version is the doctor's version, printed where a format has room for it.
	Version string
	// Config is the config file the run read, "" when none.
	Config string
	// SourceRoot is the absolute folder SARIF names files relative to (%SRCROOT%); "" is
	// the working folder.
	SourceRoot string
}

// Project is one analysed project.
type Project struct {
	*analyze.Project
	// Findings are every finding, suppressed ones included: each format decides.
	Findings     []analyze.Finding
	Measurements map[string]*analyze.Measurement // nil when not probed
}

// Options tune rendering.
type Options struct {
	Color   bool
	Verbose bool
	Quiet   bool
	// ShowSuppressed lists suppressed findings in text and JSON; SARIF always records
	// them, the CI annotation formats never show them.
	ShowSuppressed bool
	// FailOn is the lowest severity that fails the run (--fail-on): JUnit fails the test
	// cases of findings at or above it. 0 fails none (--fail-on never).
	FailOn analyze.Severity
	// Width is the number of columns the text formats are laid out for; 0 is DefaultWidth.
	// Lines wrap at word boundaries to it and tables narrow their wrapping cells.
	Width int
}

// Renderer writes a report in one format.
type Renderer func(w io.Writer, r *Report, o Options) error

// Formats maps a --format name to its renderer.
var Formats = map[string]Renderer{
	"text":        Text,
	"json":        JSON,
	"sarif":       SARIF,
	"github":      GitHub,
	"codeclimate": CodeClimate,
	"junit":       JUnit,
	"baseline":    BaselineFile,
	"compact":     Compact,
}

// FormatNames lists the formats, sorted, for --format's help; a comma and a space part them,
// so that the help can wrap between them at 80 columns.
func FormatNames() string {
	names := make([]string, 0, len(Formats))
	for n := range Formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Summary counts the findings per severity, suppressed ones apart.
type Summary struct {
	Error      int `json:"error"`
	Warning    int `json:"warning"`
	Info       int `json:"info"`
	Suppressed int `json:"suppressed"`
}

// Reported is the number of findings that are not suppressed.
func (s Summary) Reported() int { return s.Error + s.Warning + s.Info }

// Summarize counts the findings of every project.
func (r *Report) Summarize() Summary {
	var s Summary
	for _, p := range r.Projects {
		for _, f := range p.Findings {
			if f.Suppressed != nil {
				s.Suppressed++
				continue
			}
			switch f.Severity {
			case analyze.Error:
				s.Error++
			case analyze.Warning:
				s.Warning++
			case analyze.Info:
				s.Info++
			}
		}
	}
	return s
}

// OnePerPlace reports once a finding that several projects have at the same place, with
// the same rule, service and message: in a file they all include or extend. The first
// project keeps it, naming every project it affects in Projects; the others leave it out.
// It keeps the higher severity, and the probe's evidence from whichever project has it.
func (r *Report) OnePerPlace() {
	type key struct {
		rule, service, msg string
		pos                analyze.Pos
		suppressed         bool
	}
	type owner struct{ project, index int }
	first := map[key]owner{}
	for pi, p := range r.Projects {
		kept := make([]analyze.Finding, 0, len(p.Findings))
		for _, f := range p.Findings {
			k := key{f.Rule, f.Service, f.Message, f.Pos, f.Suppressed != nil}
			o, seen := first[k]
			if !seen {
				first[k] = owner{pi, len(kept)}
				kept = append(kept, f)
				continue
			}
			g := &r.Projects[o.project].Findings[o.index]
			if o.project == pi {
				g = &kept[o.index]
			}
			if len(g.Projects) == 0 {
				g.Projects = []string{r.Projects[o.project].Name}
			}
			if !slices.Contains(g.Projects, p.Name) {
				g.Projects = append(g.Projects, p.Name)
			}
			g.Severity = max(g.Severity, f.Severity)
			if g.Evidence == nil {
				g.Evidence = f.Evidence
			}
		}
		p.Findings = kept
	}
	for _, p := range r.Projects {
		for i := range p.Findings {
			if len(p.Findings[i].Projects) < 2 {
				p.Findings[i].Projects = nil // the same project twice: one project
			}
		}
	}
}

// Errors counts load errors of every project.
func (r *Report) Errors() int {
	n := 0
	for _, p := range r.Projects {
		n += len(p.Errors)
	}
	return n
}

// Worst is the highest severity of the findings not suppressed, 0 when none.
func (r *Report) Worst() analyze.Severity {
	var w analyze.Severity
	for _, p := range r.Projects {
		for _, f := range p.Findings {
			if f.Suppressed == nil {
				w = max(w, f.Severity)
			}
		}
	}
	return w
}

// Shown are the findings a report lists: those not suppressed, and with
// Options.ShowSuppressed the suppressed ones too.
func (p *Project) Shown(o Options) []analyze.Finding {
	if o.ShowSuppressed {
		return p.Findings
	}
	return reported(p.Findings)
}

// reported are the findings that are not suppressed.
func reported(fs []analyze.Finding) []analyze.Finding {
	var out []analyze.Finding
	for _, f := range fs {
		if f.Suppressed == nil {
			out = append(out, f)
		}
	}
	return out
}
