package analyze

import (
	"fmt"
	"strings"
)

// Markdown renders the rule's documentation as Markdown: the one text behind `shmdoctor
// explain`, docs/rules and the help of SARIF rules.
func (r *Rule) Markdown() string {
	var b strings.Builder
	// The title as written, never capitalised: it often starts with a compose key
	// (shm_size, ipc: none, tmpfs), which is lowercase in every compose file.
	fmt.Fprintf(&b, "# %s %s\n\n%s. Default severity: %s.\n\n", r.ID, r.Name, r.Title, r.Severity)
	fmt.Fprintf(&b, "## Rationale\n\n%s\n\n", r.Doc.Rationale)
	if len(r.Reproduces) > 0 {
		var ids []string
		for _, rep := range r.Reproduces {
			ids = append(ids, rep.Rule)
		}
		fmt.Fprintf(&b, "Where %s predicted the problem on the same service, the measurement is reported as that "+
			"finding's evidence (\"reproduced: ...\", `evidence` in JSON) rather than as a finding of this rule: one "+
			"problem, one finding.\n\n", strings.Join(ids, " or "))
	}
	fmt.Fprintf(&b, "## Problematic\n\n```yaml\n%s```\n\n", r.Doc.Problematic)
	fmt.Fprintf(&b, "## Correct\n\n```yaml\n%s```\n\n", r.Doc.Correct)
	fmt.Fprintf(&b, "## Exceptions\n\n%s\n", r.Doc.Exceptions)
	if len(r.Doc.Sources) > 0 {
		b.WriteString("\n## Sources\n\n")
		for _, s := range r.Doc.Sources {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}
