//go:build !windows

package integration

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// root is the module's root folder.
func root(t *testing.T) string {
	t.Helper()
	dir, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	doctorOnce sync.Once
	doctorDir  string
	doctorErr  error
)

// doctorPath builds the doctor once (static, so that it is its own probe agent) and returns
// a folder holding it as `shmdoctor`, to put first on PATH as an installation would.
func doctorPath(t *testing.T) string {
	t.Helper()
	module := root(t)
	doctorOnce.Do(func() {
		dir, err := os.MkdirTemp("", "shmdoctor-integration")
		if err != nil {
			doctorErr = err
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "shmdoctor"), "./cmd/shmdoctor")
		build.Dir = module
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			doctorErr = &buildError{err, out}
		}
		doctorDir = dir
	})
	if doctorErr != nil {
		t.Fatalf("building the doctor: %v", doctorErr)
	}
	return doctorDir
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	if doctorDir != "" {
		os.RemoveAll(doctorDir)
	}
	os.Exit(code)
}

// copyTree copies the folder src to a new temporary folder.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// result is how a command ended.
type result struct {
	code           int
	stdout, stderr string
}

// runIn runs a command in dir with extra environment, returning its exit code and output.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	return runEnv(t, dir, append(os.Environ(), env...), name, args...)
}

// runEnv runs a command in dir with the environment env alone.
func runEnv(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", name, err)
	}
	return r
}

// withPath is the environment entry that puts dir first on PATH.
func withPath(dir string) string {
	return "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
}
