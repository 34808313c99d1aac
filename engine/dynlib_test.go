//go:build linux

package engine

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSharedLibraries resolves the libraries of this machine's own dynamically linked ls
// (coreutils, always there): the interpreter first, then libc, each file found but not read
// until the image is made; a static executable needs none.
func TestSharedLibraries(t *testing.T) {
	f, err := elf.Open("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := sharedLibraries(f)
	if err != nil {
		t.Fatal(err)
	}
	interp, _ := interpreter(f)
	if interp == "" || len(libs) < 2 || libs[0].path != interp {
		t.Fatalf("libraries of /bin/ls: %v, want the interpreter %q first", paths(libs), interp)
	}
	var names []string
	for _, l := range libs {
		names = append(names, filepath.Base(l.path))
		if st, err := os.Stat(l.path); err != nil || l.info == nil || !os.SameFile(st, l.info) || l.data != nil {
			t.Errorf("%s: found %v, read %d bytes; want the file on disk (%v), not read yet", l.path, l.info, len(l.data), err)
			continue
		}
		want, err := os.ReadFile(l.path)
		if read, rerr := readLibraryFile(l); err != nil || rerr != nil || string(want) != string(read.data) {
			t.Errorf("%s: not the file on disk (%v, %v)", l.path, err, rerr)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "libc.") }) {
		t.Errorf("libraries of /bin/ls: %v, want libc among them", names)
	}
	if got := libraryPath(libs[1:]); got == "" || strings.Contains(got, "::") {
		t.Errorf("LD_LIBRARY_PATH %q", got)
	}

	static, err := elf.Open("/usr/bin/busybox") // busybox-static, which the watch tests need too
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	if libs, err := sharedLibraries(static); err != nil || libs != nil {
		t.Errorf("a static executable needs %v, %v", paths(libs), err)
	}
}

// TestLdSoConf reads folders and includes, relative and absolute, and skips comments.
func TestLdSoConf(t *testing.T) {
	dir := t.TempDir()
	must := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	must("ld.so.conf", "# comment\n/opt/a\ninclude conf.d/*.conf\n\n/opt/z # trailing\n")
	must("conf.d/2.conf", "/opt/c\n")
	must("conf.d/1.conf", "/opt/b\nnot/absolute\n")
	got := ldSoConf(filepath.Join(dir, "ld.so.conf"), 0)
	if want := []string{"/opt/a", "/opt/b", "/opt/c", "/opt/z"}; !slices.Equal(got, want) {
		t.Errorf("ldSoConf: %v, want %v", got, want)
	}
}

func paths(files []imageFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.path)
	}
	return out
}
