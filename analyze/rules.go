package analyze

import "fmt"

// Rules is the registry, sorted by ID. Each rule lives in its own file.
var Rules = []Rule{
	shm001, shm002, shm003, shm004, shm005, shm006,
	shm010, shm011, shm012, shm013, shm014, shm015,
	shm020, shm030, shm040, shm090,
	shm101, shm102, shm103, shm104, shm105, shm106, shm111,
	shm201, shm202, shm203, shm204, shm205,
}

// memoryNote warns that a suggested size must stay below the memory limit.
func memoryNote(p *ShmPlan, size int64) string {
	if p.MemLimit != nil && size >= *p.MemLimit {
		return " Raise the memory limit above " + FormatSize(size) + " too: /dev/shm pages count against it."
	}
	return ""
}

// effectiveSize describes a plan's /dev/shm size in words, where no number is known.
func effectiveSize(p *ShmPlan) string {
	switch {
	case p.Predicted != nil:
		return FormatSize(*p.Predicted)
	case p.HostShared():
		return "the host's size"
	case p.Mount != nil && p.Mount.Type == SourceTmpfs && p.DependsOn(p.Mount.Entry) == nil:
		return "half the host's memory"
	}
	return "an unknown size"
}

func sizeOrUnknown(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return FormatSize(*n)
}

// writeFailure is the shared check of the write-probe rules: the probe's outcome, the
// message that names it and the fix.
func writeFailure(p *Pass, outcome WriteOutcome, what string) {
	m := p.Measurement
	if m == nil || m.Write == nil || m.Write.Outcome != outcome {
		return
	}
	w := m.Write
	size := friendly(max(w.TargetBytes, p.Plan.Target()))
	fix := fmt.Sprintf("Give /dev/shm at least %s (shm_size: %s).%s", FormatSize(w.TargetBytes), ComposeSize(size), memoryNote(p.Plan, size))
	if outcome == WriteOOMKilled {
		fix = fmt.Sprintf("Raise the memory limit well above /dev/shm (at least %s plus what the process needs), or lower /dev/shm below the limit.", FormatSize(w.TargetBytes))
	}
	p.Report(Finding{
		Pos:         sizingPos(p),
		Message:     fmt.Sprintf("%s after writing %s of %s to /dev/shm", what, FormatSize(w.WrittenBytes), FormatSize(w.TargetBytes)),
		Remediation: fix,
	})
}

// RuleByName returns the rule with that kebab name (shm-size-ignored-ipc-host), or nil.
func RuleByName(name string) *Rule {
	for i := range Rules {
		if Rules[i].Name == name {
			return &Rules[i]
		}
	}
	return nil
}

// RuleByID returns the rule with that ID, or nil.
func RuleByID(id string) *Rule { return FindRule(Rules, id) }

// Check runs every static rule over every plan of a project and returns the findings in
// file, line, rule order. Every rule runs: findings that a suppression covers are marked
// Suppressed rather than dropped, and a suppression that matches nothing is reported as
// an SHM090 finding.
func Check(p *Project, cfg Config) []Finding {
	return Run(p, Rules, cfg, nil)
}

// CheckMeasurements runs the probe rules over the measurements, keyed by service, with
// suppressions applied as Check does.
func CheckMeasurements(p *Project, cfg Config, ms map[string]*Measurement) []Finding {
	return Run(p, Rules, cfg, ms)
}
