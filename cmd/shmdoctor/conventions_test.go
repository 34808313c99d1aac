package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestVersionFlag: -V and --version print what `shmdoctor version` prints.
func TestVersionFlag(t *testing.T) {
	_, want, _ := shmdoctor(t, "", "version")
	for _, flag := range []string{"-V", "--version"} {
		code, got, errs := shmdoctor(t, "", flag)
		if code != exitClean || got != want || errs != "" {
			t.Errorf("%s: exit %d, %q, stderr %q; want %q", flag, code, got, errs, want)
		}
	}
}

// TestHelpCommand: `shmdoctor help [command]` is the command's --help.
func TestHelpCommand(t *testing.T) {
	for _, c := range [][2][]string{
		{{"help"}, {"--help"}},
		{{"help", "watch"}, {"watch", "--help"}},
		{{"help", "rules"}, {"rules", "--help"}},
		{{"help", "help"}, {"--help"}},
	} {
		code, got, _ := shmdoctor(t, "", c[0]...)
		_, want, _ := shmdoctor(t, "", c[1]...)
		if code != exitClean || got != want || got == "" {
			t.Errorf("%v: exit %d, output differs from %v:\n%s", c[0], code, c[1], got)
		}
	}
	code, _, errs := shmdoctor(t, "", "help", "wtch")
	if code != exitUsage || !strings.Contains(errs, `unknown command "wtch"; did you mean watch?`) {
		t.Errorf("help wtch: exit %d, %q", code, errs)
	}
}

// TestDidYouMean: a mistyped flag or command names the nearest one; a folder that happens
// to be named like a command is still checked as a folder.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fial-on", "error"}, "unknown flag: --fial-on; did you mean --fail-on?"},
		{[]string{"--colour", "never"}, "unknown flag: --colour; did you mean --color?"},
		{[]string{"watch", "--intervl", "1s"}, "watch: unknown flag: --intervl; did you mean --interval?"},
		{[]string{"rulse"}, `unknown command "rulse"; did you mean rules?`},
		{[]string{"expalin", "SHM001"}, `unknown command "expalin"; did you mean explain?`},
	} {
		code, _, errs := shmdoctor(t, "", c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
	if _, _, errs := shmdoctor(t, "", "--frobnicate"); strings.Contains(errs, "did you mean") {
		t.Errorf("--frobnicate is near no flag, yet: %q", errs)
	}
	dir := testutil.WriteFiles(t, map[string]string{"rule/compose.yaml": "services:\n  app:\n    image: alpine\n"})
	t.Chdir(dir)
	if code, out, errs := shmdoctor(t, "", "--probe", "never", "rule"); code != exitClean || !strings.Contains(out, "no findings") {
		t.Errorf("the folder rule: exit %d, %s%s", code, out, errs)
	}
}

// TestQuietErrorsAndWarnings: -q prints errors and warnings, not the info findings, the
// table or the notes; with only info findings it prints nothing.
func TestQuietErrorsAndWarnings(t *testing.T) {
	t.Chdir(repoRoot(t))
	_, out, _ := shmdoctor(t, "", "--probe", "never", "-q", "testdata/demo")
	if strings.Contains(out, "info    SHM") || !strings.Contains(out, "warning SHM001") || !strings.Contains(out, "error   SHM011") || strings.Contains(out, "SERVICE") {
		t.Errorf("-q:\n%s", out)
	}
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: alpine\n    ipc: host\n"})
	if code, out, _ := shmdoctor(t, "", "--probe", "never", "-q", "--fail-on", "warning", dir); code != exitClean || out != "" {
		t.Errorf("-q with one info finding: exit %d, %q", code, out)
	}
}

// TestColorFlags: --no-color beside --color, FORCE_COLOR beside NO_COLOR.
func TestColorFlags(t *testing.T) {
	t.Chdir(repoRoot(t))
	t.Setenv("FORCE_COLOR", "1") // shmdoctor() sets NO_COLOR: FORCE_COLOR wins over it
	if _, out, _ := shmdoctor(t, "", "--probe", "never", "testdata/demo"); !strings.Contains(out, "\x1b[") {
		t.Error("FORCE_COLOR=1 printed no escape codes into a pipe")
	}
	if _, out, _ := shmdoctor(t, "", "--probe", "never", "--no-color", "testdata/demo"); strings.Contains(out, "\x1b[") {
		t.Error("--no-color printed escape codes")
	}
	t.Setenv("FORCE_COLOR", "0")
	if _, out, _ := shmdoctor(t, "", "--probe", "never", "testdata/demo"); strings.Contains(out, "\x1b[") {
		t.Error("FORCE_COLOR=0 printed escape codes")
	}
	if code, _, errs := shmdoctor(t, "", "--no-color", "--color", "always", "testdata/demo"); code != exitUsage || !strings.Contains(errs, "exclude each other") {
		t.Errorf("--no-color --color always: exit %d, %q", code, errs)
	}
}

// TestConfigYmlAndRuleNames: .shmdoctor.yml is read, and its ignore entries take names.
func TestConfigYmlAndRuleNames(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"compose.yaml":   "services:\n  app:\n    image: alpine\n    ipc: host\n    shm_size: 1g # shmdoctor-ignore shm-size-ignored-ipc-host kept for podman\n",
		".shmdoctor.yml": "ignore:\n  - ipc-host the exporter reads host metrics\n",
	})
	t.Chdir(dir)
	wide(t)
	code, out, errs := shmdoctor(t, "", "--probe", "never", "--show-suppressed")
	for _, want := range []string{
		"suppressed by config at .shmdoctor.yml:2:5: the exporter reads host metrics",
		"suppressed by comment at compose.yaml:5:18: kept for podman",
		"no findings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exit %d, no %q in:\n%s%s", code, want, out, errs)
		}
	}
}

// TestPlainWordsRealEngine asks the real engine for the memlock ulimit NVIDIA recommends
// (-1, unlimited), which an engine whose daemon runs with a finite memlock hard limit
// refuses (8 MiB on the development machine, as on many distributions): runc's raw "error
// setting rlimit type 8" gets a line in plain words in front of it, and nothing is left
// behind.
func TestPlainWordsRealEngine(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: alpine\n    ulimits:\n      memlock: -1\n"})
	const project = "shmdoctor-plain-words"
	code, out, errs := doctor(t, []string{"COLUMNS=" + wideColumns, "NO_COLOR=1"}, "--probe", "always", "-p", project, dir)
	if left := probeContainers(t, project); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if code == exitClean && strings.Contains(out, "ok 64 MiB") {
		t.Skip("this engine grants memlock -1: its daemon runs with no memlock limit")
	}
	plain := strings.Index(out, "the engine refused the memlock ulimit (rlimit type 8)")
	raw := strings.Index(out, "error setting rlimit type 8: operation not permitted")
	if code != exitFindings || plain < 0 || raw < 0 || plain > raw {
		t.Errorf("exit %d, the plain words are not in front of the raw error:\n%s%s", code, out, errs)
	}
}

// TestHelpFits80: every command's --help reads at 80 columns.
func TestHelpFits80(t *testing.T) {
	for _, cmd := range []string{"", "rules", "explain", "version", "probe", "host", "watch"} {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		_, out, _ := shmdoctor(t, "", args...)
		for _, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("%s --help: a line of %d columns: %q", cmd, n, l)
			}
		}
	}
}

// TestForceColorZero: FORCE_COLOR=0 and FORCE_COLOR=false turn colour off on a terminal
// too, as NO_COLOR does; a terminal with neither set gets colour (the control).
func TestForceColorZero(t *testing.T) {
	// The master side of a pseudo-terminal is a terminal to isatty.
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer tty.Close()
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	t.Setenv("FORCE_COLOR", "")
	if !useColor("auto", tty) {
		t.Fatal("a terminal gets no colour with neither NO_COLOR nor FORCE_COLOR set")
	}
	for _, v := range []string{"0", "false"} {
		t.Setenv("FORCE_COLOR", v)
		if useColor("auto", tty) {
			t.Errorf("FORCE_COLOR=%s: colour on a terminal", v)
		}
		if !useColor("always", tty) {
			t.Errorf("FORCE_COLOR=%s: --color always gives no colour", v)
		}
	}
	t.Setenv("FORCE_COLOR", "")
	t.Setenv("NO_COLOR", "1")
	if useColor("auto", tty) {
		t.Error("NO_COLOR=1: colour on a terminal")
	}
}

// TestExplainByName: explain takes a rule's name as well as its ID, and prints the same.
func TestExplainByName(t *testing.T) {
	_, byID, _ := shmdoctor(t, "", "explain", "SHM020")
	code, byName, errs := shmdoctor(t, "", "explain", "ipc-host")
	if code != exitClean || byName != byID || !strings.HasPrefix(byName, "# SHM020 ipc-host") {
		t.Errorf("explain ipc-host: exit %d, %q, stderr %q; explain SHM020 printed %q", code, byName, errs, byID)
	}
	if code, _, errs := shmdoctor(t, "", "explain", "ipc-hots"); code != exitUsage || !strings.Contains(errs, "ipc-hots: no such rule") {
		t.Errorf("explain ipc-hots: exit %d, stderr %q", code, errs)
	}
}

// TestCommandsFitColumns: rules and explain (every rule) lay their output out for COLUMNS,
// 80 when unset (host: TestHostFitsColumns, on the engine). The one exception is a URL
// longer than a line: it keeps a line of its own, unbroken, so that it can still be copied.
func TestCommandsFitColumns(t *testing.T) {
	commands := [][]string{{"rules"}}
	for _, r := range rules.All {
		commands = append(commands, []string{"explain", r.ID})
	}
	for _, columns := range []string{"", "80", "50"} {
		for _, args := range commands {
			var out string
			func() {
				t.Setenv("COLUMNS", columns) // unset: whatever runs the tests
				var b, e bytes.Buffer
				t.Setenv("NO_COLOR", "1")
				run(t.Context(), args, strings.NewReader(""), &b, &e)
				out = b.String()
			}()
			width := 80
			if columns != "" {
				width, _ = strconv.Atoi(columns)
			}
			if strings.Count(out, "\n") < 2 {
				t.Fatalf("COLUMNS=%s %v printed %q", columns, args, out)
			}
			for _, l := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(l); n > width && !unbreakableURL(l) {
					t.Errorf("COLUMNS=%s %v: a line of %d columns: %q", columns, args, n, l)
				}
			}
		}
	}
}

// unbreakableURL reports whether a line is one URL alone, which no break keeps whole.
func unbreakableURL(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "https://") && !strings.Contains(l, " ")
}
