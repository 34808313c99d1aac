//go:build !windows

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// decodeStrict reads a YAML file into v, failing on keys v does not know: a misspelt key in
// an example is a bug the tools reading it would ignore silently.
func decodeStrict(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// modulePath is the module's path from go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	return string(m[1])
}

// mainPackages lists the import paths of the module's commands.
func mainPackages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Fields(string(out))
}

// checkInstall checks that an install command of an example installs the module's doctor.
func checkInstall(t *testing.T, command string) {
	t.Helper()
	want := "go install " + modulePath(t) + "/cmd/shmdoctor@latest"
	if strings.TrimSpace(command) != want {
		t.Errorf("install step %q, want %q", command, want)
	}
	for _, p := range mainPackages(t) {
		if p == modulePath(t)+"/cmd/shmdoctor" {
			return
		}
	}
	t.Errorf("%s/cmd/shmdoctor is not a command of the module", modulePath(t))
}

// preCommitHook is a hook of a pre-commit manifest with every key pre-commit accepts
// (https://pre-commit.com/#new-hooks).
type preCommitHook struct {
	ID                      string   `yaml:"id"`
	Name                    string   `yaml:"name"`
	Entry                   string   `yaml:"entry"`
	Language                string   `yaml:"language"`
	Files                   string   `yaml:"files"`
	Exclude                 string   `yaml:"exclude"`
	Types                   []string `yaml:"types"`
	TypesOr                 []string `yaml:"types_or"`
	ExcludeTypes            []string `yaml:"exclude_types"`
	AlwaysRun               bool     `yaml:"always_run"`
	FailFast                bool     `yaml:"fail_fast"`
	Verbose                 bool     `yaml:"verbose"`
	PassFilenames           *bool    `yaml:"pass_filenames"`
	RequireSerial           bool     `yaml:"require_serial"`
	Description             string   `yaml:"description"`
	LanguageVersion         string   `yaml:"language_version"`
	MinimumPreCommitVersion string   `yaml:"minimum_pre_commit_version"`
	Args                    []string `yaml:"args"`
	Stages                  []string `yaml:"stages"`
	AdditionalDependencies  []string `yaml:"additional_dependencies"`
	LogFile                 string   `yaml:"log_file"`
}

// TestPreCommitManifest validates .pre-commit-hooks.yaml as pre-commit would read it (the
// schema key by key; TestPreCommit runs the hooks with pre-commit itself), then runs the hook
// command the way pre-commit runs it on a stack with findings, on a clean one and on a folder
// with no stack.
func TestPreCommitManifest(t *testing.T) {
	var hooks []preCommitHook
	decodeStrict(t, filepath.Join(root(t), ".pre-commit-hooks.yaml"), &hooks)
	languages := map[string]string{"shmdoctor": "golang", "shmdoctor-system": "system", "shmdoctor-docker": "docker_image"}
	if len(hooks) != len(languages) {
		t.Fatalf("%d hooks, want %d", len(hooks), len(languages))
	}
	for _, h := range hooks {
		if h.Name == "" || h.Description == "" || h.Language != languages[h.ID] {
			t.Errorf("id %q: name %q, description %q, language %q, want %q", h.ID, h.Name, h.Description, h.Language, languages[h.ID])
		}
		delete(languages, h.ID)
		if h.Args == nil || strings.Join(h.Args, " ") != strings.Join(hooks[0].Args, " ") || h.Files != hooks[0].Files {
			t.Errorf("%s: args %q, files %q: every hook runs the same check", h.ID, h.Args, h.Files)
		}
		// A compose project spans several files: they must not be passed one by one, each
		// as its own project.
		if h.PassFilenames == nil || *h.PassFilenames {
			t.Errorf("%s: pass_filenames must be false", h.ID)
		}
	}
	// language golang: pre-commit runs `go install ./...` in this repository and puts the
	// binaries on PATH, so the entry must be the name of one of the module's commands; the
	// system hook runs the same command from PATH; the docker hook the image make image builds.
	entry := strings.Fields(hooks[0].Entry)
	if hooks[0].ID != "shmdoctor" || len(entry) == 0 {
		t.Fatalf("first hook %q, entry %q", hooks[0].ID, hooks[0].Entry)
	}
	found := false
	for _, p := range mainPackages(t) {
		found = found || path.Base(p) == entry[0] && !strings.Contains(p, "/internal/")
	}
	if !found {
		t.Fatalf("entry %q is not a command of the module (%v)", entry[0], mainPackages(t))
	}
	for _, h := range hooks[1:] {
		want := map[string]string{"shmdoctor-system": hooks[0].Entry, "shmdoctor-docker": "--pull=never localhost/shmdoctor:latest"}[h.ID]
		if h.Entry != want {
			t.Errorf("%s: entry %q, want %q", h.ID, h.Entry, want)
		}
	}
	// pre-commit matches files with Python's re.search; these patterns mean the same in RE2.
	// -r reads every YAML file (variants by name, manifests and unmistakable compose files by
	// content) and the .env files compose interpolates from.
	files, err := regexp.Compile(hooks[0].Files)
	if err != nil {
		t.Fatalf("files: %v", err)
	}
	for _, name := range []string{"compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml",
		"compose.override.yaml", "docker-compose.prod.yml", "docker-compose.gpu.yml", "gpu.compose.yaml",
		"ml-docker-compose.yml", "deploy/compose/nims.yaml", "example/compute-ray.yaml", "k8s/deploy.yaml",
		"Deploy.YML", "deploy/gpu/compose.yaml", ".env", "stack/.env"} {
		if !files.MatchString(name) {
			t.Errorf("files does not match %s", name)
		}
	}
	for _, name := range []string{"README.md", "composer.json", "compose.yaml.orig", "x.env", "yaml", "docs/compose.md"} {
		if files.MatchString(name) {
			t.Errorf("files matches %s", name)
		}
	}

	bin := doctorPath(t)
	args := append(entry[1:], hooks[0].Args...)
	run := func(dir string) result {
		return runIn(t, dir, []string{withPath(bin), "NO_COLOR=1"}, filepath.Join(bin, entry[0]), args...)
	}
	if r := run(copyTree(t, filepath.Join(root(t), "testdata", "demo"))); r.code != 1 || !strings.Contains(r.stdout, "SHM012") {
		t.Errorf("hook on the demo: exit %d, want 1 with SHM012\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(copyTree(t, filepath.Join(root(t), "testdata", "rules", "silent"))); r.code != 0 {
		t.Errorf("hook on a clean stack: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// CI files only, a GitLab CI file with its services key among them: nothing to check.
	if r := run(copyTree(t, filepath.Join(root(t), "docs", "ci"))); r.code != 0 {
		t.Errorf("hook on a folder with no stack: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// uploadSARIF is upload-sarif at the current major of github/codeql-action: v3 is deprecated
// (https://github.blog/changelog/2025-10-28-upcoming-deprecation-of-codeql-action-v3/).
const uploadSARIF = "github/codeql-action/upload-sarif@v4"

type workflowStep struct {
	ID   string            `yaml:"id"`
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	With map[string]string `yaml:"with"`
}

type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn string         `yaml:"runs-on"`
		Steps  []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestGitHubActionsExample reads docs/ci/github-actions.yml and runs its run: steps as the
// runner would (bash -eo pipefail), with the freshly built doctor on PATH in place of the
// install step, on a copy of the demo stack and on a clean one: the log gets workflow
// commands, the SARIF file the upload step names is written, and findings fail the step.
func TestGitHubActionsExample(t *testing.T) {
	var wf workflow
	decodeStrict(t, filepath.Join(root(t), "docs", "ci", "github-actions.yml"), &wf)
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull requests: on %v", wf.On)
	}
	// upload-sarif needs it; contents: read keeps the token minimal.
	if wf.Permissions["security-events"] != "write" || wf.Permissions["contents"] != "read" {
		t.Errorf("permissions %v", wf.Permissions)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(wf.Jobs))
	}
	var steps []workflowStep
	for _, j := range wf.Jobs {
		steps = j.Steps
	}
	var uses []string
	var runs []string
	var sarif *workflowStep
	for i, s := range steps {
		switch {
		case s.Uses != "" && s.Run != "":
			t.Errorf("step %d has both uses and run", i)
		case strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@"):
			sarif = &steps[i]
			uses = append(uses, s.Uses)
		case s.Uses != "":
			uses = append(uses, s.Uses)
		case strings.HasPrefix(strings.TrimSpace(s.Run), "go install "):
			checkInstall(t, s.Run)
		default:
			runs = append(runs, s.Run)
		}
	}
	if len(uses) != 3 || !strings.HasPrefix(uses[0], "actions/checkout@") || !strings.HasPrefix(uses[1], "actions/setup-go@") || sarif == nil {
		t.Fatalf("actions used: %v, want checkout, setup-go and upload-sarif", uses)
	}
	if sarif.Uses != uploadSARIF {
		t.Errorf("uses %s, want %s", sarif.Uses, uploadSARIF)
	}
	// Findings fail the check step: the upload must run anyway.
	if !strings.Contains(sarif.If, "always()") {
		t.Errorf("upload-sarif runs if %q, want always()", sarif.If)
	}
	file := sarif.With["sarif_file"]
	if file == "" || len(runs) == 0 {
		t.Fatalf("no sarif_file (%v) or no command to run", sarif.With)
	}

	bin := doctorPath(t)
	for _, stack := range []struct {
		dir     string
		code    int
		results bool
	}{{"demo", 1, true}, {"rules/silent", 0, false}} {
		work := copyTree(t, filepath.Join(root(t), "testdata", filepath.FromSlash(stack.dir)))
		var log bytes.Buffer
		code := 0
		for _, run := range runs {
			r := runIn(t, work, []string{withPath(bin)}, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run)
			log.WriteString(r.stdout)
			if r.stderr != "" {
				t.Errorf("%s: stderr %q", stack.dir, r.stderr)
			}
			if code = r.code; code != 0 {
				break
			}
		}
		if code != stack.code {
			t.Errorf("%s: the step exits %d, want %d\n%s", stack.dir, code, stack.code, log.String())
		}
		sc := bufio.NewScanner(&log)
		lines := 0
		for sc.Scan() {
			lines++
			if !strings.HasPrefix(sc.Text(), "::") {
				t.Errorf("%s: not a workflow command: %q", stack.dir, sc.Text())
			}
		}
		if stack.results && lines == 0 {
			t.Errorf("%s: no annotation in the log", stack.dir)
		}
		data, err := os.ReadFile(filepath.Join(work, file))
		if err != nil {
			t.Fatalf("%s: the upload step's %s: %v", stack.dir, file, err)
		}
		var doc struct {
			Version string `json:"version"`
			Runs    []struct {
				Results []struct {
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || doc.Version != "2.1.0" || len(doc.Runs) != 1 {
			t.Fatalf("%s: %s is no SARIF 2.1.0 log of one run: %v", stack.dir, file, err)
		}
		if got := len(doc.Runs[0].Results); (got > 0) != stack.results || got > 0 && got != lines {
			t.Errorf("%s: %d SARIF results for %d annotations", stack.dir, got, lines)
		}
		for _, res := range doc.Runs[0].Results {
			// code scanning resolves the URI against the repository root
			if uri := res.Locations[0].PhysicalLocation.ArtifactLocation.URI; uri != "compose.yaml" {
				t.Errorf("%s: result at %q, want compose.yaml", stack.dir, uri)
			}
		}
	}
}

type gitlabJob struct {
	Stage     string   `yaml:"stage"`
	Image     string   `yaml:"image"`
	Script    []string `yaml:"script"`
	Artifacts struct {
		When    string `yaml:"when"`
		Reports struct {
			CodeQuality string `yaml:"codequality"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

// TestGitLabExample reads docs/ci/gitlab-ci.yml and runs its script as the runner would, with
// the freshly built doctor in place of the install line, on a copy of the demo stack: the code
// quality report the artifacts name is written and findings fail the job.
func TestGitLabExample(t *testing.T) {
	var jobs map[string]gitlabJob
	decodeStrict(t, filepath.Join(root(t), "docs", "ci", "gitlab-ci.yml"), &jobs)
	job, ok := jobs["shmdoctor"]
	if !ok || len(jobs) != 1 {
		t.Fatalf("jobs %v, want shmdoctor alone", jobs)
	}
	// The image's Go must build the module.
	goVersion := regexp.MustCompile(`(?m)^go\s+(\d+\.\d+)`).FindStringSubmatch(readFile(t, filepath.Join(root(t), "go.mod")))
	if goVersion == nil || job.Image != "golang:"+goVersion[1] {
		t.Errorf("image %q, want golang:%v", job.Image, goVersion)
	}
	if job.Artifacts.When != "always" || job.Artifacts.Reports.CodeQuality == "" {
		t.Errorf("artifacts %+v: want when always and a codequality report", job.Artifacts)
	}
	var script []string
	for _, line := range job.Script {
		if strings.HasPrefix(line, "go install ") {
			checkInstall(t, line)
			continue
		}
		script = append(script, line)
	}
	if len(script) == 0 {
		t.Fatal("no command to run")
	}

	bin := doctorPath(t)
	work := copyTree(t, filepath.Join(root(t), "testdata", "demo"))
	r := runIn(t, work, []string{withPath(bin), "NO_COLOR=1"}, "sh", "-e", "-c", strings.Join(script, "\n"))
	if r.code != 1 || !strings.Contains(r.stdout, "SHM012") {
		t.Errorf("the job exits %d, want 1 with SHM012 in the log\n%s%s", r.code, r.stdout, r.stderr)
	}
	var issues []struct {
		Description string `json:"description"`
		CheckName   string `json:"check_name"`
		Fingerprint string `json:"fingerprint"`
		Severity    string `json:"severity"`
		Location    struct {
			Path  string `json:"path"`
			Lines struct {
				Begin int `json:"begin"`
			} `json:"lines"`
		} `json:"location"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(work, job.Artifacts.Reports.CodeQuality))), &issues); err != nil || len(issues) == 0 {
		t.Fatalf("the code quality report: %v, %d issues", err, len(issues))
	}
	for _, is := range issues {
		if is.Description == "" || is.CheckName == "" || is.Fingerprint == "" || is.Severity == "" || is.Location.Path != "compose.yaml" || is.Location.Lines.Begin == 0 {
			t.Errorf("incomplete code quality issue %+v", is)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
