package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: what -X sets is printed, in text and JSON, and the JSON and SARIF reports carry
// the same version. A test binary embeds no agent.
func TestVersion(t *testing.T) {
	t.Chdir(repoRoot(t))
	saved := [3]string{buildVersion, buildCommit, buildCommitTime}
	t.Cleanup(func() { buildVersion, buildCommit, buildCommitTime = saved[0], saved[1], saved[2] })
	buildVersion, buildCommit, buildCommitTime = "v1.2.3-4-gabcdef0", "abcdef0123", "2025-01-02T03:04:05Z"

	code, out, errs := shmdoctor(t, "", "version")
	want := "shmdoctor v1.2.3-4-gabcdef0\ncommit:   abcdef0123 (2025-01-02T03:04:05Z)\ngo:       " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH +
		"\nagents:   none embedded (a static linux build is its own agent)\n"
	if code != exitClean || out != want || errs != "" {
		t.Errorf("version: exit %d, stderr %q\n got %q\nwant %q", code, errs, out, want)
	}

	code, out, _ = shmdoctor(t, "", "version", "--format", "json")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); err != nil || code != exitClean {
		t.Fatalf("version --format json: exit %d, %v: %s", code, err, out)
	}
	if b.Version != "v1.2.3-4-gabcdef0" || b.Commit != "abcdef0123" || b.CommitTime != "2025-01-02T03:04:05Z" || b.Go != runtime.Version() ||
		b.OS != runtime.GOOS || b.Arch != runtime.GOARCH || b.Agents == nil || len(b.Agents) != 0 {
		t.Errorf("version --format json: %+v", b)
	}
	if !strings.Contains(out, `"agents": []`) {
		t.Errorf("agents is not an empty list: %s", out)
	}

	for _, f := range []string{"json", "sarif"} {
		_, out, _ = shmdoctor(t, "", "--probe", "never", "--format", f, "testdata/rules/silent")
		if !strings.Contains(out, `"version": "v1.2.3-4-gabcdef0"`) {
			t.Errorf("--format %s does not carry the version:\n%.400s", f, out)
		}
		if f == "sarif" && !strings.Contains(out, `"semanticVersion": "1.2.3-4-gabcdef0"`) {
			t.Errorf("--format sarif has no semanticVersion:\n%.400s", out)
		}
	}

	for _, args := range [][]string{{"version", "extra"}, {"version", "--format", "yaml"}, {"version", "--bogus"}} {
		if code, _, errs := shmdoctor(t, "", args...); code != exitUsage || !strings.Contains(errs, "version") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
	}

	// Without -X the version comes from the build information, "dev" at worst.
	buildVersion, buildCommit, buildCommitTime = "", "", ""
	if v := versionString(); v == "" {
		t.Error("versionString is empty without -X")
	}
}
