//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// annotations counts the workflow commands (inline annotations) in a log.
func annotations(log string) int {
	return len(regexp.MustCompile(`(?m)^::(error|warning|notice) `).FindAllString(log, -1))
}

// TestGitHubActionInputs runs the action's steps as written on the demo stack with each input
// the README names: several formats at once (one on the log, each other in a file of its
// own), a config file, a baseline and extra arguments.
func TestGitHubActionInputs(t *testing.T) {
	a := readAction(t)
	demo := filepath.Join(root(t), "testdata", "demo")

	t.Run("every format", func(t *testing.T) {
		work := copyTree(t, demo)
		r := runAction(t, a, map[string]string{"formats": "text json github junit codeclimate sarif"}, work)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.log)
		}
		want := "shmdoctor.txt shmdoctor.json shmdoctor.junit.xml shmdoctor.codeclimate.json shmdoctor.sarif"
		if r.outputs["reports"] != want || r.outputs["sarif-file"] != "shmdoctor.sarif" {
			t.Errorf("outputs %v, want reports %q", r.outputs, want)
		}
		locs := sarifLocations(t, filepath.Join(work, "shmdoctor.sarif"))
		if n := annotations(r.log); n == 0 || n != len(locs) {
			t.Errorf("%d annotations on the log, %d SARIF results\n%s", n, len(locs), r.log)
		}
		if text := readFile(t, filepath.Join(work, "shmdoctor.txt")); !strings.Contains(text, "SHM012 compose.yaml:29:5") {
			t.Errorf("shmdoctor.txt is no text report:\n%s", text)
		}
		var doc struct {
			Projects []struct{ Findings []struct{ Rule string } }
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(work, "shmdoctor.json"))), &doc); err != nil || len(doc.Projects) != 1 || len(doc.Projects[0].Findings) != len(locs) {
			t.Errorf("shmdoctor.json: %v, %+v, want %d findings", err, doc, len(locs))
		}
		var issues []struct {
			CheckName string `json:"check_name"`
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(work, "shmdoctor.codeclimate.json"))), &issues); err != nil || len(issues) != len(locs) {
			t.Errorf("shmdoctor.codeclimate.json: %v, %d issues, want %d", err, len(issues), len(locs))
		}
		if x := readFile(t, filepath.Join(work, "shmdoctor.junit.xml")); !strings.Contains(x, "<testsuite") || !strings.Contains(x, "SHM012") {
			t.Errorf("shmdoctor.junit.xml is no JUnit report:\n%s", x)
		}
	})
	t.Run("text on the log", func(t *testing.T) {
		work := copyTree(t, demo)
		r := runAction(t, a, map[string]string{"formats": "text json text", "fail-on": "never"}, work)
		if r.code != 0 || r.outputs["reports"] != "shmdoctor.json" || r.outputs["sarif-file"] != "" {
			t.Fatalf("exit %d, outputs %v, want 0 and shmdoctor.json alone\n%s", r.code, r.outputs, r.log)
		}
		if !strings.Contains(r.log, "SHM012 compose.yaml:29:5") || annotations(r.log) != 0 {
			t.Errorf("want the text report on the log\n%s", r.log)
		}
		if _, err := os.Stat(filepath.Join(work, "shmdoctor.txt")); err == nil {
			t.Error("the format on the log was written to a file too")
		}
	})
	t.Run("config", func(t *testing.T) {
		work := copyTree(t, demo)
		if err := os.MkdirAll(filepath.Join(work, "ci"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "ci", "shmdoctor.yaml"), []byte("ignore:\n  - SHM012 the test ignores it\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runAction(t, a, map[string]string{"formats": "github", "config": "ci/shmdoctor.yaml"}, work)
		if r.code != 1 || strings.Contains(r.log, "SHM012") || !strings.Contains(r.log, "SHM011") {
			t.Errorf("exit %d, want 1 with SHM011 and without the SHM012 the config ignores\n%s", r.code, r.log)
		}
	})
	t.Run("baseline", func(t *testing.T) {
		work := copyTree(t, demo)
		if b := runIn(t, work, nil, filepath.Join(doctorPath(t), "shmdoctor"), "baseline", "-r", "-o", "base.json", "."); b.code != 0 {
			t.Fatalf("shmdoctor baseline: exit %d\n%s%s", b.code, b.stdout, b.stderr)
		}
		r := runAction(t, a, map[string]string{"baseline": "base.json"}, work)
		if r.code != 0 || annotations(r.log) != 0 {
			t.Errorf("exit %d with %d annotations, want 0 and none: the baseline holds every finding\n%s", r.code, annotations(r.log), r.log)
		}
	})
	t.Run("args", func(t *testing.T) {
		work := t.TempDir()
		if r := runAction(t, a, map[string]string{"formats": "text"}, work); r.code != 2 {
			t.Errorf("no stack: exit %d, want 2\n%s", r.code, r.log)
		}
		if r := runAction(t, a, map[string]string{"formats": "text", "args": "--allow-empty --no-config"}, work); r.code != 0 {
			t.Errorf("no stack with args --allow-empty: exit %d, want 0\n%s", r.code, r.log)
		}
	})
}

// TestGitHubActionDoctor runs the action with each doctor it takes, with no Go on PATH, so
// that nothing is built from source: a binary, a release downloaded from a server holding it
// with its SHA256SUMS (a wrong checksum fails the step), and an image on the engine, run
// with --pull=never (a missing image fails the step, nothing is pulled).
func TestGitHubActionDoctor(t *testing.T) {
	a := readAction(t)
	const version = "v9.8.7"
	dist := t.TempDir()
	name := fmt.Sprintf("shmdoctor_%s_linux_%s", version, runtime.GOARCH)
	bin := filepath.Join(dist, name)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.buildVersion="+version, "-o", bin, "./cmd/shmdoctor")
	build.Dir = root(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums := hex.EncodeToString(sum[:]) + "  " + name + "\n"
	bad := strings.Repeat("0", 64) + "  " + name + "\n"
	var served = map[string]string{"SHA256SUMS": sums}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/" + version + "/" + name:
			_, _ = w.Write(data)
		case "/" + version + "/SHA256SUMS":
			_, _ = w.Write([]byte(served["SHA256SUMS"]))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	// PATH without the folder holding go.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err != nil && d != filepath.Dir(goBin) {
			path = append(path, d)
		}
	}
	env := []string{"PATH=" + strings.Join(path, string(os.PathListSeparator))}

	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	image := fmt.Sprintf("localhost/shmdoctor-actiontest:%d", os.Getpid())
	removeAfter(t, c, image)
	removeAfter(t, c, "shmdoctor-probe:"+hex.EncodeToString(sum[:])[:12])
	context := t.TempDir()
	if err := os.WriteFile(filepath.Join(context, "Dockerfile"), []byte(readFile(t, filepath.Join(root(t), "Dockerfile"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(context, "shmdoctor"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, context, nil, "docker", "build", "-q", "-t", image, "."); r.code != 0 {
		t.Fatalf("docker build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, c := range []struct {
		name string
		with map[string]string
		sums string
		code int
		log  string // in the log
	}{
		{"binary", map[string]string{"binary": bin}, sums, 1, version},
		{"release", map[string]string{"release": version, "release-url": srv.URL}, sums, 1, version},
		{"release, wrong checksum", map[string]string{"release": version, "release-url": srv.URL}, bad, 1, "FAILED"},
		{"release missing", map[string]string{"release": "v0.0.0", "release-url": srv.URL}, sums, 22, "404"},
		{"image", map[string]string{"image": image}, sums, 1, version},
		{"image missing", map[string]string{"image": image + "-missing"}, sums, 1, "never pulled"},
		{"image, probe", map[string]string{"image": image, "probe": "always", "formats": "text"}, sums, 0, "ok 256 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			served["SHA256SUMS"] = c.sums
			var work string
			if c.with["probe"] == "always" {
				work = t.TempDir()
				if err := os.WriteFile(filepath.Join(work, "compose.yaml"), []byte("services:\n  web:\n    image: nginx\n    shm_size: 256m\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				work = copyTree(t, filepath.Join(root(t), "testdata", "demo"))
			}
			r := runActionEnv(t, a, c.with, work, env)
			if r.code != c.code || !strings.Contains(r.log, c.log) {
				t.Fatalf("exit %d, want %d with %q in the log\n%s", r.code, c.code, c.log, r.log)
			}
			if strings.Contains(r.log, "go: command not found") || strings.Contains(r.log, "add actions/setup-go") {
				t.Fatalf("the action tried to build\n%s", r.log)
			}
			if c.code != 1 || c.log != version {
				return
			}
			locs := sarifLocations(t, filepath.Join(work, "shmdoctor.sarif"))
			if n := annotations(r.log); n == 0 || n != len(locs) || slices.ContainsFunc(locs, func(l string) bool { return l != "%SRCROOT%:compose.yaml" }) {
				t.Errorf("%d annotations, SARIF results %v\n%s", n, locs, r.log)
			}
		})
	}
	if r := runIn(t, root(t), nil, "docker", "image", "inspect", image+"-missing"); r.code == 0 {
		t.Errorf("%s-missing is on the engine: it was pulled", image)
	}
}
