package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// fuzzFiles are the files a fuzzed project may hold: a compose file with what it includes,
// extends and reads, and a manifest. Only these names are written, inside the test's folder.
var fuzzFiles = []string{"compose.yaml", ".env", "inc.yaml", "base.yaml", "app.env", "k8s.yaml"}

// fuzzSecret is in the environment of every fuzzed run, as CI secrets are.
const fuzzSecret = "ghp_FuzzS3cr3tV4lue0123456789"

// FuzzDoctor runs the whole command over fuzzed projects of several files (.env, include,
// extends, env_file, a manifest), in every format, then with --fix, and checks each run:
// no run of the secret in the environment is printed or written, the JSON, SARIF and JUnit
// reports parse, and no output holds a raw control character, a line a CI runner reads as
// a command, or a runner's marker, in a text or in a string of a JSON or XML report.
func FuzzDoctor(f *testing.F) {
	f.Add(archive(map[string]string{
		"compose.yaml": "include: [inc.yaml]\nservices:\n  app:\n    extends: {file: base.yaml, service: base}\n    shm_size: \"1g${SECRET}\"\n    env_file: app.env\n",
		"inc.yaml":     "services:\n  db:\n    image: postgres:16\n    ipc: \"service:${SECRET}\"\n",
		"base.yaml":    "services:\n  base:\n    image: pytorch/pytorch\n",
		".env":         "A=${SECRET}\nB=${A}${A}\n",
	}))
	f.Add(archive(map[string]string{
		"compose.yaml": "name: ${SECRET}\nservices:\n  web:\n    image: x\n    ports: [\"${SECRET}\"]\n    volumes: [\"${SECRET}:/dev/shm\"]\n",
	}))
	f.Add(archive(map[string]string{
		"k8s.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: \"p\\x1b]52;c;SGVsbG8=\\x07\"}\nspec:\n  containers:\n  - name: \"c\\n::warning::forged\"\n    image: vllm/vllm-openai\n",
	}))
	f.Add(archive(map[string]string{
		"compose.yaml": "services:\n  a:\n    image: x\n    ipc: \"service:x\\n  ::warning title=FORGED::f ##[add-mask]y\"\n",
	}))
	for _, h := range testutil.HostileStrings[:8] {
		q := strconv.Quote(h)
		f.Add(archive(map[string]string{
			"compose.yaml": "services:\n  " + q + ":\n    image: " + q + "\n    ipc: " + strconv.Quote("service:"+h) + "\n    shm_size: 1g\n",
			"k8s.yaml":     "apiVersion: v1\nkind: Pod\nmetadata: {name: " + q + ", namespace: " + q + "}\nspec:\n  hostIPC: true\n  containers:\n  - name: " + q + "\n    image: pytorch/pytorch\n",
		}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files := unarchive(data)
		if len(files) == 0 {
			return
		}
		dir := t.TempDir()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("SECRET", fuzzSecret)
		t.Setenv("NO_COLOR", "1")
		formats := []string{"--format", "text", "-o", "-"}
		for _, f := range []string{"json", "sarif", "junit", "github", "codeclimate"} {
			formats = append(formats, "--format", f, "-o", filepath.Join(dir, "out."+f))
		}
		for _, args := range [][]string{
			append([]string{"-r", "-v", "--probe", "never", "--no-config", dir}, formats...),
			{"--fix", "--no-config", "-r", dir},
		} {
			var out, errb bytes.Buffer
			run(context.Background(), args, strings.NewReader(""), &out, &errb)
			outputs := map[string][]byte{"stdout": out.Bytes(), "stderr": errb.Bytes()}
			for _, name := range []string{"json", "sarif", "junit", "github", "codeclimate"} {
				if b, err := os.ReadFile(filepath.Join(dir, "out."+name)); err == nil {
					outputs[name] = b
					os.Remove(filepath.Join(dir, "out."+name))
				}
			}
			checkOutputs(t, args[0], outputs)
		}
	})
}

// checkOutputs holds the outputs of one run to the properties every run keeps.
func checkOutputs(t *testing.T, run string, outputs map[string][]byte) {
	t.Helper()
	for where, b := range outputs {
		for _, r := range testutil.SecretRuns(fuzzSecret, analyze.SecretRun) {
			if bytes.Contains(b, []byte(r)) {
				t.Fatalf("%s: %s holds %q of the secret:\n%s", run, where, r, b)
			}
		}
	}
	for where, b := range outputs {
		var err error
		switch {
		case where == "json" || where == "sarif" || where == "codeclimate":
			err = testutil.CheckJSON(b)
		case where == "junit":
			err = testutil.CheckXML(b)
		case where == "github":
			err = testutil.CheckVisible(string(b), testutil.GitHubCommand)
		case where == "stdout" && run == "--fix":
			err = testutil.CheckPatch(string(b))
		default:
			err = testutil.CheckVisible(string(b), nil)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", run, where, err, b)
		}
	}
}

// archive lays files out as the fuzzer's input: each file is a line "-- name --" and its
// content.
func archive(files map[string]string) []byte {
	var b bytes.Buffer
	for _, name := range fuzzFiles {
		if c, ok := files[name]; ok {
			b.WriteString("-- " + name + " --\n" + c)
		}
	}
	return b.Bytes()
}

// unarchive is archive undone: the files of fuzzFiles that data holds.
func unarchive(data []byte) map[string]string {
	files := map[string]string{}
	name := ""
	var content strings.Builder
	flush := func() {
		if name != "" {
			files[name] = content.String()
		}
		content.Reset()
	}
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if h := strings.TrimSpace(l); strings.HasPrefix(h, "-- ") && strings.HasSuffix(h, " --") {
			flush()
			name = strings.TrimSuffix(strings.TrimPrefix(h, "-- "), " --")
			if !slices.Contains(fuzzFiles, name) {
				name = ""
			}
			continue
		}
		content.WriteString(l)
	}
	flush()
	return files
}
