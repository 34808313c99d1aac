package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// baselineVersion is the version of the baseline file's shape.
const baselineVersion = 1

// Baseline is the findings a repository accepted when it adopted the doctor: later runs
// given it report only the others. Findings are matched by their SARIF partial
// fingerprint, which names the rule, the service, the file (relative to the source root)
// and the message but not the line, so a finding stays matched when lines move.
type Baseline struct {
	Version  int             `json:"version"`
	Tool     string          `json:"tool"`
	Findings []BaselineEntry `json:"findings"`
}

// BaselineEntry is one accepted finding: its fingerprint, and what it was, for people
// reviewing the file.
type BaselineEntry struct {
	Fingerprint string `json:"fingerprint"`
	Rule        string `json:"rule"`
	Service     string `json:"service,omitempty"`
	File        string `json:"file"`
	Line        int    `json:"line"`
	Message     string `json:"message"`
}

// root is the folder files are named relative to in SARIF and the baseline: the report's
// source root, else the working folder.
func (r *Report) root() (string, error) {
	if r.SourceRoot != "" {
		return r.SourceRoot, nil
	}
	return os.Getwd()
}

// fingerprints returns every finding's fingerprint, per project and in the order of its
// Findings, unique within the report.
func (r *Report) fingerprints(root string) map[*Project][]string {
	out := map[*Project][]string{}
	fps := fingerprints{}
	for _, p := range r.Projects {
		for _, f := range p.Findings {
			out[p] = append(out[p], fps.unique(fingerprint(rootRelative(f, root))))
		}
	}
	return out
}

// BaselineFile writes the findings that are reported (not suppressed) as a baseline file.
func BaselineFile(w io.Writer, r *Report, _ Options) error {
	root, err := r.root()
	if err != nil {
		return err
	}
	b := Baseline{Version: baselineVersion, Tool: "shmdoctor", Findings: []BaselineEntry{}}
	fps := r.fingerprints(root)
	for _, p := range r.Projects {
		for i, f := range p.Findings {
			if f.Suppressed != nil {
				continue
			}
			rel := rootRelative(f, root)
			b.Findings = append(b.Findings, BaselineEntry{Fingerprint: fps[p][i], Rule: f.Rule, Service: f.Service, File: rel.File, Line: f.Line, Message: f.Message})
		}
	}
	return encodeJSON(w, b, "  ")
}

// ParseBaseline reads a baseline file's bytes; name is the file, for errors.
func ParseBaseline(data []byte, name string) (*Baseline, error) {
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: not a shmdoctor baseline: %w", name, err)
	}
	if b.Tool != "shmdoctor" || b.Version != baselineVersion {
		return nil, fmt.Errorf("%s: not a shmdoctor baseline of version %d (shmdoctor baseline writes one)", name, baselineVersion)
	}
	return &b, nil
}

// ApplyBaseline suppresses every finding the baseline holds (kind baseline, located at the
// baseline file), so that only new findings are reported and count for --fail-on; it
// returns how many it suppressed. Each baseline entry matches one finding.
func (r *Report) ApplyBaseline(b *Baseline, file string) (int, error) {
	root, err := r.root()
	if err != nil {
		return 0, err
	}
	left := map[string]int{}
	for _, e := range b.Findings {
		left[e.Fingerprint]++
	}
	n := 0
	fps := r.fingerprints(root)
	for _, p := range r.Projects {
		for i := range p.Findings {
			f := &p.Findings[i]
			if fp := fps[p][i]; f.Suppressed == nil && left[fp] > 0 {
				left[fp]--
				f.Suppressed = &analyze.Suppression{Kind: analyze.SuppressBaseline, Reason: "accepted in the baseline", Pos: analyze.Pos{File: file}}
				n++
			}
		}
	}
	return n, nil
}
