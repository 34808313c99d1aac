package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// boundedDoctor runs the real binary in dir with 1 GiB of address space and 30 seconds: a
// read without bound is killed by the limit, a read that hangs by the deadline, and either
// fails the test instead of the machine.
func boundedDoctor(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	bin := buildDoctor(t) // before the clock starts: a build on a busy machine is no hang
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `ulimit -v 1048576; exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, bin, "--probe", "never", "--color", "never"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COLUMNS="+wideColumns) // the messages are asserted whole
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("shmdoctor %s did not end in 30 s:\n%s", strings.Join(args, " "), out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code < 0 || code > 2 {
		t.Fatalf("shmdoctor %s: exit %d (killed?) after %s:\n%s", strings.Join(args, " "), code, time.Since(start), out.String())
	}
	return code, out.String()
}

const pgCompose = "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestInputsAreBounded points every input the doctor reads at /dev/zero: each is refused at
// the file (outside the project root, as a link out of the checkout is), exit 2, and the
// other PATH is still analysed.
func TestInputsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		want  string
	}{
		{"path", nil, []string{"/dev/zero"}, "/dev/zero is not a regular file (a character device)"},
		{"include", map[string]string{"p/compose.yaml": "include: [/dev/zero]\n" + pgCompose}, []string{"p"}, "p/compose.yaml:1:11 include /dev/zero resolves outside the project root"},
		{"extends", map[string]string{"p/compose.yaml": pgCompose + "    extends: {file: /dev/zero, service: x}\n"}, []string{"p"}, "p/compose.yaml:5:21 extends file /dev/zero resolves outside the project root"},
		{"dotenv", map[string]string{"p/compose.yaml": pgCompose, "p/.env": "->/dev/zero"}, []string{"p"}, "p/.env resolves outside the project root"},
		{"override", map[string]string{"p/compose.yaml": pgCompose, "p/compose.override.yaml": "->/dev/zero"}, []string{"p"}, "p/compose.override.yaml resolves outside the project root"},
		{"included env", map[string]string{"p/compose.yaml": "include: [inc/compose.yaml]\n", "p/inc/compose.yaml": pgCompose, "p/inc/.env": "->/dev/zero"}, []string{"p"}, "p/inc/.env resolves outside the project root"},
		{"too large", map[string]string{"big.yaml": "# " + strings.Repeat("x", 9<<20) + "\n" + pgCompose}, []string{"big.yaml"}, "big.yaml is larger than 8 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			writeFiles(t, dir, map[string]string{"ok/compose.yaml": pgCompose})
			code, out := boundedDoctor(t, dir, append(tc.args, "ok")...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", code, tc.want, out)
			}
			if !strings.Contains(out, "SHM010 ok/compose.yaml:2:3") {
				t.Errorf("the other PATH was not analysed:\n%s", out)
			}
		})
	}
}

// TestEnvFileFlagIsBounded gives --env-file a link to /dev/zero: it applies to every project,
// and is refused, outside the project root.
func TestEnvFileFlagIsBounded(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"p/compose.yaml": pgCompose, "zero.env": "->/dev/zero"})
	code, out := boundedDoctor(t, dir, "--env-file", "zero.env", "p")
	if want := "zero.env resolves outside the project root"; code != 2 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want 2 with %q:\n%s", code, want, out)
	}
}

// TestFIFOPathIsReadOnce gives a manifest and a compose file through FIFOs, as <(cat pod.yaml)
// does: each is written once, and the doctor must analyse what it held.
func TestFIFOPathIsReadOnce(t *testing.T) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: pytorch/pytorch\n    command: [torchrun, --nproc-per-node=4, train.py]\n    resources: {limits: {nvidia.com/gpu: 4}}\n"
	for _, tc := range []struct{ content, want string }{
		{pod, "SHM101 pod.fifo:6:5"},
		{pgCompose, "SHM010 pod.fifo:2:3"},
	} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "pod.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = f.WriteString(tc.content)
		}()
		code, out := boundedDoctor(t, dir, "pod.fifo")
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("exit %d, want 1 with %s:\n%s", code, tc.want, out)
		}
	}
}

// TestRecursiveSkipsSpecialFiles walks a tree holding FIFOs and a link to /dev/zero with
// compose and manifest names: each is skipped with a note, and the real project is checked.
func TestRecursiveSkipsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"tree/ok/compose.yaml": pgCompose, "tree/zero/x.yaml": "->/dev/zero"})
	for _, f := range []string{"tree/fifo/compose.yaml", "tree/ok/x.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out := boundedDoctor(t, dir, "-r", "tree")
	for _, want := range []string{
		"note: skipped: not a regular file (a FIFO)",
		"tree/fifo/compose.yaml",
		"tree/ok/x.yaml",
		"note: skipped: not a regular file (a character device)",
		"SHM010 tree/ok/compose.yaml:2:3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
}
