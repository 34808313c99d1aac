//go:build linux

package integration

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoInstallLatest runs the README's install line, `go install
// github.com/shmdoctor/shmdoctor/cmd/shmdoctor@latest`, against a module proxy in a folder
// that serves this checkout as the module's newest version (a pseudo-version of its commit),
// the way the Go module proxy serves a commit of the repository. The dependencies come from
// the machine's module cache, itself a proxy, into a private module cache: nothing of the
// machine's changes and nothing is fetched from a network. The binary it installs reports
// the pseudo-version and finds the demo's problems.
func TestGoInstallLatest(t *testing.T) {
	const module = "github.com/shmdoctor/shmdoctor"
	src := root(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	modcache := strings.TrimSpace(runIn(t, src, nil, goBin, "env", "GOMODCACHE").stdout)
	if modcache == "" {
		t.Fatal("go env GOMODCACHE printed nothing")
	}
	commit := strings.TrimSpace(runIn(t, src, nil, "git", "rev-parse", "HEAD").stdout)
	if len(commit) < 12 {
		t.Fatalf("git rev-parse HEAD: %q", commit)
	}
	version := "v0.0.0-20261202000000-" + commit[:12]

	proxy := t.TempDir()
	at := filepath.Join(proxy, module, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2026-12-02T00:00:00Z"})
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		filepath.Join(at, "list"):               nil,
		filepath.Join(at, version+".info"):      info,
		filepath.Join(at, version+".mod"):       gomod,
		filepath.Join(proxy, module, "@latest"): info,
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModuleZip(t, src, filepath.Join(at, version+".zip"), module+"@"+version+"/")

	home := t.TempDir()
	gobin := filepath.Join(home, "bin")
	env := []string{
		"GOPROXY=file://" + proxy + ",file://" + filepath.Join(modcache, "cache", "download"),
		"GOMODCACHE=" + filepath.Join(home, "mod"), "GOFLAGS=-modcacherw", "GONOSUMDB=" + module,
		"GOSUMDB=off", "GOBIN=" + gobin, "GOWORK=off",
	}
	r := runIn(t, home, env, goBin, "install", module+"/cmd/shmdoctor@latest")
	if r.code != 0 {
		t.Fatalf("go install %s/cmd/shmdoctor@latest: exit %d\n%s%s", module, r.code, r.stdout, r.stderr)
	}
	bin := filepath.Join(gobin, "shmdoctor")
	if v := versionOf(t, home, nil, bin); v != version {
		t.Errorf("the installed doctor says version %q, want %q", v, version)
	}
	demo := runIn(t, filepath.Join(src, "testdata", "demo"), []string{"NO_COLOR=1"}, bin, "--probe", "never", "--no-config", ".")
	if demo.code != 1 || !strings.Contains(demo.stdout, "SHM") {
		t.Errorf("the installed doctor on the demo: exit %d, want 1 with findings\n%s%s", demo.code, demo.stdout, demo.stderr)
	}
}

// writeModuleZip writes the module zip of the checkout's files (checkoutFiles), each under
// prefix, as a module proxy serves it.
func writeModuleZip(t *testing.T, src, path, prefix string) {
	t.Helper()
	names := checkoutFiles(t, src)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(prefix + filepath.ToSlash(name))
		if err == nil {
			_, err = w.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
