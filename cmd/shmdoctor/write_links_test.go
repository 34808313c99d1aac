//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"golang.org/x/sys/unix"
)

// checkout lays out what a pull request can plant: a git checkout (proj, holding .git and
// the demo's compose file) beside a folder outside it (outside, holding victim.sh, mode
// 0755). The test works in the checkout, as the Action does.
func checkout(t *testing.T) (proj, outside string) {
	t.Helper()
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "demo", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	proj, outside = filepath.Join(base, "proj"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(proj, ".git"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "compose.yaml"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "victim.sh"), []byte(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	return proj, outside
}

const victim = "#!/bin/sh\necho the runner's own script\n"

// tree is every name under dir with its mode and content (a link's target), to see that a
// refused write changed nothing, left nothing and created no link's target.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		var what string
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			what, err = os.Readlink(path)
		case st.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(path)
			what = string(b)
		}
		got[path] = st.Mode().String() + " " + what
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func symlink(t *testing.T, to, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, name); err != nil {
		t.Fatal(err)
	}
}

// TestOutputRefusesPlantedLinks runs what the Action runs (-r --format sarif -o FILE .) in a
// checkout where the pull request planted a symlink: at the file, in a folder on the way, in
// a chain, dangling, or outside the checkout where the user named the file. Each is refused
// with exit 2 and one line naming the path as given; nothing is written, left behind or
// created, and the victim keeps its content and mode.
func TestOutputRefusesPlantedLinks(t *testing.T) {
	for _, c := range []struct {
		name string
		// links maps a link's name (in the checkout, or OUT/ in the outside folder) to its
		// target (OUT/ is the outside folder's absolute path).
		links map[string]string
		out   string // -o; OUT/ as above
		says  string
	}{
		{"absolute link to a file outside", map[string]string{"shmdoctor.sarif": "OUT/victim.sh"}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink that leads outside the project root"},
		{"relative link to a file outside", map[string]string{"shmdoctor.sarif": "../outside/victim.sh"}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink that leads outside the project root"},
		{"chain of links inside, then outside", map[string]string{"shmdoctor.sarif": "a/b.sarif", "a/b.sarif": "../c.sarif", "c.sarif": "../outside/victim.sh"}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink that leads outside the project root"},
		{"link out of a subfolder", map[string]string{"sub/x.sarif": "../../outside/victim.sh"}, "sub/x.sarif", "sub/x.sarif is a symlink that leads outside the project root"},
		{"absolute folder link", map[string]string{"reports": "OUT"}, "reports/victim.sh", "a symlink on the way to reports/victim.sh leads outside the project root"},
		{"relative folder link", map[string]string{"reports": "../outside"}, "reports/new.sarif", "a symlink on the way to reports/new.sarif leads outside the project root"},
		{"folder link inside, then dot-dot out", map[string]string{"reports": "sub", "sub/.keep": ""}, "reports/../../outside/new.sarif", "a symlink on the way to reports/../../outside/new.sarif leads outside the project root"},
		{"dangling link outside", map[string]string{"shmdoctor.sarif": "../outside/new.sarif"}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink that leads outside the project root"},
		{"dangling link inside", map[string]string{"shmdoctor.sarif": "missing/new.sarif", "missing/.keep": ""}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink to a file that does not exist"},
		{"link to a descriptor", map[string]string{"shmdoctor.sarif": "/proc/self/fd/1"}, "shmdoctor.sarif", "shmdoctor.sarif is a symlink that leads outside the project root"},
		{"link outside the checkout", map[string]string{"OUT/link.sarif": "victim.sh"}, "OUT/link.sarif", "link.sarif is a symlink outside the project root"},
		{"folder link outside the checkout", map[string]string{"OUT/here": "."}, "OUT/here/victim.sh", "a symlink on the way to OUT/here/victim.sh stands outside the project root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			proj, outside := checkout(t)
			abs := func(s string) string { return strings.ReplaceAll(s, "OUT", outside) }
			for name, to := range c.links {
				if to == "" {
					if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				symlink(t, abs(to), abs(name))
			}
			before, beforeOut := tree(t, proj), tree(t, outside)
			out := abs(c.out)
			code, stdout, errs := shmdoctor(t, "", "-r", "--probe", "never", "--format", "sarif", "-o", out, ".")
			if code != exitUsage || stdout != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, abs(c.says)) {
				t.Errorf("-o %s: exit %d, stdout %q, stderr %q; want %d and one line saying %q", c.out, code, stdout, errs, exitUsage, abs(c.says))
			}
			for what, want := range map[string]map[string]string{proj: before, outside: beforeOut} {
				got := tree(t, what)
				for name, was := range want {
					if got[name] != was {
						t.Errorf("%s became %q, was %q", name, got[name], was)
					}
				}
				for name := range got {
					if _, ok := want[name]; !ok {
						t.Errorf("%s was left behind", name)
					}
				}
			}
		})
	}
}

// TestOutputAllowedPlaces: what the user names without a planted link is written: a file
// outside the checkout given as ../ or absolute, and links that stay inside the checkout
// (a folder link, a link with an absolute target).
func TestOutputAllowedPlaces(t *testing.T) {
	proj, outside := checkout(t)
	if err := os.Mkdir(filepath.Join(proj, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "sub", filepath.Join(proj, "reports"))
	symlink(t, filepath.Join(proj, "sub", "abs.json"), filepath.Join(proj, "abs.json"))
	if err := os.WriteFile(filepath.Join(proj, "sub", "abs.json"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for out, file := range map[string]string{
		"../outside/report.json":                 filepath.Join(outside, "report.json"),
		filepath.Join(outside, "abs.json"):       filepath.Join(outside, "abs.json"),
		"reports/r.json":                         filepath.Join(proj, "sub", "r.json"),
		"abs.json":                               filepath.Join(proj, "sub", "abs.json"),
		"sub/../reports/../sub/dots.json":        filepath.Join(proj, "sub", "dots.json"),
		filepath.Join(proj, "reports", "a.json"): filepath.Join(proj, "sub", "a.json"),
	} {
		code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", out, ".")
		if code != exitFindings || errs != "" {
			t.Errorf("-o %s: exit %d, stderr %q", out, code, errs)
		}
		if b, err := os.ReadFile(file); err != nil || !strings.HasPrefix(string(b), "{") {
			t.Errorf("-o %s: %s holds %q (%v), want the report", out, file, b, err)
		}
	}
	if st, err := os.Lstat("abs.json"); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("abs.json is no longer a link: %v", err)
	}
	if st, err := os.Stat("abs.json"); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("sub/abs.json lost its mode: %v", err)
	}
}

// TestOutputAboveRoot: the folders above the project root are the user's, as named: a
// checkout reached through a link of the user's own (alias -> real) writes above itself,
// by an absolute name or by ../, while a planted link inside it is still refused.
func TestOutputAboveRoot(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "real", "proj", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(base, "alias"))
	demo, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "demo", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "real", "proj", "compose.yaml"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "alias", "proj")) // PWD keeps the name through the link
	for _, out := range []string{filepath.Join(base, "alias", "abs.json"), "../rel.json"} {
		if code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", out, "."); code != exitFindings || errs != "" {
			t.Errorf("-o %s: exit %d, stderr %q", out, code, errs)
		}
	}
	if names := entries(t, filepath.Join(base, "real")); strings.Join(names, " ") != "abs.json proj rel.json" {
		t.Errorf("real holds %v", names)
	}
	symlink(t, "..", "up")
	if code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", "up/planted.json", "."); code != exitUsage || !strings.Contains(errs, "leads outside the project root") {
		t.Errorf("-o up/planted.json: exit %d, stderr %q", code, errs)
	}
}

// TestBaselineRefusesDanglingLink: the baseline command's default file, planted as a link
// to a file that does not exist outside the checkout, is refused and its target not made.
func TestBaselineRefusesDanglingLink(t *testing.T) {
	proj, outside := checkout(t)
	symlink(t, "../outside/accepted.json", filepath.Join(proj, defaultBaseline))
	code, stdout, errs := shmdoctor(t, "", "baseline", "--probe", "never", "-r", ".")
	if code != exitUsage || stdout != "" || !strings.Contains(errs, defaultBaseline+" is a symlink that leads outside the project root") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	if names := entries(t, outside); len(names) != 1 {
		t.Errorf("outside holds %v, want victim.sh alone", names)
	}
}

// TestFixWriteRefusesOutsideLink: --fix --write does not rewrite a compose file that is a
// symlink to a file outside the checkout, nor any other file of the run.
func TestFixWriteRefusesOutsideLink(t *testing.T) {
	proj, outside := checkout(t)
	const stack = "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"
	for name, content := range map[string]string{filepath.Join(outside, "compose.yaml"): stack, filepath.Join(proj, "inside", "compose.yaml"): stack} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(proj, "compose.yaml")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../../outside/compose.yaml", filepath.Join(proj, "linked", "compose.yaml"))
	before := tree(t, outside)
	// The loader refuses the file outside first (reads are confined too): a load error, exit
	// 2, nothing outside written; the run's other project is still fixed, as it is analysed.
	code, _, errs := shmdoctor(t, "", "--fix", "--write", "-r", ".")
	if code != exitUsage || !strings.Contains(errs, "linked/compose.yaml: resolves outside the project root") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	for name, was := range before {
		if got := tree(t, outside)[name]; got != was {
			t.Errorf("%s became %q, was %q", name, got, was)
		}
	}

	// The writer itself, whatever the loader does.
	link := filepath.Join(proj, "linked", "compose.yaml")
	err := replaceFiles([]fix.FileChange{{Path: link, Name: "linked/compose.yaml", Before: []byte(stack), After: []byte("fixed\n")}})
	if err == nil || !strings.Contains(err.Error(), link+" is a symlink that leads outside the project root") {
		t.Errorf("replaceFiles: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "compose.yaml")); string(b) != stack {
		t.Errorf("the file outside was rewritten: %q", b)
	}
}

// TestOutputFolderSwapped: a folder on the way is swapped for a link to the outside folder
// after the write was prepared (the staged file is in it) and before it is committed. The
// report still lands in the folder that was checked, and nothing reaches the outside.
func TestOutputFolderSwapped(t *testing.T) {
	proj, outside := checkout(t)
	if err := os.Mkdir(filepath.Join(proj, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := prepareWrite("reports/r.json", []byte("report\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename("reports", "checked"); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, "reports")
	if err := w.commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join("checked", "r.json")); err != nil || string(b) != "report\n" {
		t.Errorf("checked/r.json: %q, %v", b, err)
	}
	if names := entries(t, outside); len(names) != 1 {
		t.Errorf("outside holds %v, want victim.sh alone", names)
	}
	if names := entries(t, "checked"); len(names) != 1 {
		t.Errorf("checked holds %v", names)
	}
}

// TestOutputFolderFlips swaps a folder on the way with a link to the outside folder, over
// and over (renameat2 RENAME_EXCHANGE, atomic), while reports are written into it: each
// write lands in the real folder or is refused, never outside, and leaves no staged file.
func TestOutputFolderFlips(t *testing.T) {
	proj, outside := checkout(t)
	if err := os.Mkdir(filepath.Join(proj, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(proj, "flip"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	flips := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, "reports", unix.AT_FDCWD, "flip", unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			flips++
		}
	}()
	written, refused := 0, 0
	for range 300 {
		err := writeFile("reports/r.json", []byte("report\n"))
		var pe *os.PathError
		switch {
		case err == nil:
			written++
		case strings.Contains(err.Error(), "leads outside the project root") || strings.Contains(err.Error(), "was replaced while") || errors.As(err, &pe):
			refused++ // the link met, the folder swapped under the walk, or a name gone
		default:
			t.Errorf("write: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d flips: %d writes landed, %d refused", flips, written, refused)
	if names := entries(t, outside); len(names) != 1 {
		t.Errorf("outside holds %v, want victim.sh alone", names)
	}
	real := "reports"
	if st, err := os.Lstat(real); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		real = "flip"
	}
	if names := entries(t, real); len(names) > 1 {
		t.Errorf("the real folder holds %v, want r.json at most", names)
	}
}
