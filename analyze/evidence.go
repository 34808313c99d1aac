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
	// Raises, when set, says when the measurement is a failure the service itself meets,
	// not only the measurement of the prediction: the static finding then takes the probe
	// rule's severity. Nil keeps the static finding's severity, with the measurement as
	// its evidence.
	Raises *Raise
}

// Raise is when a reproduction raises the static finding's severity to the probe rule's.
type Raise struct {
	// When says it in the rule's documentation, after "when": "the memory limit is below
	// the service's need".
	When string
	// Test reports it for a service's measurement and plan (nil when the plan is unknown).
	Test func(*Measurement, *ShmPlan) bool
}

// Refused is a Raise for a refusal to create the container: docker compose up fails the
// same way, whatever the service writes.
var Refused = &Raise{
	When: "docker refused the container",
	Test: func(m *Measurement, _ *ShmPlan) bool { return m != nil && m.CreateError != "" },
}

// BelowDeclaredNeed is a Raise for a write that failed short of the need the user declared
// (x-shmdoctor.need, --need): the service writes that much. A write that failed short of
// a target the doctor chose (the predicted size, a shm_size, the need a workload's
// parameters give) is the measurement of the prediction, not a failure seen.
var BelowDeclaredNeed = &Raise{
	When: "the write failed short of the need declared for the service (x-shmdoctor.need or --need)",
	Test: func(m *Measurement, p *ShmPlan) bool {
		return m != nil && m.Write != nil && p != nil && p.Need != nil && m.Write.WrittenBytes < *p.Need
	},
}

// LimitBelowNeed is a Raise for an OOM kill where the memory limit is below what the
// service needs in /dev/shm (declared, or given by its workload's parameters): the service
// reaches the limit by writing what it needs. An OOM kill while filling a /dev/shm nothing
// is known to fill is the measurement of the prediction.
var LimitBelowNeed = &Raise{
	When: "the memory limit is below the service's /dev/shm need (declared, or given by its workload's parameters)",
	Test: func(m *Measurement, p *ShmPlan) bool {
		return p != nil && p.MemLimit != nil && ExceedsLimit(p.Target(), *p.MemLimit)
	},
}

// CreateErrorHas matches a measurement whose creation Docker (or Podman) refused with a
// message holding s, in any case.
func CreateErrorHas(s string) func(*Measurement) bool {
	return func(m *Measurement) bool {
		return m != nil && strings.Contains(strings.ToLower(m.CreateError), strings.ToLower(s))
	}
}

// WithEvidence folds the probe's findings into the static findings of project p whose
// prediction they reproduce, on the same service: the static finding keeps its rule,
// place, message, fix and severity, and gains the measurement as Evidence. One problem has
// one severity whether the probe ran or not: the probe's write fills a target the doctor
// chose, so that its ENOSPC or OOM kill measures the prediction, and the static finding's
// severity already says how sure it is. Only a failure the service itself meets raises it
// to the probe rule's (see Reproduction.Raises): a refused container, a write short of a
// declared need, an OOM kill at a limit below the need. A probe finding stands on its own
// where the static model predicted nothing of the kind: a mismatch, a refusal no rule
// foresaw, an ENOSPC on a service no rule flagged. A suppressed finding and one that is
// not are never merged: the user silenced one of them, not both. The result is sorted.
func WithEvidence(rules []Rule, p *Project, static, probed []Finding, ms map[string]*Measurement) []Finding {
	out := slices.Clone(static)
	for _, pf := range probed {
		if i, rep := reproduced(rules, out, pf, ms[pf.Service]); i >= 0 {
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
			var plan *ShmPlan
			if p != nil {
				plan = p.Plan(pf.Service)
			}
			if rep.Raises != nil && rep.Raises.Test(ms[pf.Service], plan) {
				f.Severity = max(f.Severity, pf.Severity)
			}
			continue
		}
		out = append(out, pf)
	}
	SortFindings(out)
	return out
}

// reproduced is the index of the static finding that the probe finding pf reproduces, and
// how; -1 when none.
func reproduced(rules []Rule, fs []Finding, pf Finding, m *Measurement) (int, Reproduction) {
	r := FindRule(rules, pf.Rule)
	if r == nil {
		return -1, Reproduction{}
	}
	for _, rep := range r.Reproduces {
		if rep.Match != nil && !rep.Match(m) {
			continue
		}
		for i, f := range fs {
			if f.Rule == rep.Rule && f.Service == pf.Service && f.Evidence == nil && (f.Suppressed == nil) == (pf.Suppressed == nil) {
				return i, rep
			}
		}
	}
	return -1, Reproduction{}
}
