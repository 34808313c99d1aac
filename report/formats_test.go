package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// demoReport checks testdata/demo from the module root, so that files are named as a user
// running there sees them.
func demoReport(t *testing.T) *Report {
	t.Helper()
	root := moduleRoot(t)
	t.Chdir(root)
	rep := &Report{Version: "v0.0.0-test"}
	for _, p := range analyze.Load(context.Background(), analyze.Options{Paths: []string{"testdata/demo"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading the demo: %v", p.Errors[0].Msg)
		}
		rep.Projects = append(rep.Projects, &Project{Project: p, Findings: analyze.Check(p, analyze.Config{})})
	}
	return rep
}

// suppressedReport checks the SHM090 fixtures, whose findings are suppressed in every way
// (comments, x-shmdoctor.ignore, annotations), with a config file entry on top.
func suppressedReport(t *testing.T) *Report {
	t.Helper()
	t.Chdir(moduleRoot(t))
	cfg := analyze.Config{Ignore: []analyze.ConfigIgnore{{
		Rules: []string{"SHM001"}, Reason: "shm_size is kept for podman users",
		Pos: analyze.Pos{File: ".shmdoctor.yaml", Line: 3, Column: 5},
	}}}
	rep := &Report{Version: "v0.0.0-test", Config: ".shmdoctor.yaml"}
	for _, dir := range []string{"testdata/rules/SHM090", "testdata/k8s/SHM090"} {
		for _, p := range analyze.Load(context.Background(), analyze.Options{Paths: []string{dir}}) {
			if len(p.Errors) > 0 {
				t.Fatalf("loading %s: %v", dir, p.Errors[0])
			}
			rep.Projects = append(rep.Projects, &Project{Project: p, Findings: analyze.Check(p, cfg)})
		}
	}
	return rep
}

// brokenReport has a load error and a finding whose strings need escaping in every format.
func brokenReport() *Report {
	return &Report{Version: "v0.0.0-test", Projects: []*Project{
		{Project: &analyze.Project{Name: "broken", Errors: []*analyze.LoadError{
			{Pos: analyze.Pos{File: "deploy/compose.yaml", Line: 3, Column: 7}, Msg: "parsing: 100% wrong,\nreally"},
		}}},
		{Project: &analyze.Project{Name: "odd"}, Findings: []analyze.Finding{{
			Rule: "SHM001", Name: "shm-size-ignored-ipc-host", Severity: analyze.Warning, Service: "a",
			Pos:     analyze.Pos{File: "odd dir/a,b:c.yaml"},
			Message: "shm_size 1 GiB is ignored: ipc is host", Remediation: "Remove shm_size.",
			Related: []analyze.Pos{{File: "odd dir/a,b:c.yaml", Line: 4, Column: 5}},
		}}},
	}}
}

func render(t *testing.T, format string, r *Report) string {
	t.Helper()
	return renderWith(t, format, r, Options{})
}

func renderWith(t *testing.T, format string, r *Report, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Formats[format](&b, r, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// golden compares got with testdata/name; the module root, which SARIF's %SRCROOT% names,
// is written as file:///SRCROOT/ so that the file holds for every clone.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, `"`+fileURI(moduleRoot(t))+`/"`, `"file:///SRCROOT/"`)
	testutil.Golden(t, filepath.Join(moduleRoot(t), "report", "testdata", name), got, *update, "go test ./report -update")
}

func TestFormatGoldens(t *testing.T) {
	demo, broken := demoReport(t), brokenReport()
	for _, c := range []struct{ format, ext string }{{"sarif", ".sarif"}, {"github", ".github.txt"}, {"codeclimate", ".codeclimate.json"}} {
		t.Run(c.format, func(t *testing.T) {
			golden(t, "demo"+c.ext, render(t, c.format, demo))
			golden(t, "broken"+c.ext, render(t, c.format, broken))
		})
	}
}

func TestSARIFValidates(t *testing.T) {
	// The OASIS SARIF 2.1.0 schema (errata 01), from oasis-tcs/sarif-spec at commit
	// e0583813964ec43cea53b6b531b402866095ed1f, file sarif-2.1/schema/sarif-schema-2.1.0.json.
	f, err := os.Open(filepath.Join("testdata", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif-schema-2.1.0.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range map[string]*Report{"demo": demoReport(t), "broken": brokenReport(), "empty": {}, "suppressed": suppressedReport(t)} {
		t.Run(name, func(t *testing.T) {
			out := render(t, "sarif", rep)
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("%s SARIF does not validate: %v", name, err)
			}
		})
	}
}

func TestSARIFContent(t *testing.T) {
	type sarifLog struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name, Version string
					Rules         []struct {
						ID      string
						HelpURI string
						Help    struct{ Markdown string }
					}
				}
			}
			Invocations []struct {
				ExecutionSuccessful        bool
				ToolExecutionNotifications []json.RawMessage
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Locations []struct {
					PhysicalLocation struct{ Region map[string]int }
				}
				RelatedLocations []json.RawMessage
			}
		}
	}
	var log sarifLog
	if err := json.Unmarshal([]byte(render(t, "sarif", demoReport(t))), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "shmdoctor" || run.Tool.Driver.Version != "v0.0.0-test" || len(run.Tool.Driver.Rules) != len(analyze.Rules) {
		t.Fatalf("driver: %+v", run.Tool.Driver)
	}
	if !run.Invocations[0].ExecutionSuccessful {
		t.Error("the demo loads: the invocation must be successful")
	}
	related := 0
	for _, res := range run.Results {
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s points at rule %d", res.RuleID, res.RuleIndex)
		}
		if res.Locations[0].PhysicalLocation.Region["startLine"] < 1 {
			t.Errorf("result %s has no start line", res.RuleID)
		}
		related += len(res.RelatedLocations)
	}
	if len(run.Results) == 0 || related == 0 {
		t.Errorf("%d results, %d related locations: the demo has both", len(run.Results), related)
	}

	log = sarifLog{}
	if err := json.Unmarshal([]byte(render(t, "sarif", brokenReport())), &log); err != nil {
		t.Fatal(err)
	}
	inv := log.Runs[0].Invocations[0]
	if inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != 1 {
		t.Errorf("a load error must fail the invocation with a notification: %+v", inv)
	}
	if got := log.Runs[0].Results[0].Locations[0].PhysicalLocation.Region; got["startLine"] != 1 || got["startColumn"] != 0 {
		t.Errorf("a finding without a line starts at line 1, no column: %v", got)
	}
}

func TestFingerprintStable(t *testing.T) {
	f := analyze.Finding{Rule: "SHM001", Service: "a", Pos: analyze.Pos{File: "c.yaml", Line: 3}, Message: "m"}
	g := f
	g.Line, g.Column = 30, 4
	if fingerprint(f) != fingerprint(g) {
		t.Error("a finding moved by other lines keeps its fingerprint")
	}
	g.Service = "b"
	if fingerprint(f) == fingerprint(g) {
		t.Error("another service is another finding")
	}
}

func TestGitHubEscaping(t *testing.T) {
	for in, want := range map[string]string{"a%b\r\nc": "a%25b%0D%0Ac", "x:y,z": "x:y,z"} {
		if got := githubData(in); got != want {
			t.Errorf("githubData(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := githubProperty("a,b:c%\n"), "a%2Cb%3Ac%25%0A"; got != want {
		t.Errorf("githubProperty = %q, want %q", got, want)
	}
}

// TestSuppressedFindings: text and JSON count suppressed findings and list them only when
// asked, SARIF records every one with its suppression, the CI annotation formats never
// show them.
func TestSuppressedFindings(t *testing.T) {
	rep := suppressedReport(t)
	sum := rep.Summarize()
	all := 0
	for _, p := range rep.Projects {
		all += len(p.Findings)
	}
	if sum.Suppressed < 10 || sum.Reported() == 0 || sum.Suppressed+sum.Reported() != all {
		t.Fatalf("summary %+v of %d findings", sum, all)
	}
	if rep.Worst() != analyze.Info {
		t.Errorf("worst %v: the errors and warnings are all suppressed, the SHM090 infos are not", rep.Worst())
	}

	text := renderWith(t, "text", rep, Options{Width: 1000}) // one line for the summary
	if strings.Contains(text, "suppressed by") || !strings.Contains(text, fmt.Sprintf("; %d suppressed (--show-suppressed lists them)", sum.Suppressed)) {
		t.Errorf("text without --show-suppressed:\n%s", text)
	}
	shown := renderWith(t, "text", rep, Options{ShowSuppressed: true})
	if got := strings.Count(shown, "suppressed by "); got != sum.Suppressed {
		t.Errorf("--show-suppressed lists %d, want %d", got, sum.Suppressed)
	}
	golden(t, "suppressed.txt", shown)

	type jsonDoc struct {
		Projects []struct{ Findings []map[string]any }
		Summary  map[string]int
		Config   string
	}
	count := func(o Options) (findings, suppressed int, doc jsonDoc) {
		if err := json.Unmarshal([]byte(renderWith(t, "json", rep, o)), &doc); err != nil {
			t.Fatal(err)
		}
		for _, p := range doc.Projects {
			for _, f := range p.Findings {
				findings++
				if _, ok := f["suppressed"]; ok {
					suppressed++
				}
			}
		}
		return findings, suppressed, doc
	}
	n, sup, doc := count(Options{})
	if n != sum.Reported() || sup != 0 || doc.Summary["suppressed"] != sum.Suppressed || doc.Config != ".shmdoctor.yaml" {
		t.Errorf("json: %d findings, %d suppressed, summary %v, config %q", n, sup, doc.Summary, doc.Config)
	}
	if n, sup, _ = count(Options{ShowSuppressed: true}); n != all || sup != sum.Suppressed {
		t.Errorf("json --show-suppressed: %d findings, %d suppressed", n, sup)
	}

	var log struct {
		Runs []struct {
			Results []struct {
				RuleID       string
				Suppressions []struct {
					Kind          string
					Justification string
					Location      struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string }
							Region           struct{ StartLine int }
						}
					}
				}
			}
		}
	}
	sarif := render(t, "sarif", rep)
	if err := json.Unmarshal([]byte(sarif), &log); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	results := log.Runs[0].Results
	for _, res := range results {
		for _, s := range res.Suppressions {
			kinds[s.Kind]++
			if s.Location.PhysicalLocation.Region.StartLine == 0 {
				t.Errorf("%s: suppression without a location", res.RuleID)
			}
			if s.Kind == "external" && (s.Justification != "shm_size is kept for podman users" || s.Location.PhysicalLocation.ArtifactLocation.URI != ".shmdoctor.yaml") {
				t.Errorf("config suppression: %+v", s)
			}
		}
	}
	if len(results) != all || kinds["inSource"]+kinds["external"] != sum.Suppressed || kinds["external"] == 0 {
		t.Errorf("sarif: %d results of %d, suppressions %v", len(results), all, kinds)
	}
	if !strings.Contains(sarif, `"justification": "the exporter reads host metrics"`) {
		t.Error("a comment's reason is not the justification")
	}
	golden(t, "suppressed.sarif", sarif)

	if got := strings.Count(render(t, "github", rep), "\n"); got != sum.Reported() {
		t.Errorf("github: %d commands, want %d", got, sum.Reported())
	}
	var issues []json.RawMessage
	if err := json.Unmarshal([]byte(render(t, "codeclimate", rep)), &issues); err != nil || len(issues) != sum.Reported() {
		t.Errorf("codeclimate: %d issues (%v), want %d", len(issues), err, sum.Reported())
	}
}
