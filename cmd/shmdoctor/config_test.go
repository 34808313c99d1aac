package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// hostStack has an SHM001 warning (line 5) and an SHM020 info (line 4).
const hostStack = "services:\n  app:\n    image: alpine\n    ipc: host\n    shm_size: 1g\n"

// summaryOf runs the analysis alone as JSON and returns the exit code, the summary and the
// config file the report names.
func summaryOf(t *testing.T, args ...string) (int, map[string]int, string) {
	t.Helper()
	code, out, errs := shmdoctor(t, "", append([]string{"--format", "json", "--probe", "never"}, args...)...)
	var doc struct {
		Summary map[string]int
		Config  string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, not JSON (%v): %s %s", code, err, out, errs)
	}
	return code, doc.Summary, doc.Config
}

// TestConfigFile: .shmdoctor.yaml is found from the working folder upward, --config names
// another, --no-config reads none, and flags win over it.
func TestConfigFile(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		".shmdoctor.yaml":       "fail-on: error\nignore:\n  - SHM020 the exporter reads host metrics\n",
		"stack/compose.yaml":    hostStack,
		"stack/deeper/README":   "compose discovery and the config search both go upward from here\n",
		"other/strict.yaml":     "fail-on: info\nseverity: {SHM001: info}\n",
		"other/broken.yaml":     "fail-on: error\nignore: [SHM020]\nfial-on: never\n",
		"legacy/compose.yaml":   hostStack,
		"paths.shmdoctor.yaml":  "ignore-paths:\n  - legacy frozen until the migration\n",
		"swarm.shmdoctor.yaml":  "target: swarm\nneed: 4g\n",
		"severe.shmdoctor.yaml": "severity:\n  SHM020: error\n",
	})
	config := filepath.Join(dir, ".shmdoctor.yaml")
	t.Chdir(filepath.Join(dir, "stack", "deeper"))

	t.Run("found upward", func(t *testing.T) {
		code, sum, used := summaryOf(t)
		if code != exitClean || sum["warning"] != 1 || sum["info"] != 0 || sum["suppressed"] != 1 || used != config {
			t.Errorf("exit %d, summary %v, config %q: want fail-on error and SHM020 ignored from %s", code, sum, used, config)
		}
	})
	t.Run("flags win", func(t *testing.T) {
		if code, _, _ := summaryOf(t, "--fail-on", "warning"); code != exitFindings {
			t.Errorf("--fail-on warning over the config's error: exit %d", code)
		}
	})
	t.Run("--no-config", func(t *testing.T) {
		code, sum, used := summaryOf(t, "--no-config")
		if code != exitFindings || sum["info"] != 1 || sum["suppressed"] != 0 || used != "" {
			t.Errorf("exit %d, summary %v, config %q: want the defaults", code, sum, used)
		}
	})
	t.Run("--config", func(t *testing.T) {
		// severity: SHM001 info, fail-on info: still 1, and nothing ignored.
		code, sum, _ := summaryOf(t, "--config", filepath.Join(dir, "other", "strict.yaml"))
		if code != exitFindings || sum["warning"] != 0 || sum["info"] != 2 || sum["suppressed"] != 0 {
			t.Errorf("exit %d, summary %v", code, sum)
		}
	})
	t.Run("severity override changes the exit code", func(t *testing.T) {
		severe := filepath.Join(dir, "severe.shmdoctor.yaml")
		if code, sum, _ := summaryOf(t, "--config", severe, "--fail-on", "error"); code != exitFindings || sum["error"] != 1 {
			t.Errorf("SHM020 as an error: exit %d, summary %v", code, sum)
		}
		if code, _, _ := summaryOf(t, "--no-config", "--fail-on", "error"); code != exitClean {
			t.Errorf("without the override: exit %d", code)
		}
	})
	t.Run("target and need", func(t *testing.T) {
		_, out, _ := shmdoctor(t, "", "--probe", "never", "--format", "json", "--config", filepath.Join(dir, "swarm.shmdoctor.yaml"))
		if !strings.Contains(out, `"rule": "SHM040"`) || !strings.Contains(out, `"need_bytes": 4294967296`) {
			t.Errorf("target swarm and need 4g not applied:\n%s", out)
		}
		if !strings.Contains(out, `"need_from": "need in `) || !strings.Contains(out, `swarm.shmdoctor.yaml"`) {
			t.Errorf("the need is not said to come from the config file:\n%s", out)
		}
		_, out, _ = shmdoctor(t, "", "--probe", "never", "--format", "json", "--need", "1g", "--config", filepath.Join(dir, "swarm.shmdoctor.yaml"))
		if !strings.Contains(out, `"need_from": "--need"`) || !strings.Contains(out, `"need_bytes": 1073741824`) {
			t.Errorf("--need does not win over the config file:\n%s", out)
		}
	})
	t.Run("ignore-paths", func(t *testing.T) {
		t.Chdir(dir)
		_, doc, _ := jsonRun(t, "", "--config", "paths.shmdoctor.yaml", "-r", ".")
		for _, p := range doc.Projects {
			legacy := strings.HasPrefix(p.Files[0], "legacy")
			if legacy != (len(p.Findings) == 0) {
				t.Errorf("%s: %d findings shown", p.Files[0], len(p.Findings))
			}
		}
		code, sum, _ := summaryOf(t, "--config", "paths.shmdoctor.yaml", "legacy")
		if code != exitClean || sum["suppressed"] != 2 {
			t.Errorf("legacy alone: exit %d, summary %v", code, sum)
		}
	})
	t.Run("errors", func(t *testing.T) {
		code, out, errs := shmdoctor(t, "", "--probe", "never", "--config", filepath.Join(dir, "other", "broken.yaml"))
		want := filepath.Join(dir, "other", "broken.yaml") + ":3:1: unknown key \"fial-on\""
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, "shmdoctor: "+want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want %s", code, out, errs, want)
		}
		if code, _, errs := shmdoctor(t, "", "--config", "x.yaml", "--no-config"); code != exitUsage || !strings.Contains(errs, "exclude each other") {
			t.Errorf("--config with --no-config: exit %d, %q", code, errs)
		}
		if code, _, errs := shmdoctor(t, "", "--probe", "never", "--config", "missing.yaml"); code != exitUsage || !strings.Contains(errs, "missing.yaml: no such file") {
			t.Errorf("missing config: exit %d, %q", code, errs)
		}
	})
	t.Run("verbose names it", func(t *testing.T) {
		_, out, _ := shmdoctor(t, "", "--probe", "never", "-v")
		if !strings.HasPrefix(out, "config: "+config+"\n") {
			t.Errorf("-v does not name the config:\n%s", out)
		}
		_, out, _ = shmdoctor(t, "", "--probe", "never", "-v", "--no-config")
		if !strings.HasPrefix(out, "config: none\n") {
			t.Errorf("-v --no-config:\n%s", out)
		}
	})
}

// TestShowSuppressed: text counts suppressed findings and lists them, marked, on request;
// the exit code ignores them.
func TestShowSuppressed(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": `services:
  app:
    image: alpine
    ipc: host # shmdoctor-ignore SHM020 the exporter reads host metrics
    shm_size: 1g # shmdoctor-ignore SHM001 kept for podman users
    mem_limit: 1g # shmdoctor-ignore SHM012 stale
`})
	t.Chdir(dir)
	wide(t)
	code, out, _ := shmdoctor(t, "", "--probe", "never", "--no-config")
	if code != exitClean || strings.Contains(out, "SHM020") || !strings.Contains(out, "SHM090") ||
		!strings.Contains(out, "0 errors, 0 warnings, 1 info in 1 project, 1 service; 2 suppressed (--show-suppressed lists them)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	_, out, _ = shmdoctor(t, "", "--probe", "never", "--no-config", "--show-suppressed")
	for _, want := range []string{
		"warning SHM001 compose.yaml:5:5 shm_size 1 GiB is ignored",
		"suppressed by comment at compose.yaml:5:18: kept for podman users",
		"suppressed by comment at compose.yaml:4:15: the exporter reads host metrics",
		"info    SHM090 compose.yaml:6:19 shmdoctor-ignore SHM012 matches no finding on line 6",
		"; 2 suppressed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--show-suppressed lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := shmdoctor(t, "", "--probe", "never", "--no-config", "--fail-on", "info"); code != exitFindings {
		t.Errorf("the stale suppression is an info finding: exit %d", code)
	}
}

// TestIgnoreFlag: --ignore silences rules by ID or name, repeated or comma-separated, as
// the config file's ignore does (counted as suppressed, listed with --show-suppressed),
// beside the config's own; an unknown rule is a usage error that names it.
func TestIgnoreFlag(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"compose.yaml":    hostStack,
		".shmdoctor.yaml": "ignore:\n  - SHM020 the exporter reads host metrics\n",
	})
	t.Chdir(dir)
	code, sum, _ := summaryOf(t, "--no-config")
	if code != exitFindings || sum["warning"] != 1 || sum["info"] != 1 || sum["suppressed"] != 0 {
		t.Fatalf("without --ignore: exit %d, summary %v; want the SHM001 warning and the SHM020 info", code, sum)
	}
	for _, args := range [][]string{
		{"--ignore", "SHM001", "--ignore", "ipc-host"},
		{"--ignore", "shm-size-ignored-ipc-host,SHM020"},
		{"--ignore", "shm001, ipc-host"},
	} {
		code, sum, _ := summaryOf(t, append([]string{"--no-config"}, args...)...)
		if code != exitClean || sum["warning"]+sum["info"]+sum["error"] != 0 || sum["suppressed"] != 2 {
			t.Errorf("%v: exit %d, summary %v; want both findings suppressed", args, code, sum)
		}
	}
	// the config's ignore and the flag's add up
	if code, sum, _ := summaryOf(t, "--ignore", "SHM001"); code != exitClean || sum["suppressed"] != 2 {
		t.Errorf("--ignore SHM001 beside the config's SHM020: exit %d, summary %v", code, sum)
	}
	_, out, _ := shmdoctor(t, "", "--probe", "never", "--no-config", "--show-suppressed", "--ignore", "SHM001")
	if !strings.Contains(out, "SHM001") || !strings.Contains(out, "suppressed by --ignore") {
		t.Errorf("--show-suppressed does not list the finding --ignore silenced:\n%s", out)
	}
	_, out, _ = shmdoctor(t, "", "--probe", "never", "--no-config", "--format", "compact", "--ignore", "SHM001")
	if strings.Contains(out, "SHM001") || !strings.Contains(out, "SHM020") {
		t.Errorf("compact with --ignore SHM001:\n%s", out)
	}
	for _, bad := range []string{"SHM999", "ipc-hots", "SHM001,nope", ""} {
		code, out, errs := shmdoctor(t, "", "--probe", "never", "--ignore", bad)
		want := "--ignore " + bad[strings.LastIndex(bad, ",")+1:] + ": no such rule"
		if bad == "" {
			want = "--ignore needs a rule"
		}
		if code != exitUsage || out != "" || !strings.Contains(errs, want) {
			t.Errorf("--ignore %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", bad, code, out, errs, want)
		}
	}
}
