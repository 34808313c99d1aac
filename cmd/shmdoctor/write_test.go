//go:build linux

package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// requireRoot skips a test that needs root to set owners or mount; CI runs as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// nobody is the uid and gid of nobody:nogroup, an owner the tests give files.
func nobody(t *testing.T) (int, int) {
	t.Helper()
	uid, gid := 65534, 65534
	if u, err := user.Lookup("nobody"); err == nil {
		uid, _ = strconv.Atoi(u.Uid)
	}
	if g, err := user.LookupGroup("nogroup"); err == nil {
		gid, _ = strconv.Atoi(g.Gid)
	}
	return uid, gid
}

// identity is what a write must keep of a file: its links, owner, group and mode (and its
// inode, when it has other links).
type identity struct {
	nlink    uint64
	uid, gid uint32
	mode     os.FileMode
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func identityOf(t *testing.T, path string) identity {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return identity{uint64(s.Nlink), s.Uid, s.Gid, st.Mode()}
}

// TestOutputKeepsTarget: -o writes through a symlink within the project to its target,
// keeps an existing report's mode, owner and hard links, and refuses a read-only file.
func TestOutputKeepsTarget(t *testing.T) {
	requireRoot(t)
	demo := filepath.Join(repoRoot(t), "testdata", "demo")
	dir := testutil.WriteFiles(t, map[string]string{
		"real/report.json": "old\n",
		"private.json":     "old\n",
		"linked.json":      "old\n",
		"readonly.json":    "old\n",
	})
	t.Chdir(dir)
	if err := os.Symlink("real/report.json", "link.json"); err != nil {
		t.Fatal(err)
	}
	uid, gid := nobody(t)
	if err := os.Chown("private.json", uid, gid); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"private.json": 0o640, "readonly.json": 0o444} {
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link("linked.json", "other-name.json"); err != nil {
		t.Fatal(err)
	}
	before := map[string]identity{}
	for _, name := range []string{"link.json", "private.json", "linked.json", "readonly.json"} {
		before[name] = identityOf(t, name)
	}
	for _, name := range []string{"link.json", "private.json", "linked.json"} {
		code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", name, demo)
		if code != exitFindings || errs != "" {
			t.Fatalf("-o %s: exit %d, stderr %q", name, code, errs)
		}
		if got := identityOf(t, name); got != before[name] {
			t.Errorf("-o %s changed the file: %+v, was %+v", name, got, before[name])
		}
	}
	if a, b := inode(t, "linked.json"), inode(t, "other-name.json"); a != b {
		t.Errorf("the hard link was broken: inodes %d and %d", a, b)
	}
	for _, name := range []string{"real/report.json", "private.json", "linked.json", "other-name.json"} {
		if b, _ := os.ReadFile(name); !strings.HasPrefix(string(b), "{") {
			t.Errorf("%s holds %q, want the report", name, b)
		}
	}
	code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", "readonly.json", demo)
	if code != exitUsage || !strings.Contains(errs, "read-only (mode 0444)") {
		t.Errorf("-o readonly.json: exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile("readonly.json"); string(b) != "old\n" {
		t.Errorf("readonly.json was overwritten: %q", b)
	}
	if names := entries(t, dir); strings.Join(names, " ") != "link.json linked.json other-name.json private.json readonly.json real" {
		t.Errorf("the folder holds %v", names)
	}
}

// TestOutputRefusesInputs: a report is never written over a file it is made from, under
// that file's name or another, and nothing is written.
func TestOutputRefusesInputs(t *testing.T) {
	files := map[string]string{
		"compose.yaml":    "include:\n  - inc.yaml\nservices:\n  db:\n    image: postgres:${PG}\n    x-shmdoctor: {need: 200m}\n    env_file: app.env\n  web:\n    extends:\n      file: base.yaml\n      service: base\n",
		"inc.yaml":        "services:\n  cache:\n    image: redis\n",
		"base.yaml":       "services:\n  base:\n    image: alpine\n",
		".env":            "PG=16\n",
		"app.env":         "A=1\n",
		"extra.env":       "B=1\n",
		".shmdoctor.yaml": "fail-on: error\n",
		"k8s/pod.yaml":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: alpine\n",
	}
	dir := testutil.WriteFiles(t, files)
	t.Chdir(dir)
	if err := os.Symlink("compose.yaml", "alias.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := os.Link("compose.yaml", "hardlink.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"compose.yaml", "./compose.yaml", "alias.yaml", "hardlink.yaml", "inc.yaml", "base.yaml", ".env", "app.env", "extra.env", ".shmdoctor.yaml", "k8s/pod.yaml"} {
		code, stdout, errs := shmdoctor(t, "", "--probe", "never", "--env-file", ".env", "--env-file", "extra.env", "--format", "json", "-o", out, ".", "k8s/pod.yaml")
		if code != exitUsage || stdout != "" || !strings.Contains(errs, "an input of this run") {
			t.Errorf("-o %s: exit %d, stdout %q, stderr %q; want %d and a refusal", out, code, stdout, errs, exitUsage)
		}
		for name, want := range files {
			if b, _ := os.ReadFile(name); string(b) != want {
				t.Fatalf("-o %s rewrote %s: %q", out, name, b)
			}
		}
	}
	if code, _, errs := shmdoctor(t, "", "--probe", "never", "--format", "json", "-o", "report.json", ".", "k8s/pod.yaml"); code == exitUsage {
		t.Errorf("-o report.json: exit %d, stderr %q", code, errs)
	}
}

// TestFixWriteKeepsIdentity: --fix --write keeps a file's owner, group, mode and hard links.
func TestFixWriteKeepsIdentity(t *testing.T) {
	requireRoot(t)
	const before = "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"
	dir := testutil.WriteFiles(t, map[string]string{"owned/compose.yaml": before, "linked/compose.yaml": before})
	uid, gid := nobody(t)
	owned := filepath.Join(dir, "owned", "compose.yaml")
	if err := os.Chown(owned, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(owned, 0o640); err != nil {
		t.Fatal(err)
	}
	linked, other := filepath.Join(dir, "linked", "compose.yaml"), filepath.Join(dir, "other.yaml")
	if err := os.Link(linked, other); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{owned, linked} {
		was := identityOf(t, file)
		code, out, errs := shmdoctor(t, "", "--fix", "--write", filepath.Dir(file))
		if code != exitClean || !strings.Contains(out, ": fixed: ") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", file, code, out, errs)
		}
		if got := identityOf(t, file); got != was {
			t.Errorf("%s: %+v, was %+v", file, got, was)
		}
		if b, _ := os.ReadFile(file); string(b) == before {
			t.Errorf("%s was not fixed", file)
		}
	}
	if a, b := inode(t, linked), inode(t, other); a != b {
		t.Errorf("the hard link was broken: inodes %d and %d", a, b)
	}
	if b, _ := os.ReadFile(other); string(b) == before {
		t.Errorf("other.yaml, a hard link to the fixed file, was not fixed")
	}
	if names := entries(t, filepath.Join(dir, "owned")); len(names) != 1 {
		t.Errorf("owned holds %v", names)
	}
}

// TestOutputDevices writes reports to /dev/null, /dev/full and /dev/stdout as root, with the
// real binary, in a private mount namespace whose /dev is a tmpfs holding its own device
// nodes, so that the machine's /dev is never at stake: the devices stay devices, /dev/full
// reports ENOSPC with exit 2 and leaves no temporary file, and /dev/stdout goes to the file
// the shell opened for standard output, which stays where it is.
func TestOutputDevices(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare is needed: %v", err)
	}
	bin, tmp := buildDoctor(t), t.TempDir()
	const script = `set -u
mount -t tmpfs tmpfs /dev || exit 97
mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/full c 1 7 && ln -s /proc/self/fd/1 /dev/stdout || exit 98
run() { "$BIN" --probe never --format json -o "$@" testdata/demo; }
run /dev/null; echo "null $?"
run /dev/full 2>"$TMP/full.err"; echo "full $?"
run /dev/stdout >"$TMP/stdout.json"; echo "stdout $?"
run /dev/stdout | cmp - "$TMP/stdout.json" && echo "pipe same"
stat -c '%n %F' /dev/null /dev/full /dev/stdout
echo "dev $(ls -A /dev | tr '\n' ' ')"
`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "BIN="+bin, "TMP="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := `null 1
full 2
stdout 1
pipe same
/dev/null character special file
/dev/full character special file
/dev/stdout symbolic link
dev full null stdout 
`
	if string(out) != want {
		t.Errorf("in the namespace:\n%s\nwant:\n%s", out, want)
	}
	if b, _ := os.ReadFile(filepath.Join(tmp, "full.err")); !strings.Contains(string(b), "/dev/full: no space left on device") {
		t.Errorf("-o /dev/full: stderr %q", b)
	}
	t.Chdir(repoRoot(t))
	_, report, _ := shmdoctor(t, "", "--probe", "never", "--format", "json", "testdata/demo")
	if b, _ := os.ReadFile(filepath.Join(tmp, "stdout.json")); string(b) != report {
		t.Errorf("-o /dev/stdout wrote %q, want the report", b)
	}
	for _, dev := range []string{"/dev/null", "/dev/full"} {
		if st, err := os.Stat(dev); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("the machine's %s is no longer a device: %v", dev, err)
		}
	}
}
