package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The log lines are the ones the lab's workloads print when they fail.
func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		code int
		oom  bool
		logs string
		want string
	}{
		{"pass", 0, false, "done: 480 items", Pass},
		{"dataloader bus error", 1, false, "RuntimeError: DataLoader worker (pid 41) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.", BusError},
		{"sigbus exit", 135, false, "", BusError},
		{"postgres resize", 1, false, `ERROR:  could not resize shared memory segment "/PostgreSQL.3733531032" to 16777216 bytes: No space left on device`, ENOSPC},
		{"oom flag", 137, true, "", OOM},
		{"killed without the flag", 137, false, "", OOM},
		{"other failure", 2, false, "ImportError: no module named torch", Crash},
	}
	for _, tt := range tests {
		if got := Classify(tt.code, tt.oom, tt.logs); got != tt.want {
			t.Errorf("%s: Classify(%d, %v, ...) = %s, want %s", tt.name, tt.code, tt.oom, got, tt.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	findings := []Finding{
		{Rule: "SHM020", Severity: "info", Service: "loader"},
		{Rule: "SHM030", Severity: "info", Service: "loader"},
		{Rule: "SHM011", Severity: "error", Service: "other"},
	}
	if fails, rules := Verdict(findings, "loader"); fails {
		t.Errorf("ipc: host and ulimit notes are no failure, got %v", rules)
	}
	findings = append(findings, Finding{Rule: "SHM011", Severity: "warning", Service: "loader"}, Finding{Rule: "SHM202", Severity: "error", Service: "loader"})
	if fails, rules := Verdict(findings, "loader"); !fails || strings.Join(rules, " ") != "SHM011 SHM202" {
		t.Errorf("Verdict = %v %v, want fails with SHM011 SHM202", fails, rules)
	}
}

// TestScenarios reads every stack of testdata/lab: one service, an expected outcome, and the
// DataLoader's declaration where there is one.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/lab/*/compose.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no lab stacks: %v", err)
	}
	loaders := 0
	for _, f := range dirs {
		dir := filepath.Dir(f)
		s, err := ReadScenario(filepath.Base(dir), dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Note == "" {
			t.Errorf("%s: the first line of compose.yaml must say what the stack runs", f)
		}
		if s.Loader != nil {
			loaders++
			// The loader runs what the doctor is told it runs; START_METHOD may be left to
			// its default, fork.
			for k, want := range s.Loader.LoaderEnv() {
				got, ok := s.Env[k]
				if !ok && k == "START_METHOD" {
					got = "fork"
				}
				if got != want {
					t.Errorf("%s: environment %s is %q, the dataloader declaration says %q", f, k, got, want)
				}
			}
		}
	}
	if loaders == 0 {
		t.Error("no DataLoader stack")
	}
}

func TestReadScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ text, want string }{
		{"x-lab: {expect: maybe}\nservices: {a: {image: x}}\n", `x-lab.expect "maybe"`},
		{"x-lab: {expect: pass}\nservices: {a: {image: x}, b: {image: y}}\n", "one service, not 2"},
		{"x-lab: {expect: pass}\nservices: {a: {image: x, x-shmdoctor: {dataloader: {workers: 1, batch_bytes: 8g}}}}\n", "not a size in MiB"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadScenario("x", dir); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadScenario(%q) = %v, want an error with %q", tt.text, err, tt.want)
		}
	}
}
