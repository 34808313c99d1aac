package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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
	var b bytes.Buffer
	if err := Formats[format](&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
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
	root := moduleRoot(t)
	schemaPath := filepath.Join(root, "..", "shared", "schemas", "sarif-schema-2.1.0.json")
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatalf("the OASIS schema must be beside the repository (../shared/schemas): %v", err)
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
	for name, rep := range map[string]*Report{"demo": demoReport(t), "broken": brokenReport(), "empty": {}} {
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
