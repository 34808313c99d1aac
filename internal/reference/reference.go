// Package reference gives the tests and benchmarks the real docker compose v2 the doctor is
// held to: the binary scripts/reference-compose.sh builds from compose's Go module (once;
// the script caches it).
package reference

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

var (
	once sync.Once
	path string
	err  error
)

// Compose returns the path of the reference docker compose binary, building it on first use.
func Compose() (string, error) {
	once.Do(func() {
		root, e := testutil.ModuleRoot()
		if e != nil {
			err = e
			return
		}
		script := filepath.Join(root, "scripts", "reference-compose.sh")
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", script)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if e := cmd.Run(); e != nil {
			err = fmt.Errorf("building the reference docker compose with %s: %w: %s", script, e, strings.TrimSpace(errb.String()))
			return
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		path = strings.TrimSpace(lines[len(lines)-1])
	})
	return path, err
}

// ComposeFor is Compose for a test: it fails the test when the binary cannot be built.
func ComposeFor(t testing.TB) string {
	t.Helper()
	ref, err := Compose()
	if err != nil {
		t.Fatalf("cannot build the reference docker compose: %v", err)
	}
	return ref
}
