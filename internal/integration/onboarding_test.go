//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnboardingScript lints docs/onboarding.sh and runs it against the real Docker Engine
// (here and in CI one answers): a need the host can give, one it cannot, an invalid size, no
// docker CLI, and an engine that does not answer each end with their own exit status and
// say what to do.
func TestOnboardingScript(t *testing.T) {
	script := filepath.Join(root(t), "docs", "onboarding.sh")
	t.Run("shellcheck", func(t *testing.T) {
		shellcheck, err := exec.LookPath("shellcheck")
		if err != nil {
			t.Skip("shellcheck is not installed (.ci/run installs it)")
		}
		if out, err := exec.Command(shellcheck, script).CombinedOutput(); err != nil {
			t.Errorf("shellcheck: %v\n%s", err, out)
		}
	})

	bin := doctorPath(t)
	env := []string{withPath(bin), "NO_COLOR=1", "SHM_NEED="}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string // in stdout + stderr
	}{
		{"enough", env, []string{"64m"}, 0, "ready: a container on this machine can get 64m of /dev/shm"},
		{"from SHM_NEED", append(env, "SHM_NEED=32m"), nil, 0, "ready: a container on this machine can get 32m"},
		{"too much", env, []string{"100t"}, 1, "Docker Desktop: raise the memory"},
		{"bad size", env, []string{"lots"}, 2, "shmdoctor could not measure this machine (exit 2"},
		{"no daemon", append(env, "DOCKER_HOST=unix:///nonexistent/docker.sock"), []string{"64m"}, 2, "its engine does not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runIn(t, t.TempDir(), c.env, "sh", append([]string{script}, c.args...)...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", r.code, c.code, c.want, r.stdout, r.stderr)
			}
		})
	}

	// A PATH with the doctor alone: no docker CLI.
	t.Run("no docker", func(t *testing.T) {
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, script, "64m")
		cmd.Env = append(os.Environ(), "PATH="+bin)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "Docker is not installed") {
			t.Errorf("%v\n%s", err, out)
		}
	})
}
