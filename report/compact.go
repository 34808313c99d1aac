package report

import (
	"io"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Compact writes one line per finding and load error, as hadolint's and dclint's compact
// formats and GNU's error format do, so that editors and grep take them as they are:
//
//	file:line:col: severity RULE message
//
// A finding the probe reproduced says so at the end of its line. Suppressed findings are
// left out; --quiet leaves out info. What came from the input is escaped as Visible
// escapes it, so that a value can neither start a line of its own nor steer a terminal.
func Compact(w io.Writer, r *Report, o Options) error {
	ew := &errWriter{w: w}
	for _, p := range r.Projects {
		for _, e := range p.Errors {
			ew.printf("%s: error %s %s\n", compactPlace(e.Pos, p), ccLoadError, Visible(e.Msg))
		}
		for _, f := range reported(p.Findings) {
			if o.Quiet && f.Severity < analyze.Warning {
				continue
			}
			ew.printf("%s: %s %s %s%s\n", compactPlace(f.Pos, p), f.Severity, Visible(f.Rule), Visible(f.Message), compactReproduced(f))
		}
	}
	return ew.err
}

// compactPlace is file:line:col, as much of it as is known; the project's name when the
// place has no file.
func compactPlace(pos analyze.Pos, p *Project) string {
	if pos.File == "" {
		return Visible(p.Name)
	}
	return Visible(pos.String())
}

// compactReproduced is the probe's evidence at the end of a finding's line.
func compactReproduced(f analyze.Finding) string {
	if f.Evidence == nil {
		return ""
	}
	return " (reproduced: " + Visible(f.Evidence.Message) + ")"
}
