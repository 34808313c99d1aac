package analyze

import (
	"fmt"
	"sort"
	"strings"
)

// Severity is how much a finding matters. The zero value is not a severity.
type Severity int

// Severities, in increasing order.
const (
	Info Severity = iota + 1
	Warning
	Error
)

var severityNames = map[Severity]string{Info: "info", Warning: "warning", Error: "error"}

func (s Severity) String() string { return severityNames[s] }

// MarshalText makes severities read as words in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity parses "error", "warning" or "info".
func ParseSeverity(s string) (Severity, error) {
	for k, v := range severityNames {
		if v == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: use error, warning or info", s)
}

// Doc is a rule's documentation, the one source for `shmdoctor explain`, the rules table
// and docs/rules.
type Doc struct {
	Rationale   string
	Problematic string // a compose (or Kubernetes) snippet that triggers the rule
	Correct     string // the same snippet fixed
	Exceptions  string
	Sources     []string // "title: https://..." lines
}

// Rule is one check. Rules are values in the Rules registry; adding one is a file, a test, a
// fixture folder and a line there.
type Rule struct {
	ID       string
	Name     string // kebab-case
	Severity Severity
	Title    string // lowercase, no period, at most 60 characters
	Doc      Doc
	// Probe marks rules that judge a measurement; they run only after a probe.
	Probe bool
	// Reproduces lists, for a probe rule, the static rules whose prediction its finding
	// reproduces on the same service: the measurement then becomes that finding's
	// Evidence instead of a second finding of the same problem.
	Reproduces []Reproduction
	// Kubernetes marks rules over Kubernetes containers; the others judge compose services.
	Kubernetes bool
	Check      func(*Pass)
}

// Policy is the strategy remediations follow when ipc: host is involved.
type Policy string

// The two valid strategies.
const (
	// PolicyStability keeps ipc: host where it is (and drops what it makes redundant).
	PolicyStability Policy = "stability"
	// PolicyIsolation drops ipc: host and sizes a private /dev/shm instead.
	PolicyIsolation Policy = "isolation"
)

// Target is the engine the stack is deployed with.
type Target string

// Targets.
const (
	TargetCompose Target = "compose"
	TargetSwarm   Target = "swarm"
	TargetPodman  Target = "podman"
)

// Config tunes the rules.
type Config struct {
	Policy Policy
	Target Target
	// Severity overrides the severity of every finding of a rule, by rule ID.
	Severity map[string]Severity
	// Ignore are the config file's suppressions: rules everywhere, or every rule in files
	// matching a glob.
	Ignore []ConfigIgnore
}

// ConfigIgnore is an ignore or ignore-paths entry of the config file, or an --ignore of
// the command line (Kind SuppressFlag).
type ConfigIgnore struct {
	Kind   SuppressionKind // SuppressConfig when empty
	Rules  []string        // the rules ignored everywhere; nil for a path entry
	Glob   string          // slash-separated, relative to Dir; "" for a rule entry
	Dir    string          // the config file's folder, absolute
	Reason string
	Pos    Pos // the entry in the config file
}

// Finding is one reported problem, located at the key that causes it.
type Finding struct {
	Rule     string   `json:"rule"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	Service  string   `json:"service"`
	Pos
	Message     string `json:"message"`
	Remediation string `json:"remediation"`
	Related     []Pos  `json:"related,omitempty"`
	// Suppressed is set when a comment, x-shmdoctor.ignore, an annotation or the config
	// file silences the finding: reports leave it out unless asked, SARIF records it.
	Suppressed *Suppression `json:"suppressed,omitempty"`
	// Fix is the mechanical change that resolves the finding, nil when the finding takes a
	// decision or the change cannot be made safely here; NoFix then says why, if a fix
	// usually resolves it.
	Fix   *Fix   `json:"-"`
	NoFix string `json:"-"`
	// Evidence is the probe's measurement that reproduced what the finding predicts, nil
	// when the probe did not run or did not reproduce it.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Projects names every project the finding affects when it sits in a file several
	// projects of the run read (an include, an extends base): it is reported once, in
	// the first of them. Nil when one project has it.
	Projects []string `json:"projects,omitempty"`
}

// Pass is what a rule's Check sees: one service of one project.
type Pass struct {
	Project     *Project
	Plan        *ShmPlan
	Measurement *Measurement // nil unless the rule is a Probe rule
	Config      Config
	rule        *Rule
	findings    *[]Finding
}

// Report records a finding of the running rule. A zero Severity means the rule's default.
func (p *Pass) Report(f Finding) {
	f.Rule, f.Name, f.Service = p.rule.ID, p.rule.Name, p.Plan.Service
	if f.Severity == 0 {
		f.Severity = p.rule.Severity
	}
	if f.Pos.File == "" {
		f.Pos = p.ServicePos()
	}
	f.shown(p.Plan)
	*p.findings = append(*p.findings, f)
}

// ReportPod records a finding about a Kubernetes pod as a whole (hostIPC): it is named by
// the pod, K8sPlan.Pod, not by the container the check runs on, so that it is reported,
// listed and suppressed once for the pod.
func (p *Pass) ReportPod(f Finding) {
	p.Report(f)
	(*p.findings)[len(*p.findings)-1].Service = p.Plan.K8s.Pod
}

// At is the position of a service key in the file where its winning value is written, or
// the service's own position when the key is not written anywhere.
func (p *Pass) At(key ...string) Pos {
	if pos, ok := p.Project.Doc.KeyPos(p.Plan.Service, key...); ok {
		return pos
	}
	return p.Project.Doc.ServicePos(p.Plan.Service)
}

// Has reports whether a service key is written in any of the project's files.
func (p *Pass) Has(key ...string) bool {
	_, ok := p.Project.Doc.KeyPos(p.Plan.Service, key...)
	return ok
}

// ServicePos is the position of the service's name, or of a Kubernetes container's name.
func (p *Pass) ServicePos() Pos {
	if p.Plan.K8s != nil {
		return p.Plan.K8s.ContainerPos
	}
	return p.Project.Doc.ServicePos(p.Plan.Service)
}

// MountPos is the position of the entry that mounts something at /dev/shm.
func (p *Pass) MountPos() Pos {
	if pos, ok := p.Project.Doc.MountPos(p.Plan); ok {
		return pos
	}
	return p.ServicePos()
}

// MemLimitKey is the key that sets the memory limit, as docker compose picks it.
func (p *Pass) MemLimitKey() []string {
	if p.Has("deploy", "resources", "limits", "memory") {
		return []string{"deploy", "resources", "limits", "memory"}
	}
	return []string{"mem_limit"}
}

// Run runs rules over every plan of a project and returns the findings in file, line, rule
// order: the static rules when ms is nil, else the probe rules over the measurements, keyed
// by service. Every rule runs: findings that a suppression covers are marked Suppressed
// rather than dropped, and a suppression that matches nothing is reported under the rule
// UnusedSuppression, when rules hold it.
func Run(p *Project, rules []Rule, cfg Config, ms map[string]*Measurement) []Finding {
	if cfg.Policy == "" {
		cfg.Policy = PolicyStability
	}
	if cfg.Target == "" {
		cfg.Target = TargetCompose
	}
	var out []Finding
	for _, plan := range p.Plans {
		var m *Measurement
		if ms != nil {
			if m = ms[plan.Service]; m == nil {
				continue
			}
		}
		for i := range rules {
			r := &rules[i]
			if r.Probe != (ms != nil) || r.Kubernetes != (plan.K8s != nil) {
				continue
			}
			r.Check(&Pass{Project: p, Plan: plan, Measurement: m, Config: cfg, rule: r, findings: &out})
		}
	}
	out = suppress(p, rules, cfg, out, ms)
	for i := range out {
		if out[i].Suppressed != nil {
			// The user chose to keep what the finding is about: nothing to fix.
			out[i].Fix, out[i].NoFix = nil, ""
		}
	}
	SortFindings(out)
	return out
}

// SortFindings orders findings by file, line, column and rule.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Rule < b.Rule
	})
}

// FindRule returns the rule of rules with that ID, in any case, or nil.
func FindRule(rules []Rule, id string) *Rule {
	id = strings.ToUpper(id)
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i]
		}
	}
	return nil
}
