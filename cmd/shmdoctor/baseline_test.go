package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBaseline adopts the doctor in a copy of the demo: the baseline command accepts
// today's findings, a run with --baseline reports none of them even after lines moved above
// them, and reports a new problem and a changed value as new.
func TestBaseline(t *testing.T) {
	dir := t.TempDir()
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "demo", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	compose := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(compose, demo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	code, out, errs := shmdoctor(t, "", "baseline", "--probe", "never")
	if code != exitClean || !strings.HasPrefix(out, "wrote 11 findings to .shmdoctor-baseline.json") {
		t.Fatalf("baseline: exit %d, %q, %q", code, out, errs)
	}
	var b struct {
		Findings []struct{ Fingerprint, Rule, File string }
	}
	data, err := os.ReadFile(".shmdoctor-baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &b); err != nil || len(b.Findings) != 11 || b.Findings[0].File != "compose.yaml" {
		t.Fatalf("baseline file (%v): %s", err, data)
	}

	reported := func() (int, []string) {
		t.Helper()
		code, out, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "--baseline", ".shmdoctor-baseline.json")
		var doc struct {
			Projects []struct {
				Findings []struct{ Rule, Service string }
			}
			Summary map[string]int
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: %s %s", err, out, errs)
		}
		var got []string
		for _, f := range doc.Projects[0].Findings {
			got = append(got, f.Service+" "+f.Rule)
		}
		if doc.Summary["suppressed"]+len(got) < 11 {
			t.Errorf("summary %v", doc.Summary)
		}
		return code, got
	}
	if code, got := reported(); code != exitClean || len(got) != 0 {
		t.Errorf("with the baseline: exit %d, %v reported", code, got)
	}

	// Lines above every finding, a new service with two problems, and vllm's shm_size changed.
	moved := "# a comment\n# and another, moving every line\n" + strings.Replace(string(demo), "shm_size: 16g", "shm_size: 12g", 1) +
		"  extra:\n    image: x\n    ipc: host\n    shm_size: 1g\n"
	if err := os.WriteFile(compose, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	code, got := reported()
	slices.Sort(got)
	if want := []string{"extra SHM001", "extra SHM020", "vllm SHM001"}; code != exitFindings || !slices.Equal(got, want) {
		t.Errorf("after the edit: exit %d, reported %v, want %v", code, got, want)
	}

	for _, c := range []struct {
		name string
		args []string
	}{
		{"missing baseline", []string{"--baseline", "nope.json"}},
		{"not a baseline", []string{"--baseline", "compose.yaml"}},
		{"baseline --format", []string{"baseline", "--format", "json"}},
	} {
		code, _, errs := shmdoctor(t, "", append([]string{"--probe", "never"}, c.args...)...)
		if c.args[0] == "baseline" {
			code, _, errs = shmdoctor(t, "", append(c.args, "--probe", "never")...)
		}
		if code != exitUsage || !strings.HasPrefix(errs, "shmdoctor: ") {
			t.Errorf("%s: exit %d, %q", c.name, code, errs)
		}
	}
}

// TestBaselineStdout: baseline -o - prints the baseline alone on stdout, valid JSON, and
// says what it wrote on stderr.
func TestBaselineStdout(t *testing.T) {
	t.Chdir(repoRoot(t))
	code, out, errs := shmdoctor(t, "", "baseline", "--probe", "never", "-o", "-", "testdata/demo")
	var b struct{ Findings []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &b); code != exitClean || err != nil || len(b.Findings) != 11 {
		t.Fatalf("exit %d, stdout is not the baseline (%v): %q", code, err, out)
	}
	if !strings.HasPrefix(errs, "wrote 11 findings to -") {
		t.Errorf("stderr %q", errs)
	}
}

// TestBaselineHelpProbe: the baseline command's --help says it probes only when asked.
func TestBaselineHelpProbe(t *testing.T) {
	_, out, _ := shmdoctor(t, "", "baseline", "--help")
	if !strings.Contains(out, "--probe never is the default here") || !regexp.MustCompile(`--probe string[^-]*\(default "never"\)`).MatchString(out) {
		t.Errorf("baseline --help does not say it probes only when asked:\n%s", out)
	}
}
