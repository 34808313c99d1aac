package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var githubCommands = map[analyze.Severity]string{analyze.Error: "error", analyze.Warning: "warning", analyze.Info: "notice"}

// GitHub writes one GitHub Actions workflow command per finding and load error, so that a
// pull request shows them inline on the compose or manifest line. Suppressed findings are
// left out. Every line is a command of the doctor's own: what came from the input is
// escaped as Visible escapes it, then as the runner unescapes a command's values.
func GitHub(w io.Writer, r *Report, _ Options) error {
	ew := &errWriter{w: w}
	for _, p := range r.Projects {
		for _, e := range p.Errors {
			githubCommand(ew, "error", e.Pos, "shmdoctor load error", Visible(e.Msg))
		}
		for _, f := range reported(p.Findings) {
			githubCommand(ew, githubCommands[f.Severity], f.Pos, f.Rule+" "+f.Name, Visible(f.Message)+". fix: "+visibleFix(f.Remediation)+reproducedSentence(f))
		}
	}
	return ew.err
}

// githubCommand writes one command. A message keeps only the line breaks of a remediation's
// YAML (visibleFix), which the runner shows as they are.
func githubCommand(w *errWriter, cmd string, pos analyze.Pos, title, msg string) {
	var props []string
	if pos.File != "" {
		props = append(props, "file="+githubProperty(Visible(pos.File)))
		if pos.Line > 0 {
			props = append(props, "line="+strconv.Itoa(pos.Line))
			if pos.Column > 0 {
				props = append(props, "col="+strconv.Itoa(pos.Column))
			}
		}
	}
	props = append(props, "title="+githubProperty(Visible(title)))
	w.printf("::%s %s::%s\n", cmd, strings.Join(props, ","), githubData(visibleFix(msg)))
}

var (
	githubDataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	githubPropertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// githubData escapes a command's message as the runner's parser expects.
func githubData(s string) string { return githubDataEscaper.Replace(s) }

// githubProperty escapes a command's property value, where ':' and ',' are delimiters.
func githubProperty(s string) string { return githubPropertyEscaper.Replace(s) }
