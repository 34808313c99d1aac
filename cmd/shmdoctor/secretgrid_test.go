package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestSecretGrid puts a secret of each shape into each key a pull request could write it
// in, from the environment as CI has it, and runs the real binary over it in every format,
// with --fix and as a baseline: no run of analyze.SecretRun bytes of the secret may appear
// in any byte of standard output, standard error or a file written. The fault suite runs
// the same grid with the probe on (make faults).
func TestSecretGrid(t *testing.T) {
	shapes := []string{"token", "pem", "unicode", "password"}
	if testing.Short() {
		shapes = shapes[:1]
	}
	secretGrid(t, shapes, "never")
}

// secretGrid runs the grid of the shapes named, every key, with --probe probe.
func secretGrid(t *testing.T, shapes []string, probe string) {
	bin := buildDoctor(t)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range testutil.SecretKeys {
			if !yield(k) {
				return
			}
		}
	})
	for _, shape := range shapes {
		secret := testutil.SecretShapes[shape]
		runs := testutil.SecretRuns(secret, analyze.SecretRun)
		t.Run(shape, func(t *testing.T) {
			for _, key := range keys {
				dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": testutil.SecretKeys[key]})
				env := []string{"SECRET=" + secret}
				formats := []string{"--format", "text", "-o", "-"}
				for _, f := range []string{"json", "sarif", "junit", "github", "codeclimate"} {
					formats = append(formats, "--format", f, "-o", filepath.Join(dir, "out."+f))
				}
				for _, args := range [][]string{
					append([]string{"-v", "--probe", probe, dir}, formats...),
					{"--fix", dir},
					{"baseline", "--probe", probe, "-o", filepath.Join(dir, "baseline.json"), dir},
				} {
					_, out, errs := runIn(t, bin, dir, env, args...)
					outputs := map[string]string{"stdout": out, "stderr": errs}
					written, _ := filepath.Glob(filepath.Join(dir, "*.*"))
					for _, f := range written {
						if filepath.Base(f) == "compose.yaml" {
							continue
						}
						if b, err := os.ReadFile(f); err == nil {
							outputs[filepath.Base(f)] = string(b)
						}
						os.Remove(f) // the next run writes its own
					}
					for where, text := range outputs {
						for _, r := range runs {
							if strings.Contains(text, r) {
								t.Errorf("%s, %s, %s: %s holds %q of the secret:\n%s", shape, key, args[0], where, r, excerpt(text, r))
								break
							}
						}
					}
				}
			}
		})
	}
}

// excerpt is the line of text that holds s.
func excerpt(text, s string) string {
	i := strings.Index(text, s)
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : i+end]
}

// runIn runs the binary bin in dir with env added to the environment.
func runIn(t *testing.T, bin, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}
