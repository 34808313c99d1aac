package report

import (
	"io"
	"path/filepath"

	"github.com/shmdoctor/shmdoctor/analyze"
)

type ccIssue struct {
	Type        string     `json:"type"`
	CheckName   string     `json:"check_name"`
	Description string     `json:"description" visible:"fix"` // ends with a remediation
	Categories  []string   `json:"categories"`
	Fingerprint string     `json:"fingerprint"`
	Severity    string     `json:"severity"`
	Location    ccLocation `json:"location"`
}

type ccLocation struct {
	Path  string  `json:"path"`
	Lines ccLines `json:"lines"`
}

type ccLines struct {
	Begin int `json:"begin"`
}

var ccSeverities = map[analyze.Severity]string{analyze.Error: "critical", analyze.Warning: "minor", analyze.Info: "info"}

// ccLoadError is the check name of a load error, which no rule reports.
const ccLoadError = "load-error"

// CodeClimate writes the findings as a GitLab code quality report: a JSON array of Code
// Climate issues. Load errors are issues too, so that a broken file does not pass silently;
// suppressed findings are left out.
func CodeClimate(w io.Writer, r *Report, _ Options) error {
	out := []ccIssue{}
	fps := fingerprints{}
	for _, p := range r.Projects {
		for _, e := range p.Errors {
			out = append(out, ccIssue{
				Type: "issue", CheckName: ccLoadError, Description: Visible(e.Msg), Categories: []string{"Bug Risk"},
				Fingerprint: fps.unique(fingerprint(analyze.Finding{Rule: ccLoadError, Pos: e.Pos, Message: e.Msg})),
				Severity:    "blocker",
				Location:    ccLocation{Path: filepath.ToSlash(e.File), Lines: ccLines{max(e.Line, 1)}},
			})
		}
		for _, f := range reported(p.Findings) {
			out = append(out, ccIssue{
				Type: "issue", CheckName: f.Rule, Description: Visible(f.Rule+" "+f.Message) + ". " + visibleFix(f.Remediation) + reproducedSentence(f), Categories: []string{"Bug Risk"},
				Fingerprint: fps.unique(fingerprint(f)),
				Severity:    ccSeverities[f.Severity],
				Location:    ccLocation{Path: filepath.ToSlash(f.File), Lines: ccLines{max(f.Line, 1)}},
			})
		}
	}
	return encodeJSON(w, out, "  ")
}
