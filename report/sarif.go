package report

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

const (
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	toolInfoURI  = "https://github.com/shmdoctor/shmdoctor"
	ruleDocsURI  = "https://github.com/shmdoctor/shmdoctor/blob/main/docs/rules/"
	sarifFPField = "shmdoctor/v1"
	// srcRoot is the URI base every artifact location is relative to: the source root.
	srcRoot = "%SRCROOT%"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds,omitempty"`
	Invocations        []sarifInvocation        `json:"invocations"`
	Results            []sarifResult            `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name            string      `json:"name"`
	Version         string      `json:"version,omitempty"`
	SemanticVersion string      `json:"semanticVersion,omitempty"`
	InformationURI  string      `json:"informationUri"`
	Rules           []sarifRule `json:"rules" visible:"own"` // the registry's own documentation
}

type sarifRule struct {
	ID                   string           `json:"id"`
	Name                 string           `json:"name"`
	ShortDescription     sarifText        `json:"shortDescription"`
	FullDescription      sarifText        `json:"fullDescription"`
	Help                 sarifHelp        `json:"help"`
	HelpURI              string           `json:"helpUri"`
	DefaultConfiguration sarifRuleConfig  `json:"defaultConfiguration"`
	Properties           *sarifProperties `json:"properties,omitempty"`
}

type sarifProperties struct {
	Tags []string `json:"tags,omitempty"`
}

type sarifText struct {
	Text string `json:"text" visible:"fix"` // a message may end with a remediation
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifResult struct {
	RuleID              string             `json:"ruleId"`
	RuleIndex           int                `json:"ruleIndex"`
	Level               string             `json:"level"`
	Message             sarifText          `json:"message"`
	Locations           []sarifLocation    `json:"locations"`
	RelatedLocations    []sarifLocation    `json:"relatedLocations,omitempty"`
	PartialFingerprints map[string]string  `json:"partialFingerprints"`
	Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
	Properties          *sarifResultProps  `json:"properties,omitempty"`
}

// sarifResultProps carries what SARIF has no property of its own for: the measurement that
// reproduced the finding, and the projects it affects.
type sarifResultProps struct {
	Evidence *analyze.Evidence `json:"shmdoctor/evidence,omitempty"`
	Projects []string          `json:"shmdoctor/projects,omitempty"`
}

// sarifSuppression records why a result is not reported: kind inSource for a comment,
// x-shmdoctor.ignore or an annotation, external for the config file.
type sarifSuppression struct {
	Kind          string         `json:"kind"`
	Justification string         `json:"justification,omitempty"`
	Location      *sarifLocation `json:"location,omitempty"`
	Properties    map[string]any `json:"properties,omitempty"`
}

type sarifLocation struct {
	ID               *int                  `json:"id,omitempty"`
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

var sarifLevels = map[analyze.Severity]string{analyze.Error: "error", analyze.Warning: "warning", analyze.Info: "note"}

// SARIF writes the report as a SARIF 2.1.0 log with one run, as GitHub code scanning takes
// it: every rule of the registry with its documentation, one result per finding (a
// suppressed one with its suppression), and load errors as tool execution notifications
// of a failed invocation. Files are named relative to %SRCROOT%, the report's source root
// (the working folder when it has none), so that the log is the same wherever the doctor
// ran from.
func SARIF(w io.Writer, r *Report, _ Options) error {
	root, err := r.root()
	if err != nil {
		return err
	}
	fps := r.fingerprints(root)
	sarifLoc := func(p analyze.Pos) sarifLocation { return sarifLocAt(p, root) }
	driver := sarifDriver{Name: "shmdoctor", Version: r.Version, SemanticVersion: semanticVersion(r.Version), InformationURI: toolInfoURI, Rules: []sarifRule{}}
	index := map[string]int{}
	for i := range rules.All {
		rule := &rules.All[i]
		index[rule.ID] = i
		doc := rule.Markdown()
		sr := sarifRule{
			ID: rule.ID, Name: rule.Name,
			ShortDescription:     sarifText{rule.Title},
			FullDescription:      sarifText{rule.Doc.Rationale},
			Help:                 sarifHelp{Text: doc, Markdown: doc},
			HelpURI:              RuleURL(rule.ID),
			DefaultConfiguration: sarifRuleConfig{sarifLevels[rule.Severity]},
		}
		if rule.Kubernetes {
			sr.Properties = &sarifProperties{Tags: []string{"kubernetes"}}
		} else {
			sr.Properties = &sarifProperties{Tags: []string{"compose"}}
		}
		driver.Rules = append(driver.Rules, sr)
	}
	rootURI := fileURI(root)
	if !strings.HasSuffix(rootURI, "/") {
		rootURI += "/" // §3.14.14: a base URI ends with a slash
	}
	run := sarifRun{Tool: sarifTool{driver}, OriginalURIBaseIDs: map[string]sarifArtifact{srcRoot: {URI: rootURI}}, Results: []sarifResult{}}
	inv := sarifInvocation{ExecutionSuccessful: r.Errors() == 0 && !r.Interrupted}
	if r.Interrupted {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "warning", Message: sarifText{"probe " + Visible(r.ProbeNote)}})
	}
	for _, p := range r.Projects {
		for _, e := range p.Errors {
			n := sarifNotification{Level: "error", Message: sarifText{Visible(e.Msg)}}
			if e.File != "" {
				n.Locations = []sarifLocation{sarifLoc(e.Pos)}
			}
			inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, n)
		}
		for fi, f := range p.Findings {
			res := sarifResult{
				RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevels[f.Severity],
				Message:             sarifText{Visible(f.Message) + ". " + visibleFix(f.Remediation) + reproducedSentence(f)},
				Locations:           []sarifLocation{sarifLoc(f.Pos)},
				PartialFingerprints: map[string]string{sarifFPField: fps[p][fi]},
			}
			if f.Evidence != nil || len(f.Projects) > 1 {
				res.Properties = &sarifResultProps{Evidence: f.Evidence}
				if len(f.Projects) > 1 {
					res.Properties.Projects = f.Projects
				}
			}
			for i, rel := range f.Related {
				l := sarifLoc(rel)
				l.ID = &i
				res.RelatedLocations = append(res.RelatedLocations, l)
			}
			if s := f.Suppressed; s != nil {
				sup := sarifSuppression{Kind: "external", Justification: s.Reason, Properties: map[string]any{"shmdoctor/kind": s.Kind}}
				if s.InSource() {
					sup.Kind = "inSource"
				}
				if s.File != "" {
					l := sarifLoc(s.Pos)
					sup.Location = &l
				}
				res.Suppressions = []sarifSuppression{sup}
			}
			run.Results = append(run.Results, res)
		}
	}
	run.Invocations = []sarifInvocation{inv}
	return encodeJSON(w, sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}, "  ")
}

// reproducedSentence is what the probe reproduced of a finding, as a sentence to append to
// its message where a format has no place of its own for it.
func reproducedSentence(f analyze.Finding) string {
	if f.Evidence == nil {
		return ""
	}
	return " Reproduced by the probe: " + Visible(f.Evidence.Message) + "."
}

// semverPattern is Semantic Versioning 2.0.0's own regular expression.
var semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// semanticVersion is a version as SARIF's semanticVersion wants it, without the v, or ""
// when it is no semantic version (a build from an untagged commit).
func semanticVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if !semverPattern.MatchString(v) {
		return ""
	}
	return v
}

func sarifLocAt(p analyze.Pos, root string) sarifLocation {
	return sarifLocation{PhysicalLocation: sarifPhysicalLocation{
		ArtifactLocation: artifactLocation(p.File, root),
		Region:           sarifRegion{StartLine: max(p.Line, 1), StartColumn: p.Column},
	}}
}

// relativeTo is file (relative to the working folder, or absolute) relative to root with
// forward slashes, or false when it lies outside root.
func relativeTo(file, root string) (string, bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// artifactLocation is a file as SARIF locates it: a relative reference resolved against
// %SRCROOT% when the file is under the source root (code scanning resolves it against the
// repository), an absolute file URI with no base otherwise. SARIF 2.1.0 does not forbid ".."
// segments, but they are unsafe (oasis-tcs/sarif-spec#461: a symbolic link on the way makes
// them point elsewhere) and code scanning shows no file outside the repository anyway, so a
// file outside the root keeps its absolute URI, which needs no uriBaseId (§3.4.4).
func artifactLocation(file, root string) sarifArtifact {
	if rel, ok := relativeTo(file, root); ok {
		return sarifArtifact{URI: (&url.URL{Path: rel}).String(), URIBaseID: srcRoot}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return sarifArtifact{URI: fileURI(abs)}
}

// fileURI is an absolute path as a file URI.
func fileURI(abs string) string {
	s := filepath.ToSlash(abs)
	if !strings.HasPrefix(s, "/") {
		s = "/" + s // a Windows drive
	}
	return (&url.URL{Scheme: "file", Path: s}).String()
}

// rootRelative is a finding with its file named relative to the source root, so that its
// fingerprint does not depend on the folder the doctor ran from.
func rootRelative(f analyze.Finding, root string) analyze.Finding {
	if rel, ok := relativeTo(f.File, root); ok {
		f.File = rel
	}
	return f
}

// fingerprints makes fingerprints unique within one report: two results that only their
// line tells apart (the same rule, service and message twice in a file) get the first's
// fingerprint and that fingerprint hashed with their rank, so that each keeps its own
// identity across runs while the lines move.
type fingerprints map[string]int

func (seen fingerprints) unique(fp string) string {
	n := seen[fp]
	seen[fp]++
	if n == 0 {
		return fp
	}
	h := sha256.Sum256([]byte(fp + "#" + strconv.Itoa(n)))
	return hex.EncodeToString(h[:])
}

// fingerprint identifies a finding across runs: it does not move when lines are inserted
// above the key, nor when a measurement varies.
func fingerprint(f analyze.Finding) string {
	msg := f.Message
	if r := rules.ByID(f.Rule); r != nil && r.Probe {
		// A measurement's message holds what was measured (how far an OOM-killed writer
		// got), which varies from run to run; a probe rule reports once per service.
		msg = ""
	}
	h := sha256.New()
	for _, s := range []string{f.Rule, f.Service, filepath.ToSlash(f.File), msg} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
