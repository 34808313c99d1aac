package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
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
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{"testdata/demo"}}) {
		if len(p.Errors) > 0 {
			t.Fatalf("loading the demo: %v", p.Errors[0].Msg)
		}
		rep.Projects = append(rep.Projects, &Project{Project: p, Findings: rules.Check(p, analyze.Config{})})
	}
	return rep
}

// probedReport is the demo with the measurements a probe of it reports on a real engine
// (Docker 20.10, cgroup v1): data, so that goldens hold the same numbers on every machine;
// the engine tests in cmd/shmdoctor run the real probe. The trainer's OOM kill, the
// evaluator's refused donor and the scraper's ENOSPC reproduce static findings; the
// gateway's daemon default is what no rule predicted.
func probedReport(t *testing.T) *Report {
	t.Helper()
	rep := demoReport(t)
	size := func(n int64) *int64 { return &n }
	ms := map[string]*analyze.Measurement{
		"trainer":   {Exists: true, MeasuredBytes: size(2 << 30), FreeBytes: size(2 << 30), Write: &analyze.Write{Mode: "write", TargetBytes: 2<<30 + 256<<20, WrittenBytes: 1536 << 20, Outcome: analyze.WriteOOMKilled, GBps: 0.6}},
		"scraper":   {Exists: true, MeasuredBytes: size(64 << 20), FreeBytes: size(64 << 20), Write: &analyze.Write{Mode: "write", TargetBytes: 2 << 30, WrittenBytes: 64 << 20, Outcome: analyze.WriteENOSPC, GBps: 0.4}},
		"evaluator": {CreateError: "can't join IPC of container trainer: non-shareable IPC (hint: use IpcMode:shareable for the donor container)"},
		"gateway":   {Exists: true, MeasuredBytes: size(128 << 20), FreeBytes: size(128 << 20), Write: &analyze.Write{Mode: "write+mmap", TargetBytes: 128 << 20, WrittenBytes: 128 << 20, Outcome: analyze.WriteOK, GBps: 0.4}},
	}
	for _, p := range rep.Projects {
		p.Measurements = ms
		p.Findings = analyze.WithEvidence(rules.All, p.Project, p.Findings, rules.CheckMeasurements(p.Project, analyze.Config{}, ms), ms)
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
		for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{dir}}) {
			if len(p.Errors) > 0 {
				t.Fatalf("loading %s: %v", dir, p.Errors[0])
			}
			rep.Projects = append(rep.Projects, &Project{Project: p, Findings: rules.Check(p, cfg)})
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
	for _, c := range []struct{ format, ext string }{{"sarif", ".sarif"}, {"github", ".github.txt"}, {"codeclimate", ".codeclimate.json"}, {"compact", ".compact.txt"}} {
		t.Run(c.format, func(t *testing.T) {
			golden(t, "demo"+c.ext, render(t, c.format, demo))
			golden(t, "broken"+c.ext, render(t, c.format, broken))
		})
	}
	t.Run("junit", func(t *testing.T) {
		o := Options{FailOn: analyze.Warning}
		golden(t, "demo.junit.xml", renderWith(t, "junit", demo, o))
		golden(t, "broken.junit.xml", renderWith(t, "junit", broken, o))
		golden(t, "demo-probed.junit.xml", renderWith(t, "junit", probedReport(t), o))
		golden(t, "suppressed.junit.xml", renderWith(t, "junit", suppressedReport(t), o))
	})
	probed := probedReport(t)
	for _, c := range []struct{ format, ext string }{{"text", ".txt"}, {"json", ".json"}, {"sarif", ".sarif"}, {"github", ".github.txt"}, {"codeclimate", ".codeclimate.json"}, {"compact", ".compact.txt"}} {
		t.Run("probed "+c.format, func(t *testing.T) {
			golden(t, "demo-probed"+c.ext, render(t, c.format, probed))
		})
	}
}

// TestEvidenceCountsOnce: a problem the static model predicted and the probe reproduced is
// one finding in every format, with the measurement beside it and the same severity; the
// summary, --fail-on and each format count it once.
func TestEvidenceCountsOnce(t *testing.T) {
	static, probed := demoReport(t), probedReport(t)
	s, p := static.Summarize(), probed.Summarize()
	// SHM010 on the scraper (info: Chromium of a size its parameters do not give) stays an
	// info once reproduced: the probe filled 2 GiB, a target the doctor chose, and its ENOSPC
	// measures the prediction. SHM201 (gateway) is the one new finding, a warning.
	if p.Error != s.Error || p.Warning != s.Warning+1 || p.Info != s.Info {
		t.Errorf("summary static %+v, probed %+v: each reproduced problem must count once, at one severity", s, p)
	}
	sev := map[string]analyze.Severity{}
	for _, f := range static.Projects[0].Findings {
		sev[f.Service+" "+f.Rule] = f.Severity
	}
	for _, f := range probed.Projects[0].Findings {
		if f.Evidence != nil && f.Severity != sev[f.Service+" "+f.Rule] {
			t.Errorf("%s %s: %v without the probe, %v with its evidence", f.Service, f.Rule, sev[f.Service+" "+f.Rule], f.Severity)
		}
	}
	n := p.Reported()
	text := render(t, "text", probed)
	if got := strings.Count(text, "reproduced: "); got != 3 {
		t.Errorf("text: %d reproduced lines, want 3:\n%s", got, text)
	}
	if got := strings.Count(render(t, "github", probed), "\n"); got != n {
		t.Errorf("github: %d commands for %d findings", got, n)
	}
	compact := render(t, "compact", probed)
	if got := strings.Count(compact, "\n"); got != n || strings.Count(compact, "(reproduced: ") != 3 {
		t.Errorf("compact: %d lines for %d findings, want one each, 3 reproduced:\n%s", got, n, compact)
	}
	var issues []json.RawMessage
	if err := json.Unmarshal([]byte(render(t, "codeclimate", probed)), &issues); err != nil || len(issues) != n {
		t.Errorf("codeclimate: %d issues (%v), want %d", len(issues), err, n)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID     string
				Properties map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(render(t, "sarif", probed)), &log); err != nil {
		t.Fatal(err)
	}
	evidence := 0
	for _, r := range log.Runs[0].Results {
		if r.RuleID == "SHM202" || r.RuleID == "SHM204" || r.RuleID == "SHM205" {
			t.Errorf("sarif: %s reported beside the finding it reproduces", r.RuleID)
		}
		if _, ok := r.Properties["shmdoctor/evidence"]; ok {
			evidence++
		}
	}
	if len(log.Runs[0].Results) != n || evidence != 3 {
		t.Errorf("sarif: %d results (want %d), %d with evidence (want 3)", len(log.Runs[0].Results), n, evidence)
	}
	var doc struct {
		Projects []struct {
			Findings []struct {
				Rule     string
				Evidence *struct{ Rule, Message string }
			}
		}
	}
	if err := json.Unmarshal([]byte(render(t, "json", probed)), &doc); err != nil {
		t.Fatal(err)
	}
	evidence = 0
	for _, f := range doc.Projects[0].Findings {
		if f.Evidence != nil && f.Evidence.Message != "" {
			evidence++
		}
	}
	if len(doc.Projects[0].Findings) != n || evidence != 3 {
		t.Errorf("json: %d findings (want %d), %d with evidence", len(doc.Projects[0].Findings), n, evidence)
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
	for name, rep := range map[string]*Report{"demo": demoReport(t), "broken": brokenReport(), "empty": {}, "suppressed": suppressedReport(t), "probed": probedReport(t), "hostile": hostileReport(t, true)} {
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
	if run.Tool.Driver.Name != "shmdoctor" || run.Tool.Driver.Version != "v0.0.0-test" || len(run.Tool.Driver.Rules) != len(rules.All) {
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
	interrupted := demoReport(t)
	interrupted.Interrupted, interrupted.ProbeNote = true, "interrupted (Ctrl-C): the report holds what was found before it"
	var ilog sarifLog
	if err := json.Unmarshal([]byte(render(t, "sarif", interrupted)), &ilog); err != nil {
		t.Fatal(err)
	}
	if inv := ilog.Runs[0].Invocations[0]; inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != 1 {
		t.Errorf("an interrupted run must fail the invocation with a notification: %+v", inv)
	}
	if got := log.Runs[0].Results[0].Locations[0].PhysicalLocation.Region; got["startLine"] != 1 || got["startColumn"] != 0 {
		t.Errorf("a finding without a line starts at line 1, no column: %v", got)
	}
}

// junitDoc is the common JUnit XML schema's shape (the one Jenkins, GitLab and Azure
// Pipelines read): testsuites of testsuite of testcase, each testcase with at most one of
// failure, error and skipped.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Time     string `xml:"time,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Line      int    `xml:"line,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped   *struct{} `xml:"skipped"`
			SystemOut string    `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestJUnitShape parses the JUnit reports with encoding/xml: every count matches the test
// cases, a finding fails its test case exactly when it is at or above --fail-on, a load
// error errs, a suppressed finding is skipped and a service without findings passes.
func TestJUnitShape(t *testing.T) {
	for name, c := range map[string]struct {
		rep    *Report
		failOn analyze.Severity
	}{
		"demo": {demoReport(t), analyze.Warning}, "demo error": {demoReport(t), analyze.Error}, "demo never": {demoReport(t), 0},
		"probed": {probedReport(t), analyze.Error}, "broken": {brokenReport(), analyze.Warning}, "suppressed": {suppressedReport(t), analyze.Info},
	} {
		t.Run(name, func(t *testing.T) {
			out := renderWith(t, "junit", c.rep, Options{FailOn: c.failOn})
			if !strings.HasPrefix(out, xml.Header) {
				t.Errorf("no XML declaration: %.60q", out)
			}
			var doc junitDoc
			if err := xml.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			sum := c.rep.Summarize()
			wantFail := 0
			for _, p := range c.rep.Projects {
				for _, f := range p.Findings {
					if f.Suppressed == nil && c.failOn != 0 && f.Severity >= c.failOn {
						wantFail++
					}
				}
			}
			var tests, failures, errs, skipped int
			if len(doc.Suites) != len(c.rep.Projects) {
				t.Errorf("%d testsuites for %d projects", len(doc.Suites), len(c.rep.Projects))
			}
			for _, s := range doc.Suites {
				f, e, k := 0, 0, 0
				for _, tc := range s.Cases {
					if tc.Name == "" || tc.Classname == "" {
						t.Errorf("%s: test case without a name or class: %+v", s.Name, tc)
					}
					n := 0
					if tc.Failure != nil {
						n, f = n+1, f+1
						if tc.Failure.Message == "" || !strings.Contains(tc.Failure.Text, "fix: ") || !strings.Contains(tc.Failure.Text, "docs/rules/SHM") {
							t.Errorf("%s: failure %+v", tc.Name, tc.Failure)
						}
					}
					if tc.Error != nil {
						n, e = n+1, e+1
					}
					if tc.Skipped != nil {
						n, k = n+1, k+1
					}
					if n > 1 {
						t.Errorf("%s: %d outcomes", tc.Name, n)
					}
				}
				if s.Name == "" || s.Time == "" || s.Tests != len(s.Cases) || s.Failures != f || s.Errors != e || s.Skipped != k {
					t.Errorf("suite %s says %d/%d/%d/%d, has %d cases, %d failed, %d errors, %d skipped", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), f, e, k)
				}
				tests, failures, errs, skipped = tests+s.Tests, failures+f, errs+e, skipped+k
			}
			if doc.Tests != tests || doc.Failures != failures || doc.Errors != errs || doc.Skipped != skipped {
				t.Errorf("testsuites says %d/%d/%d/%d, suites add up to %d/%d/%d/%d", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, tests, failures, errs, skipped)
			}
			if failures != wantFail || errs != c.rep.Errors() || skipped != sum.Suppressed {
				t.Errorf("%d failures (want %d), %d errors (want %d), %d skipped (want %d)", failures, wantFail, errs, c.rep.Errors(), skipped, sum.Suppressed)
			}
		})
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
	// A probe finding's message holds what was measured, which varies between runs.
	p := analyze.Finding{Rule: "SHM204", Service: "a", Pos: analyze.Pos{File: "c.yaml", Line: 3}, Message: "the container was oom-killed after writing 1.4 GiB of 2 GiB to /dev/shm"}
	q := p
	q.Message = "the container was oom-killed after writing 1.5 GiB of 2 GiB to /dev/shm"
	if fingerprint(p) != fingerprint(q) {
		t.Error("a probe finding changes fingerprint with the bytes the writer reached")
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
