package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Rules is the registry, sorted by ID. Each rule lives in its own file.
var All = []analyze.Rule{
	shm001, shm002, shm003, shm004, shm005, shm006,
	shm010, shm011, shm012, shm013, shm014, shm015,
	shm020, shm030, shm040, shm050, shm090,
	shm101, shm102, shm103, shm104, shm105, shm106, shm111,
	shm201, shm202, shm203, shm204, shm205,
}

// memoryNote warns that a suggested size must stay below the memory limit.
func memoryNote(p *analyze.ShmPlan, size int64) string {
	if p.MemLimit != nil && size >= *p.MemLimit {
		return " Raise the memory limit above " + analyze.FormatSize(size) + " too: /dev/shm pages count against it."
	}
	return ""
}

// defaultSeverity is how grave a workload left on the default /dev/shm is: a warning where
// it crashes (or declared a need), info where it only slows down.
func defaultSeverity(p *analyze.ShmPlan) analyze.Severity {
	return min(p.Severity(), analyze.Warning)
}

// adviseSize is the /dev/shm size a rule may advise: the shm_size written where it covers
// the need, else the need rounded up. For a workload whose need is not known ok is false:
// advice then names no size (a number the doctor cannot back could shrink a /dev/shm below
// what the workload uses), and points to the measurement instead.
func adviseSize(p *analyze.ShmPlan) (size int64, ok bool) {
	switch {
	case p.Configured != nil && *p.Configured > 0 && *p.Configured >= p.Target():
		return *p.Configured, true
	case p.Sized() || !p.Workload():
		return analyze.RecommendedSize(p), true
	}
	return 0, false
}

// measured is the advice where the need is not known: a size the measurement gives.
const measured = "the peak shmdoctor watch measures (declare it with x-shmdoctor.need)"

// effectiveSize describes a plan's /dev/shm size in words, where no number is known.
func effectiveSize(p *analyze.ShmPlan) string {
	switch {
	case p.Predicted != nil:
		return analyze.FormatSize(*p.Predicted)
	case p.HostShared():
		return "the host's size"
	case p.Mount != nil && p.Mount.Type == analyze.SourceTmpfs && p.DependsOn(p.Mount.Entry) == nil:
		return "half the host's memory"
	}
	return "an unknown size"
}

func sizeOrUnknown(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return analyze.FormatSize(*n)
}

// writeFailure is the shared check of the write-probe rules: the probe's outcome, the
// message that names it and the fix.
func writeFailure(p *analyze.Pass, outcome analyze.WriteOutcome, what string) {
	m := p.Measurement
	if m == nil || m.Write == nil || m.Write.Outcome != outcome {
		return
	}
	w := m.Write
	size := analyze.Friendly(max(w.TargetBytes, p.Plan.Target()))
	fix := fmt.Sprintf("Give /dev/shm at least %s (shm_size: %s).%s", analyze.FormatSize(w.TargetBytes), analyze.ComposeSize(size), memoryNote(p.Plan, size))
	if outcome == analyze.WriteOOMKilled {
		fix = fmt.Sprintf("Raise the memory limit well above /dev/shm (at least %s plus what the process needs), or lower /dev/shm below the limit.", analyze.FormatSize(w.TargetBytes))
	}
	p.Report(analyze.Finding{
		Pos:         sizingPos(p),
		Message:     fmt.Sprintf("%s after writing %s of %s to /dev/shm", what, analyze.FormatSize(w.WrittenBytes), analyze.FormatSize(w.TargetBytes)),
		Remediation: fix,
	})
}

// reproducesShortfall are the static rules whose too-small /dev/shm an ENOSPC or a SIGBUS
// of the write probe reproduces. The write fills a target the doctor chose, so that the
// failure is the prediction measured: it raises the finding's severity only short of a
// need the user declared, which the service itself writes.
var reproducesShortfall = []analyze.Reproduction{
	{Rule: "SHM010", Raises: analyze.BelowDeclaredNeed}, {Rule: "SHM011", Raises: analyze.BelowDeclaredNeed},
	{Rule: "SHM002", Raises: analyze.BelowDeclaredNeed}, {Rule: "SHM003", Raises: analyze.BelowDeclaredNeed},
}

// RuleByName returns the rule with that kebab name (shm-size-ignored-ipc-host), or nil.
func ByName(name string) *analyze.Rule {
	for i := range All {
		if All[i].Name == name {
			return &All[i]
		}
	}
	return nil
}

// RuleByID returns the rule with that ID, or nil.
func ByID(id string) *analyze.Rule { return analyze.FindRule(All, id) }

// Check runs every static rule over every plan of a project and returns the findings in
// file, line, rule order. Every rule runs: findings that a suppression covers are marked
// Suppressed rather than dropped, and a suppression that matches nothing is reported as
// an SHM090 finding.
func Check(p *analyze.Project, cfg analyze.Config) []analyze.Finding {
	return analyze.Run(p, All, cfg, nil)
}

// CheckMeasurements runs the probe rules over the measurements, keyed by service, with
// suppressions applied as Check does.
func CheckMeasurements(p *analyze.Project, cfg analyze.Config, ms map[string]*analyze.Measurement) []analyze.Finding {
	return analyze.Run(p, All, cfg, ms)
}
