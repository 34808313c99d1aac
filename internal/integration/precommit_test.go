//go:build !windows

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// preCommitRepo is a scratch repository a hook runs in: files committed first, then files
// staged, the change pre-commit checks.
type preCommitRepo struct {
	name              string
	committed, staged map[string]string
	want              int    // pre-commit's exit status
	finding           string // in the output when want is 1
}

const (
	gpuVariant     = "services:\n  trainer:\n    image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime\n    ipc: host\n    shm_size: 8g\n"
	cleanVariant   = "services:\n  web:\n    image: nginx:1.27\n"
	vllmDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  template:\n    spec:\n      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.6.3\n          args: [--tensor-parallel-size, \"2\"]\n          resources:\n            limits:\n              nvidia.com/gpu: 2\n"
	// YAML files that are neither compose files nor manifests, services keys included.
	ciWorkflow = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    services:\n      redis:\n        image: redis\n    steps:\n      - run: make test\n"
	gitlabCI   = "services:\n  - docker:dind\ntest:\n  script: [make test]\n"
	helmValues = "replicaCount: 1\nservices:\n  web:\n    image:\n      repository: nginx\n"
)

var preCommitRepos = []preCommitRepo{
	// The repository's only stack is a variant: -r checks it alone, on its findings.
	{name: "variant only", staged: map[string]string{"docker-compose.gpu.yml": gpuVariant}, want: 1, finding: "SHM001 docker-compose.gpu.yml"},
	{name: "clean variant only", staged: map[string]string{"docker-compose.gpu.yml": cleanVariant}},
	// A manifest of any name triggers the hook.
	{name: "manifest change", committed: map[string]string{"compose.yaml": cleanVariant},
		staged: map[string]string{"k8s/serving.yaml": vllmDeployment}, want: 1, finding: "SHM101 k8s/serving.yaml"},
	// Other YAML files trigger it too, and are left alone.
	{name: "clean repository", committed: map[string]string{"compose.yaml": cleanVariant, "chart/values.yaml": helmValues},
		staged: map[string]string{".github/workflows/ci.yml": ciWorkflow, ".gitlab-ci.yml": gitlabCI}},
	{name: "no stack", staged: map[string]string{".github/workflows/ci.yml": ciWorkflow, "chart/values.yaml": helmValues}},
}

// TestPreCommit runs each hook of .pre-commit-hooks.yaml with Debian's pre-commit, from a
// clean checkout of this repository with no tag, pinned by its commit as the README says to
// pin it, on scratch repositories: shmdoctor-system with the doctor on PATH, shmdoctor-docker
// with the image `make image` builds and names, localhost/shmdoctor:COMMIT (its entry named in
// the config with --pull=never, as the README says; an image missing from the engine fails the
// hook and is not pulled), and shmdoctor (golang),
// which pre-commit builds with `go install` and the Go on PATH; it shares this machine's module
// cache, so it needs the Go module proxy only for modules not already there.
func TestPreCommit(t *testing.T) {
	if _, err := exec.LookPath("pre-commit"); err != nil {
		t.Skip("pre-commit is not installed (.ci/run installs it)")
	}
	if r := runIn(t, root(t), nil, "pre-commit", "validate-manifest", ".pre-commit-hooks.yaml"); r.code != 0 {
		t.Fatalf("pre-commit validate-manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	hooks := filepath.Join(t.TempDir(), "shmdoctor")
	rev := checkoutTag(t, hooks, "")
	home := t.TempDir()
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PRE_COMMIT_HOME=" + home, "GOMODCACHE=" + strings.TrimSpace(string(gomodcache)),
		"NO_COLOR=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}

	t.Run("shmdoctor-system", func(t *testing.T) {
		runPreCommit(t, hooks, rev, "shmdoctor-system", "", append([]string{withPath(doctorPath(t))}, env...))
	})
	t.Run("shmdoctor-docker", func(t *testing.T) {
		c, err := client.New(client.FromEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The name make image prints: the commit's, as git describe gives it with no tag.
		short := strings.TrimSpace(runIn(t, hooks, nil, "git", "rev-parse", "--short", "HEAD").stdout)
		image := "localhost/shmdoctor:" + short
		removeAfter(t, c, image)
		r := runIn(t, hooks, nil, "make", "-s", "image")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || lines[len(lines)-1] != image {
			t.Fatalf("make image: exit %d, want %s printed last\n%s%s", r.code, image, r.stdout, r.stderr)
		}
		if r := runIn(t, hooks, nil, "docker", "image", "inspect", image); r.code != 0 {
			t.Fatalf("docker image inspect %s: exit %d\n%s", image, r.code, r.stderr)
		}
		runPreCommit(t, hooks, rev, "shmdoctor-docker", "--pull=never "+image, env)
		missing := image + "-missing"
		out := runPreCommitOnce(t, hooks, rev, "shmdoctor-docker", "--pull=never "+missing, env, preCommitRepos[0])
		if !strings.Contains(out, "No such image") {
			t.Errorf("a missing image: want docker's No such image, nothing pulled\n%s", out)
		}
		if r := runIn(t, hooks, nil, "docker", "image", "inspect", missing); r.code == 0 {
			t.Errorf("%s is on the engine: it was pulled", missing)
			removeAfter(t, c, missing)
		}
	})
	t.Run("shmdoctor", func(t *testing.T) {
		// No doctor on PATH: the one that runs is the one pre-commit built.
		if p, err := exec.LookPath("shmdoctor"); err == nil {
			t.Logf("%s is on PATH; pre-commit puts its own build first", p)
		}
		runPreCommit(t, hooks, rev, "shmdoctor", "", env)
	})
}

// runPreCommit runs `pre-commit run` with the hook id from the repository hooks, at the
// commit rev, on each scratch repository; entry, when set, replaces the hook's entry.
func runPreCommit(t *testing.T, hooks, rev, id, entry string, env []string) {
	t.Helper()
	for _, c := range preCommitRepos {
		t.Run(c.name, func(t *testing.T) {
			r := preCommitIn(t, hooks, rev, id, entry, env, c)
			out := r.stdout + r.stderr
			if r.code != c.want || !strings.Contains(out, "Passed") && !strings.Contains(out, "Failed") {
				t.Fatalf("pre-commit run: exit %d, want %d with the hook run (not skipped)\n%s", r.code, c.want, out)
			}
			if c.want == 1 && !strings.Contains(out, c.finding) {
				t.Errorf("output has no %q\n%s", c.finding, out)
			}
		})
	}
}

// runPreCommitOnce runs the hook on one scratch repository, expecting it to fail with exit
// 1, and returns pre-commit's output.
func runPreCommitOnce(t *testing.T, hooks, rev, id, entry string, env []string, c preCommitRepo) string {
	t.Helper()
	r := preCommitIn(t, hooks, rev, id, entry, env, c)
	if r.code != 1 {
		t.Errorf("pre-commit run: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	return r.stdout + r.stderr
}

// preCommitIn makes the scratch repository c and runs pre-commit in it.
func preCommitIn(t *testing.T, hooks, rev, id, entry string, env []string, c preCommitRepo) result {
	t.Helper()
	config := fmt.Sprintf("repos:\n  - repo: %s\n    rev: %s\n    hooks:\n      - id: %s\n", hooks, rev, id)
	if entry != "" {
		config += "        entry: " + entry + "\n"
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if r := runIn(t, dir, env, "git", args...); r.code != 0 {
			t.Fatalf("git %v: %s", args, r.stderr)
		}
	}
	write := func(files map[string]string) {
		for name, text := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write(map[string]string{".pre-commit-config.yaml": config, "README.md": "scratch\n"})
	write(c.committed)
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	write(c.staged)
	git("add", "-A")
	return runIn(t, dir, env, "pre-commit", "run")
}
