//go:build !windows

package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTmuxDemo runs the doctor on the demo in a real terminal, a tmux pane of 80×24, against
// the real engine: the probe's live block starts on the pane's top row, where a redraw that
// erased below the cursor pushed a copy of the block into tmux's scrollback every time.
// The whole pane, scrollback included, must hold no trace of the block, the report once, and
// no line wider than the pane.
func TestTmuxDemo(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	bin := doctorPath(t)
	dir := copyTree(t, filepath.Join(root(t), "testdata", "demo"))
	sock := filepath.Join(t.TempDir(), "tmux")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The pane signals the test when the doctor is done, then waits (cat on the terminal)
	// so that the pane stays to be captured.
	script := "cd " + shellQuote(dir) + " && " + shellQuote(filepath.Join(bin, "shmdoctor")) + " --probe always .; " +
		"echo exit=$?; tmux -S " + shellQuote(sock) + " wait-for -S doctor-done; exec cat"
	tmux("new-session", "-d", "-x", "80", "-y", "24", "-e", "COLUMNS=", "sh", "-c", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	tmux("wait-for", "doctor-done")

	wrapped := tmux("capture-pane", "-p", "-S", "-", "-E", "-")
	joined := tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-")
	if !strings.Contains(joined, "exit=1") || !strings.Contains(joined, "MEASURED") {
		t.Fatalf("the demo did not run to its report with a probe:\n%s", joined)
	}
	if n := strings.Count(wrapped, "probing llm-demo"); n > 0 {
		t.Errorf("%d copies of the progress block are left in the pane and its scrollback:\n%s", n, wrapped)
	}
	if n := strings.Count(joined, "project llm-demo"); n != 1 {
		t.Errorf("the report is printed %d times:\n%s", n, joined)
	}
	for _, l := range strings.Split(joined, "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n > 80 {
			t.Errorf("a line of %d columns wraps in an 80-column terminal: %q", n, l)
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
