package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestSemanticVersion: SARIF's semanticVersion is set only from a semantic version, such as
// git describe gives on a tagged history; an untagged commit or "dev" leaves it out.
func TestSemanticVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":                   "1.2.3",
		"v0.1.0-3-gabc1234-dirty":  "0.1.0-3-gabc1234-dirty",
		"v2.0.0-rc.1+build.5":      "2.0.0-rc.1+build.5",
		"v0.0.0-20250102-abcdef01": "0.0.0-20250102-abcdef01",
		"07ccb18":                  "",
		"07ccb18-dirty":            "",
		"dev":                      "",
		"v1.2":                     "",
		"v01.2.3":                  "",
		"":                         "",
	} {
		if got := semanticVersion(v); got != want {
			t.Errorf("semanticVersion(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestSARIFSourceRoot: a file is named relative to %SRCROOT% however it was given (relative
// to a working folder below or beside the root, or absolute), the root's own URI ends with
// a slash, and a file outside the root keeps its absolute file URI with no base.
func TestSARIFSourceRoot(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "deploy")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	outside := filepath.Join(filepath.Dir(root), "elsewhere", "compose.yaml")
	for file, want := range map[string]sarifArtifact{
		"compose.yaml":                         {URI: "deploy/compose.yaml", URIBaseID: srcRoot},
		"../stack one/compose.yaml":            {URI: "stack%20one/compose.yaml", URIBaseID: srcRoot},
		filepath.Join(root, "k8s", "pod.yaml"): {URI: "k8s/pod.yaml", URIBaseID: srcRoot},
		"../../" + filepath.Base(filepath.Dir(outside)) + "/compose.yaml": {URI: fileURI(outside)},
		outside: {URI: fileURI(outside)},
	} {
		if got := artifactLocation(file, root); got != want {
			t.Errorf("%s: %+v, want %+v", file, got, want)
		}
	}
	rep := &Report{Version: "v0.0.0-test", SourceRoot: root, Projects: []*Project{{
		Project:  &analyze.Project{Name: "p"},
		Findings: []analyze.Finding{{Rule: "SHM001", Severity: analyze.Warning, Pos: analyze.Pos{File: "compose.yaml", Line: 3}, Message: "m", Remediation: "R."}},
	}}}
	var log struct {
		Runs []struct {
			OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds"`
			Results            []struct {
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(render(t, "sarif", rep)), &log); err != nil {
		t.Fatal(err)
	}
	if got := log.Runs[0].OriginalURIBaseIDs[srcRoot]; got.URI != fileURI(root)+"/" || got.URIBaseID != "" {
		t.Errorf("originalUriBaseIds %v, want %s/", log.Runs[0].OriginalURIBaseIDs, fileURI(root))
	}
	// The fingerprint names the file as the root does, whatever the working folder.
	f := rep.Projects[0].Findings[0]
	f.File = "deploy/compose.yaml"
	if got := log.Runs[0].Results[0].PartialFingerprints[sarifFPField]; got != fingerprint(f) {
		t.Errorf("fingerprint %s, want the root-relative one %s", got, fingerprint(f))
	}
	if got := fileURI("/"); got != "file:///" {
		t.Errorf("the file system root is %s", got)
	}
}

// TestFingerprintsUnique: two results that only their line tells apart get fingerprints of
// their own, the first keeping the plain one.
func TestFingerprintsUnique(t *testing.T) {
	f := analyze.Finding{Rule: "SHM090", Service: "", Pos: analyze.Pos{File: "c.yaml", Line: 3}, Message: "m"}
	g := f
	g.Line = 9
	fps := fingerprints{}
	a, b := fps.unique(fingerprint(f)), fps.unique(fingerprint(g))
	if a == b || a != fingerprint(f) {
		t.Errorf("fingerprints %s and %s", a, b)
	}
}
