//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// versionOf runs bin version --format json and returns the version.
func versionOf(t *testing.T, dir string, env []string, bin string, args ...string) string {
	t.Helper()
	r := runIn(t, dir, env, bin, append(args, "version", "--format", "json")...)
	var v struct{ Version string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("%s version: exit %d, %v\n%s%s", bin, r.code, err, r.stdout, r.stderr)
	}
	return v.Version
}

// TestVersionDescribe builds with make in a clone with a tag and in one without: the version
// is the tag, else the commit as git describe abbreviates it, with -dirty once a tracked
// file changes.
func TestVersionDescribe(t *testing.T) {
	tagged := filepath.Join(t.TempDir(), "tagged")
	checkoutTag(t, tagged, "v9.8.7")
	if r := runIn(t, tagged, nil, "make", "-s", "build"); r.code != 0 {
		t.Fatalf("make build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := versionOf(t, tagged, nil, filepath.Join(tagged, "bin", "shmdoctor")); v != "v9.8.7" {
		t.Errorf("tagged clone: version %q, want v9.8.7", v)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	checkoutTag(t, plain, "")
	short := strings.TrimSpace(runIn(t, plain, nil, "git", "rev-parse", "--short", "HEAD").stdout)
	if len(short) < 7 {
		t.Fatalf("git rev-parse --short: %q", short)
	}
	for _, want := range []string{short, short + "-dirty"} {
		if r := runIn(t, plain, nil, "make", "-s", "build"); r.code != 0 {
			t.Fatalf("make build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if v := versionOf(t, plain, nil, filepath.Join(plain, "bin", "shmdoctor")); v != want {
			t.Errorf("clone without a tag: version %q, want %q", v, want)
		}
		f, err := os.OpenFile(filepath.Join(plain, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString("\nchanged\n")
		f.Close()
	}
}

// TestReleaseTargets runs `make release` as written, every default target, in a tagged
// clone: dist holds one binary per linux and darwin on amd64 and arm64 and
// SHA256SUMS naming exactly them with their checksums; each binary's header (ELF, Mach-O, PE)
// and the build settings go version -m reads are of the platform its name says.
func TestReleaseTargets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	checkoutTag(t, dir, "v9.8.7")
	if r := runIn(t, dir, nil, "make", "release"); r.code != 0 {
		t.Fatalf("make release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	dist := filepath.Join(dir, "dist")
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	var want []string
	for _, os := range []string{"darwin", "linux"} {
		for _, arch := range []string{"amd64", "arm64"} {
			name := "shmdoctor_v9.8.7_" + os + "_" + arch
			if os == "windows" {
				name += ".exe"
			}
			want = append(want, name)
		}
	}
	if all := append([]string{"SHA256SUMS"}, want...); !slices.Equal(files, all) { // ReadDir sorts: upper case first
		t.Fatalf("dist holds %v, want %v and SHA256SUMS", files, want)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(readFile(t, filepath.Join(dist, "SHA256SUMS")))))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum) {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		sums[name] = sum
	}
	if len(sums) != len(want) {
		t.Errorf("SHA256SUMS names %d files, want %d", len(sums), len(want))
	}
	// sha256sum -c, as a user checks a download.
	if r := runIn(t, dist, nil, "sha256sum", "-c", "--strict", "SHA256SUMS"); r.code != 0 {
		t.Errorf("sha256sum -c: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, name := range want {
		file := filepath.Join(dist, name)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sums[name] {
			t.Errorf("%s: checksum %x, SHA256SUMS says %s", name, got, sums[name])
		}
		parts := strings.Split(strings.TrimSuffix(name, ".exe"), "_")
		goos, goarch := parts[2], parts[3]
		if h := header(t, file, goos); h != goarch {
			t.Errorf("%s: the %s header is for %s", name, goos, h)
		}
		out, err := exec.Command("go", "version", "-m", file).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", name, err)
		}
		for _, s := range []string{"\tbuild\tGOOS=" + goos + "\n", "\tbuild\tGOARCH=" + goarch + "\n", "\tbuild\tCGO_ENABLED=0\n", "\tbuild\t-tags=embedagents\n"} {
			if !strings.Contains(string(out), s) {
				t.Errorf("go version -m %s has no %q\n%s", name, strings.TrimSpace(s), out)
			}
		}
	}
}

// header reads the architecture from the executable's header in goos's format, as GOARCH.
func header(t *testing.T, file, goos string) string {
	t.Helper()
	switch goos {
	case "linux":
		f, err := elf.Open(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		defer f.Close()
		return map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	case "darwin":
		f, err := macho.Open(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		defer f.Close()
		return map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	case "windows":
		f, err := pe.Open(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		defer f.Close()
		return map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
	}
	t.Fatalf("no header reader for %s", goos)
	return ""
}

// TestInstallTargets runs make install and make install-plugin as the README says, in a
// tagged clone: install puts the doctor in GOBIN; install-plugin puts it where the docker CLI
// reads plugins, $DOCKER_CONFIG/cli-plugins when DOCKER_CONFIG is set (and nothing in
// ~/.docker), else ~/.docker/cli-plugins, and `docker shmdoctor --version` runs it.
func TestInstallTargets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	checkoutTag(t, dir, "v9.8.7")

	gobin := t.TempDir()
	if r := runIn(t, dir, []string{"GOBIN=" + gobin}, "make", "install"); r.code != 0 {
		t.Fatalf("make install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := versionOf(t, dir, nil, filepath.Join(gobin, "shmdoctor")); v != "v9.8.7" {
		t.Errorf("make install: version %q, want v9.8.7", v)
	}

	// Go's caches stay where they are when HOME moves.
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := strings.Fields(string(goenv))
	if len(vals) != 3 {
		t.Fatalf("go env: %q", goenv)
	}
	caches := []string{"GOCACHE=" + vals[0], "GOMODCACHE=" + vals[1], "GOPATH=" + vals[2]}
	for _, c := range []struct {
		name   string
		config bool // DOCKER_CONFIG set
	}{{"DOCKER_CONFIG", true}, {"home", false}} {
		t.Run(c.name, func(t *testing.T) {
			home, config := t.TempDir(), t.TempDir()
			env := append([]string{"HOME=" + home, "DOCKER_CONFIG="}, caches...)
			plugins := filepath.Join(home, ".docker", "cli-plugins")
			if c.config {
				env = append([]string{"HOME=" + home, "DOCKER_CONFIG=" + config}, caches...)
				plugins = filepath.Join(config, "cli-plugins")
			}
			if r := runIn(t, dir, env, "make", "install-plugin"); r.code != 0 {
				t.Fatalf("make install-plugin: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if st, err := os.Stat(filepath.Join(plugins, "docker-shmdoctor")); err != nil || st.Mode()&0o111 == 0 {
				t.Fatalf("no executable docker-shmdoctor in %s: %v", plugins, err)
			}
			if c.config {
				if _, err := os.Stat(filepath.Join(home, ".docker")); err == nil {
					t.Errorf("~/.docker was written with DOCKER_CONFIG set")
				}
			}
			r := runIn(t, t.TempDir(), env, "docker", "shmdoctor", "--version")
			if r.code != 0 || !strings.Contains(r.stdout, "v9.8.7") {
				t.Errorf("docker shmdoctor --version: exit %d, want v9.8.7\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestReadmeNoTag holds the install texts to the repository: while it has no tag, no text
// pins one (no uses: ...@v1, no rev: v0.1.0, no image tag of a release), and the docs say how
// to get the commit that is pinned instead.
func TestReadmeNoTag(t *testing.T) {
	r := runIn(t, root(t), nil, "git", "tag", "--list")
	if r.code != 0 {
		t.Fatalf("git tag: %s", r.stderr)
	}
	if strings.TrimSpace(r.stdout) != "" {
		t.Skipf("the repository has tags: %s", strings.Fields(r.stdout)[0])
	}
	repo := strings.TrimPrefix(modulePath(t), "github.com/")
	tagged := regexp.MustCompile(regexp.QuoteMeta(repo) + `@v\d|rev:\s*v\d|shmdoctor:v\d|/cmd/shmdoctor@v\d`)
	files := []string{"README.md", ".pre-commit-hooks.yaml", "action.yml"}
	for _, glob := range []string{"docs/*.md", "docs/ci/*"} {
		found, _ := filepath.Glob(filepath.Join(root(t), filepath.FromSlash(glob)))
		for _, f := range found {
			rel, _ := filepath.Rel(root(t), f)
			files = append(files, rel)
		}
	}
	for _, f := range files {
		for i, line := range strings.Split(readFile(t, filepath.Join(root(t), f)), "\n") {
			if m := tagged.FindString(line); m != "" {
				t.Errorf("%s:%d: %q pins a tag, and the repository has none", f, i+1, m)
			}
		}
	}
	install := readFile(t, filepath.Join(root(t), "docs", "install.md"))
	ci := readFile(t, filepath.Join(root(t), "docs", "ci.md"))
	for _, s := range []string{"git ls-remote https://" + modulePath(t) + " HEAD", "COMMIT_SHA"} {
		if !strings.Contains(install, s) {
			t.Errorf("docs/install.md has no %q", s)
		}
	}
	for _, s := range []string{"uses: " + repo + "@COMMIT_SHA", "rev: COMMIT_SHA", "--pull=never localhost/shmdoctor:"} {
		if !strings.Contains(ci, s) {
			t.Errorf("docs/ci.md has no %q", s)
		}
	}
}
