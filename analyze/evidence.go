package analyze

import (
	"slices"
	"strings"
)

// Evidence is what the probe measured that reproduces a finding's prediction: one problem
// is reported once, by the static rule that predicted it, with the measurement as proof.
type Evidence struct {
	// Rule and Name are the probe rule that observed it (SHM204 write-probe-oom-killed).
	Rule string `json:"rule"`
	Name string `json:"name"`
	// Message is what the probe saw, in the probe rule's words.
	Message string `json:"message"`
	// Write is the write probe's result, when the write probe reproduced it.
	Write *Write `json:"write,omitempty"`
	// CreateError is Docker's own message, when Docker refused the service's settings.
	CreateError string `json:"create_error,omitempty"`
}

// Reproduction names a static rule whose prediction a probe rule's finding reproduces on
// the same service. Match, when set, says whether a measurement is that prediction's: a
// refused container is SHM006's only when Docker names the non-shareable donor.
type Reproduction struct {
	Rule  string
	Match func(*Measurement) bool
}

// CreateErrorHas matches a measurement whose creation Docker (or Podman) refused with a
// message holding s, in any case.
func CreateErrorHas(s string) func(*Measurement) bool {
	return func(m *Measurement) bool {
		return m != nil && strings.Contains(strings.ToLower(m.CreateError), strings.ToLower(s))
	}
}

// WithEvidence folds the probe's findings into the static findings whose prediction they
// reproduce, on the same service: the static finding keeps its rule, place, message and
// fix, gains the measurement as Evidence and takes the higher of the two severities (a
// reproduced failure is no longer a risk). A probe finding stands on its own where the
// static model predicted nothing of the kind: a mismatch, a refusal no rule foresaw, an
// ENOSPC on a service no rule flagged. A suppressed finding and one that is not are never
// merged: the user silenced one of them, not both. The result is sorted.
func WithEvidence(rules []Rule, static, probed []Finding, ms map[string]*Measurement) []Finding {
	out := slices.Clone(static)
	for _, pf := range probed {
		if i := reproduced(rules, out, pf, ms[pf.Service]); i >= 0 {
			f := &out[i]
			f.Evidence = &Evidence{Rule: pf.Rule, Name: pf.Name, Message: pf.Message}
			if m := ms[pf.Service]; m != nil {
				if m.CreateError != "" {
					f.Evidence.CreateError = m.CreateError
				} else if m.Write != nil {
					w := *m.Write
					f.Evidence.Write = &w
				}
			}
			f.Severity = max(f.Severity, pf.Severity)
			continue
		}
		out = append(out, pf)
	}
	SortFindings(out)
	return out
}

// reproduced is the index of the static finding that the probe finding pf reproduces, or -1.
func reproduced(rules []Rule, fs []Finding, pf Finding, m *Measurement) int {
	r := FindRule(rules, pf.Rule)
	if r == nil {
		return -1
	}
	for _, rep := range r.Reproduces {
		if rep.Match != nil && !rep.Match(m) {
			continue
		}
		for i, f := range fs {
			if f.Rule == rep.Rule && f.Service == pf.Service && f.Evidence == nil && (f.Suppressed == nil) == (pf.Suppressed == nil) {
				return i
			}
		}
	}
	return -1
}
