//go:build linux

package main

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSARIFSourceRoot runs the real binary on a repository's stack from the repository's root,
// from a subfolder, from the stack's folder and from outside the repository with
// --source-root: every run names every file alike, relative to %SRCROOT%, which is the
// repository. Outside it with no --source-root, the files keep absolute file URIs.
func TestSARIFSourceRoot(t *testing.T) {
	bin := buildDoctor(t)
	repo := t.TempDir()
	stack := filepath.Join(repo, "deploy", "llm")
	sub := filepath.Join(repo, "docs", "ci")
	for _, d := range []string{filepath.Join(repo, ".git"), stack, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "demo", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stack, "compose.yaml"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	type location struct{ URI, URIBaseID string }
	sarif := func(dir string, args ...string) (map[string]location, []location) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "r.sarif")
		cmd := exec.Command(bin, append([]string{"--probe", "never", "--format", "sarif", "-o", out}, args...)...)
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != exitFindings {
			t.Fatalf("in %s, %v: %v\n%s", dir, args, err, msg)
		}
		var log struct {
			Runs []struct {
				OriginalURIBaseIDs map[string]location `json:"originalUriBaseIds"`
				Results            []struct {
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation location `json:"artifactLocation"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		b, err := os.ReadFile(out)
		if err == nil {
			err = json.Unmarshal(b, &log)
		}
		if err != nil || len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
			t.Fatalf("in %s, %v: %v, %s", dir, args, err, b)
		}
		var locs []location
		for _, r := range log.Runs[0].Results {
			locs = append(locs, r.Locations[0].PhysicalLocation.ArtifactLocation)
		}
		return log.Runs[0].OriginalURIBaseIDs, locs
	}
	rootURI := (&url.URL{Scheme: "file", Path: filepath.ToSlash(repo) + "/"}).String()
	_, first := sarif(repo, "deploy/llm")
	for _, l := range first {
		if l != (location{"deploy/llm/compose.yaml", "%SRCROOT%"}) {
			t.Fatalf("from the root: %+v", l)
		}
	}
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{sub, []string{"../../deploy/llm"}},
		{stack, nil},
		{outside, []string{"--source-root", repo, stack}},
		{outside, []string{"--source-root", "../" + filepath.Base(repo), stack}}, // t.TempDir folders are siblings
	} {
		bases, locs := sarif(c.dir, c.args...)
		if got := bases["%SRCROOT%"]; got != (location{URI: rootURI}) {
			t.Errorf("in %s, %v: %%SRCROOT%% is %+v, want %s", c.dir, c.args, got, rootURI)
		}
		if !slices.Equal(locs, first) {
			t.Errorf("in %s, %v: locations %+v, want %+v", c.dir, c.args, locs, first)
		}
	}
	// Outside the repository with no --source-root, the working folder is the root: the
	// stack is outside it and keeps its absolute URI.
	_, locs := sarif(outside, stack)
	want := (&url.URL{Scheme: "file", Path: filepath.ToSlash(stack) + "/compose.yaml"}).String()
	if locs[0] != (location{URI: want}) {
		t.Errorf("outside with no --source-root: %+v, want %s", locs[0], want)
	}
	// A --source-root that is no folder is a usage error.
	cmd := exec.Command(bin, "--probe", "never", "--format", "sarif", "--source-root", filepath.Join(stack, "compose.yaml"), stack)
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "is not a folder") {
		t.Errorf("--source-root on a file: exit %d, %s", cmd.ProcessState.ExitCode(), out)
	}
}
