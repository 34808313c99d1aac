package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// root is the repository; tests run from it, so that reports name files as a user would
// see them.
var root, _ = filepath.Abs("../..")

func repoRoot(*testing.T) string { return root }

// shmdoctor runs the whole command in-process.
func shmdoctor(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	t.Setenv("NO_COLOR", "1")
	if os.Getenv("COLUMNS") != wideColumns {
		t.Setenv("COLUMNS", "") // the goldens are laid out for 80 columns, whatever runs the tests
	}
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// wideColumns is the width of wide: the text report wraps no line.
const wideColumns = "1000"

// wide lays the text report out with no wrapping, for tests about what a line says rather
// than how it is laid out.
func wide(t *testing.T) { t.Setenv("COLUMNS", wideColumns) }

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join(repoRoot(t), "cmd", "shmdoctor", "testdata", name), got, *update, "go test ./cmd/shmdoctor -update")
}

func TestDemoGolden(t *testing.T) {
	t.Chdir(repoRoot(t))
	code, out, errs := shmdoctor(t, "", "--probe", "never", "testdata/demo")
	if code != exitFindings || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	golden(t, "demo.txt", out)

	code, out, _ = shmdoctor(t, "", "--probe", "never", "--format", "json", "testdata/demo")
	if code != exitFindings {
		t.Fatalf("exit %d", code)
	}
	golden(t, "demo.json", out)
	var doc struct {
		Version  int `json:"version"`
		Projects []struct {
			Name     string
			Files    []string
			Services []struct {
				Name string
				Shm  map[string]any
			}
			Findings []map[string]any
			Errors   []map[string]any
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || len(doc.Projects) != 1 || doc.Summary["error"] == 0 {
		t.Fatalf("unexpected document: %+v", doc)
	}
	for _, s := range doc.Projects[0].Services {
		for _, k := range []string{"source", "configured_bytes", "predicted_bytes", "memory_limit_bytes", "profile"} {
			if _, ok := s.Shm[k]; !ok {
				t.Errorf("service %s: shm has no %s", s.Name, k)
			}
		}
	}
	for _, f := range doc.Projects[0].Findings {
		for _, k := range []string{"rule", "name", "severity", "service", "file", "line", "column", "message", "remediation"} {
			if _, ok := f[k]; !ok {
				t.Errorf("finding has no %s: %v", k, f)
			}
		}
	}
}

func TestExitCodes(t *testing.T) {
	t.Chdir(repoRoot(t))
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"clean stack", []string{"testdata/rules/silent"}, exitClean},
		{"warnings fail by default", []string{"testdata/rules/SHM004"}, exitFindings},
		{"fail-on error ignores warnings", []string{"--fail-on", "error", "testdata/rules/SHM004"}, exitClean},
		{"fail-on never", []string{"--fail-on", "never", "testdata/demo"}, exitClean},
		{"fail-on info", []string{"--fail-on", "info", "testdata/rules/SHM020"}, exitFindings},
		{"unknown flag", []string{"--nope"}, exitUsage},
		{"unknown format", []string{"--format", "xml", "testdata/demo"}, exitUsage},
		{"bad fail-on", []string{"--fail-on", "loud", "testdata/demo"}, exitUsage},
		{"bad need", []string{"--need", "lots", "testdata/demo"}, exitUsage},
		{"missing path", []string{"testdata/nope"}, exitUsage},
		// docs/ci holds CI files only (a GitLab CI file has a services key): nothing to check.
		{"-r finds nothing", []string{"-r", "docs/ci"}, exitUsage},
		{"-r --allow-empty finds nothing", []string{"-r", "--allow-empty", "docs/ci"}, exitClean},
		{"-r --allow-empty still fails on findings", []string{"-r", "--allow-empty", "testdata/rules/SHM004"}, exitFindings},
		{"help", []string{"--help"}, exitClean},
		{"rules", []string{"rules"}, exitClean},
		{"explain", []string{"explain", "shm012"}, exitClean},
		{"explain unknown", []string{"explain", "SHM999"}, exitUsage},
		{"watch help", []string{"watch", "--help"}, exitClean},
		{"watch short interval", []string{"watch", "--interval", "1ms", "testdata/demo"}, exitUsage},
		{"watch headroom below 1", []string{"watch", "--headroom", "0.5", "testdata/demo"}, exitUsage},
		{"watch headroom NaN", []string{"watch", "--headroom", "NaN", "--duration", "1s", "testdata/demo"}, exitUsage},
		{"watch headroom infinite", []string{"watch", "--headroom", "+Inf", "--duration", "1s", "testdata/demo"}, exitUsage},
		{"watch headroom absurd", []string{"watch", "--headroom", "1e300", "--duration", "1s", "testdata/demo"}, exitUsage},
		{"watch unknown method", []string{"watch", "--method", "guess", "testdata/demo"}, exitUsage},
		{"watch two paths", []string{"watch", "testdata/demo", "testdata/rules/silent"}, exitUsage},
		{"watch missing project", []string{"watch", "testdata/nope"}, exitUsage},
		// The daemon answers (here and in CI) but no container of this project runs.
		{"watch nothing ran", []string{"watch", "--duration", "1s", "-p", "shmdoctor-exit-codes-none", "testdata/rules/silent"}, exitFindings},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if _, sub := subcommands[args[0]]; !sub {
				args = append([]string{"--probe", "never"}, args...) // the analysis alone
			}
			code, out, errs := shmdoctor(t, "", args...)
			if code != c.want {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.want, errs)
			}
			// A usage error says so on stderr; a load error is located in the report.
			if c.want == exitUsage && !strings.HasPrefix(errs, "shmdoctor: ") && !strings.Contains(out, "  error ") {
				t.Errorf("exit 2 without a message: stdout %q, stderr %q", out, errs)
			}
			if strings.Contains(errs, "goroutine") || strings.Contains(errs, "panic") {
				t.Errorf("stack trace on stderr: %s", errs)
			}
		})
	}
}

type jsonOut struct {
	Projects []struct {
		Name     string
		Files    []string
		Services []struct {
			Name string
			Shm  struct {
				Source          string
				ConfiguredBytes *int64 `json:"configured_bytes"`
				PredictedBytes  *int64 `json:"predicted_bytes"`
				MemoryLimit     *int64 `json:"memory_limit_bytes"`
			}
		}
		Findings []struct {
			Rule, Service, File string
			Line                int
		}
		Errors []struct {
			File    string
			Line    int
			Column  int
			Message string
		}
		Notes   []string
		Variant *struct {
			File, Base, Reason, Mode string
			CheckedAs                string `json:"checked_as"`
		}
	}
}

func jsonRun(t *testing.T, stdin string, args ...string) (int, jsonOut, string) {
	t.Helper()
	code, out, errs := shmdoctor(t, stdin, append([]string{"--format", "json", "--probe", "never"}, args...)...)
	var doc jsonOut
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON (%v): %s %s", err, out, errs)
	}
	return code, doc, out
}

func TestDiscovery(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"compose.yaml":          "services:\n  app:\n    image: alpine\n    shm_size: 1g\n",
		"compose.override.yaml": "services:\n  app:\n    ipc: host\n",
		"other.yaml":            "services:\n  other:\n    image: alpine\n",
		"sub/deeper/README":     "no compose file here\n",
	})
	t.Run("parent folder and override", func(t *testing.T) {
		t.Chdir(filepath.Join(dir, "sub", "deeper"))
		_, doc, _ := jsonRun(t, "")
		if len(doc.Projects) != 1 || len(doc.Projects[0].Files) != 2 {
			t.Fatalf("want compose.yaml and its override, got %+v", doc.Projects)
		}
		f := doc.Projects[0].Findings
		if len(f) == 0 || f[0].Rule == "" {
			t.Fatalf("no findings: %+v", doc.Projects[0])
		}
		var sawSHM001 bool
		for _, x := range f {
			if x.Rule == "SHM001" && strings.HasSuffix(x.File, "compose.yaml") && x.Line == 4 {
				sawSHM001 = true
			}
		}
		if !sawSHM001 {
			t.Errorf("SHM001 not at compose.yaml:4: %+v", f)
		}
	})
	t.Run("COMPOSE_FILE", func(t *testing.T) {
		t.Chdir(dir)
		t.Setenv("COMPOSE_FILE", "other.yaml")
		_, doc, _ := jsonRun(t, "")
		if len(doc.Projects) != 1 || len(doc.Projects[0].Services) != 1 || doc.Projects[0].Services[0].Name != "other" {
			t.Fatalf("COMPOSE_FILE not followed: %+v", doc.Projects)
		}
	})
	t.Run("-f merges files", func(t *testing.T) {
		t.Chdir(dir)
		_, doc, _ := jsonRun(t, "", "-f", "compose.yaml", "-f", "other.yaml")
		if len(doc.Projects) != 1 || len(doc.Projects[0].Services) != 2 {
			t.Fatalf("want one project with two services: %+v", doc.Projects)
		}
	})
	t.Run("folder path", func(t *testing.T) {
		_, doc, _ := jsonRun(t, "", dir)
		if len(doc.Projects) != 1 || doc.Projects[0].Services[0].Shm.Source != "host" {
			t.Fatalf("folder not loaded with its override: %+v", doc.Projects)
		}
	})
	t.Run("file path alone", func(t *testing.T) {
		_, doc, _ := jsonRun(t, "", filepath.Join(dir, "compose.yaml"))
		if doc.Projects[0].Services[0].Shm.Source != "private" {
			t.Fatalf("a file path must not pull in the override: %+v", doc.Projects)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		t.Chdir(dir)
		code, doc, _ := jsonRun(t, "services:\n  s:\n    image: alpine\n    ipc: host\n    shm_size: 2g\n", "-")
		if code != exitFindings || len(doc.Projects) != 1 || len(doc.Projects[0].Findings) == 0 {
			t.Fatalf("stdin: exit %d %+v", code, doc)
		}
		if f := doc.Projects[0].Findings; f[len(f)-1].File != "<stdin>" {
			t.Errorf("stdin findings name %q", f[0].File)
		}
	})
	t.Run("empty folder", func(t *testing.T) {
		empty := t.TempDir()
		code, doc, _ := jsonRun(t, "", empty)
		if code != exitUsage || len(doc.Projects[0].Errors) != 1 {
			t.Fatalf("exit %d %+v", code, doc)
		}
	})
}

func TestRecursive(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"a/compose.yaml":               "services:\n  a:\n    image: alpine\n    ipc: host\n    shm_size: 1g\n",
		"b/c/docker-compose.yml":       "services:\n  c:\n    image: alpine\n",
		"broken/compose.yaml":          "services:\n  x: [\n",
		"node_modules/m/compose.yaml":  "services:\n  skipped:\n    image: alpine\n",
		".git/compose.yaml":            "services:\n  skipped:\n    image: alpine\n",
		"vendor/v/docker-compose.yaml": "services:\n  skipped:\n    image: alpine\n",
		"docs/not-compose.yaml":        "hello: world\n",
	})
	code, doc, _ := jsonRun(t, "", "-r", dir)
	if code != exitUsage {
		t.Errorf("exit %d, want 2 for the broken project", code)
	}
	if len(doc.Projects) != 3 {
		t.Fatalf("want 3 projects (a, b/c, broken), got %d", len(doc.Projects))
	}
	var loaded, broken int
	for _, p := range doc.Projects {
		if len(p.Errors) > 0 {
			broken++
			if p.Errors[0].Line != 2 {
				t.Errorf("broken project error not located: %+v", p.Errors)
			}
		} else {
			loaded++
		}
		for _, s := range p.Services {
			if s.Name == "skipped" {
				t.Errorf("analysed a vendored tree")
			}
		}
	}
	if loaded != 2 || broken != 1 {
		t.Errorf("loaded %d, broken %d", loaded, broken)
	}
}

// TestRecursiveVariants checks that the reports say how each variant of testdata/discover
// was checked, and that an overlay does not repeat what its base project reports: the
// production overlay's web keeps the base's ipc: host (SHM020, reported once, with the
// base) and adds shm_size (SHM001, its own).
func TestRecursiveVariants(t *testing.T) {
	t.Chdir(repoRoot(t))
	_, doc, _ := jsonRun(t, "", "-r", "testdata/discover/stack")
	rules := map[string][]string{}
	for _, p := range doc.Projects {
		how := "default"
		if v := p.Variant; v != nil {
			how = v.Mode + " " + v.CheckedAs
			if v.Reason == "" {
				t.Errorf("%s: no reason given", how)
			}
		}
		for _, f := range p.Findings {
			rules[how] = append(rules[how], f.Rule)
		}
	}
	prod := "overlay -f testdata/discover/stack/docker-compose.yml -f testdata/discover/stack/docker-compose.prod.yaml"
	want := map[string][]string{
		"default": {"SHM020"},
		prod:      {"SHM001"},
		"overlay -f testdata/discover/stack/docker-compose.yml -f testdata/discover/stack/docker-compose.gpu.yml": {"SHM012"},
		"standalone -f testdata/discover/stack/docker-compose-vllm.yml":                                           {"SHM010"},
		"standalone -f testdata/discover/stack/ray-cluster.yaml":                                                  {"SHM014"},
	}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Errorf("findings by project:\n got %v\nwant %v", rules, want)
	}
	wide(t)
	_, out, _ := shmdoctor(t, "", "--probe", "never", "-r", "testdata/discover/stack")
	if !strings.Contains(out, "checked as -f testdata/discover/stack/docker-compose.yml -f testdata/discover/stack/docker-compose.gpu.yml, overlay: service trainer") {
		t.Errorf("the text report does not say how the gpu overlay was checked:\n%s", out)
	}
}

func TestProfilesAndEnv(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"compose.yaml": `services:
  web:
    image: nginx
  trainer:
    image: pytorch/pytorch
    profiles: [gpu]
    shm_size: ${SHM_SIZE}
    mem_limit: ${MEM_LIMIT}
    environment:
      HF_TOKEN: ${HF_TOKEN:?set it}
      DB_PASSWORD: hunter2-secret-value
`,
		".env": "SHM_SIZE=2g\n",
	})
	t.Run("every profile by default", func(t *testing.T) {
		_, doc, out := jsonRun(t, "", dir)
		if len(doc.Projects[0].Services) != 2 {
			t.Fatalf("want both services: %+v", doc.Projects[0].Services)
		}
		for _, s := range doc.Projects[0].Services {
			if s.Name == "trainer" && (s.Shm.ConfiguredBytes == nil || *s.Shm.ConfiguredBytes != 2<<30 || s.Shm.MemoryLimit != nil) {
				t.Errorf("trainer: .env not applied or unset MEM_LIMIT not left unknown: %+v", s.Shm)
			}
		}
		notes := strings.Join(doc.Projects[0].Notes, "\n")
		if !strings.Contains(notes, "MEM_LIMIT") || !strings.Contains(notes, "HF_TOKEN") {
			t.Errorf("notes do not name the unset variables: %q", notes)
		}
		if strings.Contains(out, "hunter2") {
			t.Error("an environment value was printed")
		}
	})
	t.Run("--profile narrows", func(t *testing.T) {
		_, doc, _ := jsonRun(t, "", "--profile", "nope", dir)
		if len(doc.Projects[0].Services) != 1 {
			t.Fatalf("want web only: %+v", doc.Projects[0].Services)
		}
	})
	t.Run("--strict-env fails like compose", func(t *testing.T) {
		code, doc, _ := jsonRun(t, "", "--strict-env", dir)
		if code != exitUsage || len(doc.Projects[0].Errors) == 0 || !strings.Contains(doc.Projects[0].Errors[0].Message, "HF_TOKEN") {
			t.Fatalf("exit %d %+v", code, doc.Projects[0].Errors)
		}
	})
	t.Run("--env-file", func(t *testing.T) {
		env := testutil.WriteFiles(t, map[string]string{"prod.env": "SHM_SIZE=4g\nMEM_LIMIT=8g\nHF_TOKEN=x\n"})
		// the env file is outside the project's folder, which is no git repository: allowed
		_, doc, _ := jsonRun(t, "", "--env-file", filepath.Join(env, "prod.env"), "--allow-outside", env, dir)
		for _, s := range doc.Projects[0].Services {
			if s.Name == "trainer" && (s.Shm.MemoryLimit == nil || *s.Shm.MemoryLimit != 8<<30) {
				t.Errorf("--env-file not applied: %+v", s.Shm)
			}
		}
	})
}

func TestTextFlags(t *testing.T) {
	wide(t)
	t.Chdir(repoRoot(t))
	_, quiet, _ := shmdoctor(t, "", "--probe", "never", "--quiet", "testdata/demo")
	if strings.Contains(quiet, "SERVICE") || !strings.Contains(quiet, "SHM001") {
		t.Errorf("--quiet must print findings only:\n%s", quiet)
	}
	_, verbose, _ := shmdoctor(t, "", "--probe", "never", "--verbose", "testdata/demo")
	if !strings.Contains(verbose, "evaluator: source service (ipc service:trainer) via trainer") {
		t.Errorf("--verbose does not explain the derivation:\n%s", verbose)
	}
	_, verbose, _ = shmdoctor(t, "", "--probe", "never", "--verbose", "testdata/rules/positions-extends")
	if !strings.Contains(verbose, "read: testdata/rules/positions-extends/compose.yaml, testdata/rules/positions-extends/base.yaml") {
		t.Errorf("--verbose does not say which files were read:\n%s", verbose)
	}
	_, colored, _ := shmdoctor(t, "", "--probe", "never", "--color", "always", "testdata/demo")
	if !strings.Contains(colored, "\x1b[") {
		t.Error("--color always printed no escape codes")
	}
	// Without NO_COLOR, which shmdoctor() sets: only the missing terminal keeps colour off.
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	var plain, errb bytes.Buffer
	run(context.Background(), []string{"--probe", "never", "testdata/demo"}, strings.NewReader(""), &plain, &errb)
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(plain.String(), "SHM001") {
		t.Errorf("escape codes without a terminal, or no report:\n%s", plain.String())
	}
}

func TestPluginArgs(t *testing.T) {
	env := map[string]string{}
	setenv := func(k, v string) error { env[k] = v; return nil }
	got := pluginArgs("/home/u/.docker/cli-plugins/docker-shmdoctor", []string{"--context", "remote", "-H=tcp://h:2376", "--debug", "shmdoctor", "-r", "."}, setenv)
	if strings.Join(got, " ") != "-r ." || env["DOCKER_CONTEXT"] != "remote" || env["DOCKER_HOST"] != "tcp://h:2376" {
		t.Errorf("args %q, env %v", got, env)
	}
	if got := pluginArgs("shmdoctor", []string{"shmdoctor", "x"}, setenv); len(got) != 2 {
		t.Errorf("outside docker the arguments are the doctor's own: %q", got)
	}
}

// TestProjectDirectory: --project-directory decides where .env is read from, as in docker compose.
func TestProjectDirectory(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"stack/compose.yaml": "services:\n  app:\n    image: alpine\n    shm_size: ${SHM:-64m}\n",
		"env/.env":           "SHM=512m\n",
	})
	_, doc, _ := jsonRun(t, "", "-f", filepath.Join(dir, "stack", "compose.yaml"), "--project-directory", filepath.Join(dir, "env"))
	s := doc.Projects[0].Services[0].Shm
	if s.ConfiguredBytes == nil || *s.ConfiguredBytes != 512<<20 {
		t.Errorf("the project directory's .env was not used: %+v", s)
	}
	_, doc, _ = jsonRun(t, "", "-f", filepath.Join(dir, "stack", "compose.yaml"), "-p", "custom")
	if doc.Projects[0].Name != "custom" || *doc.Projects[0].Services[0].Shm.ConfiguredBytes != 64<<20 {
		t.Errorf("-p or the default: %+v", doc.Projects[0])
	}
}

// TestHelp: every command's --help names its flags plainly and says how to call it.
func TestHelp(t *testing.T) {
	for _, cmd := range [][]string{{"--help"}, {"watch", "--help"}, {"host", "--help"}, {"probe", "--help"}, {"version", "--help"}} {
		code, out, _ := shmdoctor(t, "", cmd...)
		if code != exitClean || !strings.Contains(out, "Usage:") || !strings.Contains(out, "  -h, --help ") {
			t.Errorf("%v: exit %d:\n%s", cmd, code, out)
		}
		if strings.Contains(out, "[=true|false]") {
			t.Errorf("%v: boolean flags marked [=true|false]:\n%s", cmd, out)
		}
	}
}

// TestEscapedPaths names files with an escape sequence and a newline: the text report prints
// them escaped, so that a hostile file name neither restyles the terminal nor forges a line,
// and every line of the report is still one of the report's own.
func TestEscapedPaths(t *testing.T) {
	evil, newline := "ev\x1b[31mil.yaml", "new\nline.yaml"
	src := "services:\n  pg:\n    image: postgres:16\n    ipc: host\n    shm_size: 1g\n    volumes:\n      - \"/srv/d\\e[2Jb:/dev/shm\"\n"
	t.Chdir(testutil.WriteFiles(t, map[string]string{evil: src, newline: src}))
	_, out, errs := shmdoctor(t, "", "--probe", "never", "-v", "--color", "never", evil, newline, "missing\x1b]0;title\x07.yaml")
	if strings.ContainsAny(out+errs, "\x1b\x07") {
		t.Errorf("control characters printed:\n%q", out+errs)
	}
	for _, want := range []string{`ev\x1b[31mil.yaml:5:5`, `new\nline.yaml:5:5`, `read: new\nline.yaml`, `missing\x1b]0;title\a.yaml`, `bind:/srv/d\x1b[2Jb`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "line.yaml") {
			t.Errorf("a file name forged a line: %q", l)
		}
	}
}
