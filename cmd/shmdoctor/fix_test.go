package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestFixDemoGolden holds the diff --fix prints for the demo stacks, and what it says on
// stderr about the findings it fixes and those it leaves.
func TestFixDemoGolden(t *testing.T) {
	t.Chdir(repoRoot(t))
	for _, c := range []struct{ dir, golden string }{
		{"testdata/demo", "demo-fix.diff"},
		{"testdata/demo-k8s", "demo-k8s-fix.diff"},
	} {
		code, out, errs := shmdoctor(t, "", "--fix", c.dir)
		if code != exitFindings {
			t.Fatalf("%s: exit %d, want %d (stderr %q)", c.dir, code, exitFindings, errs)
		}
		golden(t, c.golden, out)
		// Nothing is written without --write: stderr says what the diff would fix, and how
		// to apply it, never that anything was fixed.
		if !strings.Contains(errs, ": would fix: ") || !strings.Contains(errs, "would fix ") || !strings.Contains(errs, " findings in 1 file") ||
			!strings.Contains(errs, "; run with --write to apply") || strings.Contains(errs, ": fixed: ") || strings.Contains(errs, " findings fixed in") {
			t.Errorf("%s: stderr does not say what the diff would fix: %q", c.dir, errs)
		}
	}
}

// TestFixApplies feeds the diff of --fix to git apply and patch, then checks that --fix
// --write makes the same files, keeps their mode, leaves no temporary file, and that a
// second --fix finds nothing left to fix.
func TestFixApplies(t *testing.T) {
	for _, tool := range []string{"git", "patch"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to check the diff: %v", tool, err)
		}
	}
	src := filepath.Join(repoRoot(t), "testdata", "demo")
	applied := testutil.CopyTree(t, src)
	t.Chdir(applied)
	code, diff, errs := shmdoctor(t, "", "--fix", ".")
	if code != exitFindings || diff == "" {
		t.Fatalf("exit %d, diff %q, stderr %q", code, diff, errs)
	}
	run := func(dir, stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", strings.Join(args, " "), err, out, diff)
		}
	}
	run(applied, diff, "git", "apply", "--check", "-")
	run(applied, diff, "patch", "-p1", "--dry-run", "--quiet")
	run(applied, diff, "git", "apply", "-")
	want, err := os.ReadFile(filepath.Join(applied, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	written := testutil.CopyTree(t, src)
	file := filepath.Join(written, "compose.yaml")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	t.Chdir(written)
	code, out, errs := shmdoctor(t, "", "--fix", "--write", ".")
	if code != exitClean || errs != "" || !strings.Contains(out, "wrote compose.yaml") {
		t.Fatalf("--write: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("--fix --write wrote what git apply does not:\n%s", fix.UnifiedDiff("git-apply", "write", want, got))
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("compose.yaml: %v, mode %v, want 0640", err, st.Mode())
	}
	if names := entries(t, written); strings.Join(names, " ") != "compose.yaml" {
		t.Errorf("the folder holds %v, want compose.yaml alone", names)
	}
	code, out, errs = shmdoctor(t, "", "--fix", ".")
	if code != exitClean || out != "" || strings.Contains(errs, ": would fix: ") {
		t.Errorf("a second --fix: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestFixWriteSymlink writes through a symlinked compose file: the target changes, the link
// stays a link.
func TestFixWriteSymlink(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"real/compose.yaml": "services:\n  web:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"})
	link := filepath.Join(dir, "compose.yaml")
	if err := os.Symlink(filepath.Join("real", "compose.yaml"), link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, out, errs := shmdoctor(t, "", "--fix", "--write", "."); code != exitClean {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("compose.yaml is no longer a symlink: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "real", "compose.yaml"))
	if want := "services:\n  web:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: 256m\n"; string(b) != want {
		t.Errorf("real/compose.yaml is %q, want %q", b, want)
	}
}

// TestReplaceFilesStale leaves a file alone that changed since the doctor read it.
func TestReplaceFilesStale(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "edited meanwhile\n"})
	path := filepath.Join(dir, "compose.yaml")
	err := replaceFiles([]fix.FileChange{{Path: path, Name: "compose.yaml", Before: []byte("as read\n"), After: []byte("fixed\n")}})
	if err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "edited meanwhile\n" {
		t.Errorf("the file was rewritten: %q", b)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("the folder holds %v", names)
	}
}

// TestFixStdinAndUsage: a diff against standard input is named -, and the flag
// combinations that cannot work are usage errors.
func TestFixStdinAndUsage(t *testing.T) {
	t.Chdir(repoRoot(t))
	demo, err := os.ReadFile("testdata/demo/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := shmdoctor(t, string(demo), "--fix", "-")
	if code != exitFindings || !strings.HasPrefix(out, "--- -\n+++ -\n@@ ") {
		t.Errorf("--fix -: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, args := range [][]string{
		{"--write", "testdata/demo"},
		{"--fix", "--write", "-"},
		{"--fix", "--format", "json", "testdata/demo"},
		{"--fix", "-o", "x.diff", "testdata/demo"},
	} {
		code, out, errs := shmdoctor(t, string(demo), args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errs, "shmdoctor: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	code, out, errs = shmdoctor(t, "", "--fix", "testdata/nope")
	if code != exitUsage || out != "" || !strings.Contains(errs, "testdata/nope") {
		t.Errorf("missing path: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestFixSharedFile: two projects whose fixes edit the file they both extend. The first
// project's fix is made; the second's waits for the next run, which then has nothing left.
func TestFixSharedFile(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"base.yaml":      "services:\n  base:\n    image: alpine\n    ipc: host\n    shm_size: 2g\n",
		"a/compose.yaml": "services:\n  a:\n    extends:\n      file: ../base.yaml\n      service: base\n",
		"b/compose.yaml": "services:\n  b:\n    extends:\n      file: ../base.yaml\n      service: base\n",
		".git/HEAD":      "ref: refs/heads/main\n", // a repository: a and b read base.yaml in it
	})
	t.Chdir(dir)
	code, out, errs := shmdoctor(t, "", "--fix", "a", "b")
	if code != exitFindings || strings.Count(out, "--- a/base.yaml\n") != 1 {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errs, "SHM001 a: would fix:") || !strings.Contains(errs, "SHM001 b: left for the next run") || !strings.Contains(errs, "1 overlap") {
		t.Errorf("stderr %q", errs)
	}
	if code, out, errs := shmdoctor(t, "", "--fix", "--write", "a", "b"); code != exitClean || !strings.Contains(out, "wrote base.yaml") {
		t.Fatalf("--write: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := shmdoctor(t, "", "--fix", "a", "b"); code != exitClean || out != "" {
		t.Errorf("second run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestFixWriteAllOrNothing: when one file of a patch cannot be written (here it changed
// after the project was loaded), no file is written, so the stack is never left half fixed.
func TestFixWriteAllOrNothing(t *testing.T) {
	files := map[string]string{
		"compose.yaml":          "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n  web:\n    image: alpine\n",
		"compose.override.yaml": "services:\n  web:\n    ipc: host\n    shm_size: 1g\n    command: x\n",
	}
	dir := testutil.WriteFiles(t, files)
	t.Chdir(dir)
	projects := compose.Load(t.Context(), compose.Options{Paths: []string{"."}})
	if len(projects) != 1 || !projects[0].Loaded() {
		t.Fatalf("loading: %+v", projects[0].Errors)
	}
	// compose.override.yaml sorts first and is writable; compose.yaml fails
	edited := files["compose.yaml"] + "    # edited meanwhile\n"
	if err := os.WriteFile("compose.yaml", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code, err := fixProjects(projects, analyze.Config{}, &checkFlags{fix: true, fixWrite: true}, &out, &errs)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "compose.yaml") {
		t.Fatalf("exit %d, err %v, stdout %q", code, err, out.String())
	}
	for name, want := range map[string]string{"compose.yaml": edited, "compose.override.yaml": files["compose.override.yaml"]} {
		if b, _ := os.ReadFile(name); string(b) != want {
			t.Errorf("%s was rewritten: %q", name, b)
		}
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("the folder holds %v", names)
	}
}

// TestFixWriteReadOnly refuses a file its owner made read-only, though its folder would
// let a rename replace it, and whoever runs the fix (root too), and does not say it fixed it.
func TestFixWriteReadOnly(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"})
	t.Chdir(dir)
	if err := os.Chmod("compose.yaml", 0o444); err != nil {
		t.Fatal(err)
	}
	code, out, errs := shmdoctor(t, "", "--fix", "--write", ".")
	if code != exitUsage || !strings.Contains(errs, "compose.yaml") || !strings.Contains(errs, "read-only (mode 0444)") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if strings.Contains(out, "fixed:") {
		t.Errorf("a fix that was not written is said to be fixed: %q", out)
	}
	if b, _ := os.ReadFile("compose.yaml"); string(b) != "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n" {
		t.Errorf("compose.yaml was rewritten: %q", b)
	}
}
