package analyze

import (
	"fmt"
	"slices"
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
			"problem, one finding.", strings.Join(ids, " or "))
		b.WriteString(" " + raiseSentence(r.Reproduces) + "\n\n")
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

// raiseSentence says when a reproduction changes the severity of the finding it reproduces:
// one problem keeps one severity, whether the probe ran or not, unless the probe saw the
// service's own failure.
func raiseSentence(reps []Reproduction) string {
	var when []string
	refused := len(reps) > 0
	for _, rep := range reps {
		refused = refused && rep.Raises == Refused
		if rep.Raises != nil && !slices.Contains(when, rep.Raises.When) {
			when = append(when, rep.Raises.When)
		}
	}
	const measured = "the probe's write fills a target the doctor chose, so that its failure measures the prediction"
	switch {
	case refused:
		return "That finding takes this rule's severity: docker compose up is refused the same way."
	case len(when) == 0:
		return "That finding keeps its own severity: " + measured + "."
	}
	return "That finding takes this rule's severity when " + strings.Join(when, ", or when ") + "; otherwise it keeps its own: " + measured + "."
}
