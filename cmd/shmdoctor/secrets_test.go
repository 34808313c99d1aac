package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoSecretInOutput runs the real binary on testdata/secrets, where every key that takes
// a size, a number, a duration or a list is written with ${SHMDOCTOR_CANARY}, one file per
// key named after it: the canary's value must appear in no output of any format, -v and
// --fix included, and each error must still name the key, its file:line and the variable.
// The valid-* files use the canary where it is a valid value (an ipc container, a bind
// source): the plan is printed, the value is not.
func TestNoSecretInOutput(t *testing.T) {
	canary := fmt.Sprintf("c4n4ry-%x", rand.Uint64())
	env := []string{"SHMDOCTOR_CANARY=" + canary}
	files, err := filepath.Glob(filepath.Join(root, "testdata", "secrets", "*.yaml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	base := append([]string{"--probe", "never", "--color", "never"}, files...)
	runs := [][]string{append([]string{"-v"}, base...), append([]string{"--fix"}, base...)}
	for _, f := range []string{"text", "json", "sarif", "github", "codeclimate"} {
		runs = append(runs, append([]string{"-v", "--format", f}, base...))
	}
	var doc string
	for _, args := range runs {
		code, out, errs := doctor(t, env, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args[:3], code, exitUsage)
		}
		for _, l := range strings.Split(out+errs, "\n") {
			if strings.Contains(l, canary[:9]) {
				t.Errorf("%v printed the variable's value: %s", args[:3], l)
			}
		}
		if args[2] == "json" {
			doc = out
		}
	}
	var report struct {
		Projects []struct {
			Files    []string
			Services []struct{ Name string }
			Errors   []struct {
				File    string
				Line    int
				Message string
			}
		}
	}
	if err := json.Unmarshal([]byte(doc), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Projects) != len(files) {
		t.Fatalf("%d projects for %d files", len(report.Projects), len(files))
	}
	index := regexp.MustCompile(`\.?\[[^\]]*\]`)
	for _, p := range report.Projects {
		file := p.Files[0]
		key := strings.TrimSuffix(filepath.Base(file), ".yaml")
		if strings.HasPrefix(key, "valid-") {
			if len(p.Errors) > 0 || len(p.Services) != 1 {
				t.Errorf("%s: not analysed: %+v", file, p)
			}
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		written := strings.Count(string(src[:strings.Index(string(src), "${SHMDOCTOR_CANARY}")]), "\n") + 1
		if len(p.Errors) != 1 {
			t.Errorf("%s: errors %+v, want one", file, p.Errors)
			continue
		}
		e := p.Errors[0]
		msg := index.ReplaceAllString(e.Message, "")
		if e.File != file || e.Line < 4 || e.Line > written || !strings.Contains(msg, key) || !strings.Contains(e.Message, "${SHMDOCTOR_CANARY}") {
			t.Errorf("%s: error %s:%d %q does not name %s at lines 4-%d and ${SHMDOCTOR_CANARY}", file, e.File, e.Line, e.Message, key, written)
		}
	}
}
