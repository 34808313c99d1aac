//go:build linux

package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testAgent is a static linux binary holding the agent, built for the tests: a test binary
// is not the doctor.
var testAgent string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shmdoctor-engine-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Digest records and locks go to a directory of this process's own.
	locks := filepath.Join(dir, "run")
	if err := os.Mkdir(locks, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("XDG_RUNTIME_DIR", locks)
	testAgent = filepath.Join(dir, "shmdoctor")
	build := exec.Command("go", "build", "-o", testAgent, "../agent/internal/agentcmd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test agent: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
