package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// entries lists a folder's names, to catch stray temporary files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestTwoFormatsOneRun(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	sarif := filepath.Join(dir, "results.sarif")
	code, out, errs := shmdoctor(t, "", "--probe", "never", "--format", "text", "--format", "sarif", "--output", "-", "--output", sarif, "testdata/demo")
	if code != exitFindings || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	golden(t, "demo.txt", out)
	b, err := os.ReadFile(sarif)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string
		Runs    []struct{ Results []json.RawMessage }
	}
	if err := json.Unmarshal(b, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
		t.Fatalf("results.sarif: %v, %+v", err, log)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("the folder holds %v, want results.sarif alone", got)
	}
	if st, err := os.Stat(sarif); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("results.sarif: %v, mode %v", err, st.Mode())
	}
}

func TestOutputAtomic(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")

	// A usage error renders nothing: no file.
	if code, _, _ := shmdoctor(t, "", "--probe", "never", "--fail-on", "loud", "--format", "json", "-o", out, "testdata/demo"); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a usage error left %s (%v)", out, err)
	}

	// An old report is replaced whole.
	if err := os.WriteFile(out, []byte("stale and much longer than nothing"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", out, "testdata/demo")
	if code != exitFindings || stdout != "" {
		t.Fatalf("exit %d, stdout %q: the report goes to the file alone", code, stdout)
	}
	b, _ := os.ReadFile(out)
	golden(t, "demo.json", string(b))

	// Unwritable targets: a missing folder, and a name that is a folder (the rename fails
	// after the temporary file was written).
	taken := filepath.Join(dir, "taken")
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{filepath.Join(dir, "missing", "r.sarif"), taken} {
		code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "sarif", "-o", target, "testdata/demo")
		if code != exitUsage || errs == "" {
			t.Errorf("%s: exit %d, stderr %q; want %d and a message", target, code, errs, exitUsage)
		}
		if got := entries(t, dir); len(got) != 2 {
			t.Errorf("%s: the folder holds %v, want report.json and taken only", target, got)
		}
		if got := entries(t, taken); len(got) != 0 {
			t.Errorf("%s: taken holds %v", target, got)
		}
	}
}

func TestOutputUsageErrors(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for name, args := range map[string][]string{
		"two formats, no output":    {"--format", "text", "--format", "json"},
		"more outputs than formats": {"--format", "json", "-o", a, "-o", b},
		"fewer outputs":             {"--format", "json", "--format", "sarif", "-o", a},
		"unknown second format":     {"--format", "json", "--format", "xml", "-o", a, "-o", b},
		"same file twice":           {"--format", "json", "--format", "sarif", "-o", a, "-o", a},
		"stdout twice":              {"--format", "json", "--format", "sarif", "-o", "-", "-o", "-"},
		"empty output":              {"--format", "json", "-o", ""},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := shmdoctor(t, "", append(append([]string{"--probe", "never"}, args...), "testdata/demo")...)
			if code != exitUsage || errs == "" || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, a message and no report", code, out, errs, exitUsage)
			}
			if got := entries(t, dir); len(got) != 0 {
				t.Errorf("files written: %v", got)
			}
		})
	}
}
