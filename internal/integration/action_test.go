//go:build !windows

package integration

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// actionStep is a step of a composite action with the keys the runner accepts
// (https://docs.github.com/en/actions/reference/workflows-and-actions/metadata-syntax).
type actionStep struct {
	ID               string            `yaml:"id,omitempty"`
	Name             string            `yaml:"name,omitempty"`
	If               string            `yaml:"if,omitempty"`
	Shell            string            `yaml:"shell,omitempty"`
	Run              string            `yaml:"run,omitempty"`
	Uses             string            `yaml:"uses,omitempty"`
	With             map[string]string `yaml:"with,omitempty"`
	Env              map[string]string `yaml:"env,omitempty"`
	WorkingDirectory string            `yaml:"working-directory,omitempty"`
	ContinueOnError  bool              `yaml:"continue-on-error,omitempty"`
}

// actionMetadata is action.yml with every top-level key of the metadata syntax.
type actionMetadata struct {
	Name        string `yaml:"name"`
	Author      string `yaml:"author"`
	Description string `yaml:"description"`
	Inputs      map[string]struct {
		Description        string `yaml:"description"`
		Required           bool   `yaml:"required"`
		Default            string `yaml:"default"`
		DeprecationMessage string `yaml:"deprecationMessage"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
	Branding struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
}

// expression is a ${{ }} expression of a workflow or action.
var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// readAction reads action.yml strictly and checks what the runner requires and what
// actionlint, which lints workflows and not action metadata, cannot: a composite action whose
// run steps name their shell, inputs with descriptions, and every expression naming a
// declared input, an earlier step's output that step writes, or the action's own path and
// ref, the only contexts its steps use.
func readAction(t *testing.T) *actionMetadata {
	t.Helper()
	var a actionMetadata
	decodeStrict(t, filepath.Join(root(t), "action.yml"), &a)
	if a.Name == "" || a.Description == "" || a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("name %q, description %q, runs.using %q, %d steps: want a composite action", a.Name, a.Description, a.Runs.Using, len(a.Runs.Steps))
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
	}
	used := map[string]bool{}
	written := map[string]map[string]bool{} // step id → outputs it writes
	check := func(where, s string) {
		for _, m := range expression.FindAllStringSubmatch(s, -1) {
			e := m[1]
			parts := strings.Split(e, ".")
			switch {
			case len(parts) == 2 && parts[0] == "inputs":
				if _, ok := a.Inputs[parts[1]]; !ok {
					t.Errorf("%s: ${{ %s }}: no input %s is declared", where, e, parts[1])
				}
				used[parts[1]] = true
			case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
				if !written[parts[1]][parts[3]] {
					t.Errorf("%s: ${{ %s }}: no earlier step %s writes %s", where, e, parts[1], parts[3])
				}
			case e == "github.action_path" || e == "github.action_ref":
			default:
				t.Errorf("%s: unexpected expression ${{ %s }}", where, e)
			}
		}
	}
	for i, s := range a.Runs.Steps {
		where := "step " + s.ID
		if s.Run == "" || s.Uses != "" || s.Shell != "bash" || s.ID == "" {
			t.Errorf("step %d: id %q, shell %q, uses %q: want an id and a bash run step", i, s.ID, s.Shell, s.Uses)
		}
		// Inputs reach the script through env, never pasted into it (script injection).
		if expression.MatchString(s.Run) {
			t.Errorf("%s: its script holds an expression; pass it through env", where)
		}
		check(where, s.WorkingDirectory)
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			check(where+" env "+k, s.Env[k])
		}
		written[s.ID] = map[string]bool{}
		for _, m := range regexp.MustCompile(`echo "([a-z-]+)=.*>> "\$GITHUB_OUTPUT"`).FindAllStringSubmatch(s.Run, -1) {
			written[s.ID][m[1]] = true
		}
	}
	for name, out := range a.Outputs {
		if out.Description == "" || !expression.MatchString(out.Value) {
			t.Errorf("output %s: description %q, value %q", name, out.Description, out.Value)
		}
		check("output "+name, out.Value)
	}
	for name := range a.Inputs {
		if !used[name] {
			t.Errorf("input %s is used by no step", name)
		}
	}
	return &a
}

// actionRun is how the action's steps ended.
type actionRun struct {
	code    int
	log     string
	outputs map[string]string // the action's outputs
}

// runAction runs the action's steps as the runner runs a composite action's bash steps, with
// `with` over the inputs' defaults, in the workspace dir, the action's path being this
// repository. It stops at the first failing step. See runActionEnv.
func runAction(t *testing.T, a *actionMetadata, with map[string]string, workspace string) actionRun {
	t.Helper()
	return runActionEnv(t, a, with, workspace, nil)
}

// runActionEnv runs the action's steps as the runner runs a composite action's bash steps:
// each script written to a file and run with bash --noprofile --norc -eo pipefail FILE, the
// expressions of env, working-directory and the outputs replaced by their values (inputs from
// `with` over the defaults, outputs passed through $GITHUB_OUTPUT), and no INPUT_* variable
// but those a step's env sets: the runner sets them for JavaScript and Docker actions, not
// for composite ones (actions/runner#665). env is added to the job's environment.
func runActionEnv(t *testing.T, a *actionMetadata, with map[string]string, workspace string, env []string) actionRun {
	t.Helper()
	inputs := map[string]string{}
	for name, in := range a.Inputs {
		inputs[name] = in.Default
	}
	for k, v := range with {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("with: %s is no input of the action", k)
		}
		inputs[k] = v
	}
	steps := map[string]map[string]string{}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			parts := strings.Split(expression.FindStringSubmatch(m)[1], ".")
			switch parts[0] {
			case "inputs":
				return inputs[parts[1]]
			case "steps":
				return steps[parts[1]][parts[3]]
			case "github":
				if parts[1] == "action_path" {
					return root(t)
				}
				return "" // action_ref: a local action has none
			}
			t.Fatalf("cannot evaluate %s", m)
			return ""
		})
	}
	var job []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INPUT_") {
			job = append(job, kv)
		}
	}
	job = append(job, env...)
	temp := t.TempDir()
	var r actionRun
	for _, s := range a.Runs.Steps {
		output := filepath.Join(temp, s.ID+".output")
		script := filepath.Join(temp, s.ID+".sh")
		if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
			t.Fatal(err)
		}
		stepEnv := append(slices.Clone(job), "RUNNER_TEMP="+temp, "GITHUB_OUTPUT="+output, "GITHUB_WORKSPACE="+workspace)
		for k, v := range s.Env {
			stepEnv = append(stepEnv, k+"="+eval(v))
		}
		dir := workspace
		if s.WorkingDirectory != "" {
			dir = eval(s.WorkingDirectory)
		}
		res := runEnv(t, dir, stepEnv, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		r.log += res.stdout + res.stderr
		steps[s.ID] = map[string]string{}
		if data, err := os.ReadFile(output); err == nil {
			for line := range strings.Lines(string(data)) {
				if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
					steps[s.ID][k] = v
				}
			}
		}
		if r.code = res.code; r.code != 0 {
			break
		}
	}
	r.outputs = map[string]string{}
	for name, out := range a.Outputs {
		r.outputs[name] = eval(out.Value)
	}
	return r
}

// sarifLocations reads a SARIF file's result locations as uriBaseId:uri.
func sarifLocations(t *testing.T, file string) []string {
	t.Helper()
	var doc struct {
		Version string `json:"version"`
		Runs    []struct {
			OriginalURIBaseIDs map[string]struct{ URI string } `json:"originalUriBaseIds"`
			Results            []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(readFile(t, file)), &doc); err != nil || doc.Version != "2.1.0" || len(doc.Runs) != 1 {
		t.Fatalf("%s is no SARIF 2.1.0 log of one run: %v", file, err)
	}
	if base := doc.Runs[0].OriginalURIBaseIDs["%SRCROOT%"].URI; !strings.HasPrefix(base, "file:///") || !strings.HasSuffix(base, "/") {
		t.Errorf("%s: %%SRCROOT%% is %q", file, base)
	}
	var locs []string
	for _, r := range doc.Runs[0].Results {
		a := r.Locations[0].PhysicalLocation.ArtifactLocation
		locs = append(locs, a.URIBaseID+":"+a.URI)
	}
	return locs
}

// TestGitHubAction checks action.yml (see readAction) and runs its steps as written: the
// doctor is built from the action's own source, and on the demo stack the log gets
// annotations, the SARIF file names compose.yaml relative to %SRCROOT% and findings fail
// the step; on a clean stack it passes; formats and fail-on are honoured; with probe always
// the built doctor measures a service on the real engine.
func TestGitHubAction(t *testing.T) {
	a := readAction(t)
	for _, c := range []struct {
		name    string
		stack   string
		with    map[string]string
		code    int
		sarif   string // the sarif-file output, "" for none
		results bool
	}{
		{"demo", "demo", nil, 1, "shmdoctor.sarif", true},
		{"clean", "rules/silent", nil, 0, "shmdoctor.sarif", false},
		{"text, no sarif", "demo", map[string]string{"formats": "text", "fail-on": "never", "path": ". ."}, 0, "", false},
		{"sarif elsewhere", "demo", map[string]string{"formats": "sarif github", "fail-on": "error", "sarif-file": "out.sarif"}, 1, "out.sarif", true},
		{"probe", "", map[string]string{"formats": "text", "probe": "always"}, 0, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var work string
			if c.stack != "" {
				work = copyTree(t, filepath.Join(root(t), "testdata", filepath.FromSlash(c.stack)))
			} else {
				work = t.TempDir()
				if err := os.WriteFile(filepath.Join(work, "compose.yaml"), []byte("services:\n  web:\n    image: nginx\n    shm_size: 256m\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := runAction(t, a, c.with, work)
			if r.code != c.code {
				t.Fatalf("the action exits %d, want %d\n%s", r.code, c.code, r.log)
			}
			if got := r.outputs["sarif-file"]; got != c.sarif {
				t.Fatalf("output sarif-file %q, want %q", got, c.sarif)
			}
			annotations := 0
			sc := bufio.NewScanner(strings.NewReader(r.log))
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "::") {
					annotations++
				}
			}
			if c.with["probe"] == "always" {
				// One table on a wide log, or the measurement in a table of its own at 80 columns.
				if !regexp.MustCompile(`(?m)^\s+web\s+256 MiB\s+(256 MiB\s+private.*\s)?256 MiB\s+ok 256 MiB`).MatchString(r.log) {
					t.Errorf("probe always: no measurement in the log\n%s", r.log)
				}
				return
			}
			if c.sarif == "" {
				if !strings.Contains(r.log, "SHM012") || annotations > 0 {
					t.Errorf("formats text: want the text report in the log\n%s", r.log)
				}
				if _, err := os.Stat(filepath.Join(work, "shmdoctor.sarif")); err == nil {
					t.Error("formats text wrote shmdoctor.sarif")
				}
				return
			}
			locs := sarifLocations(t, filepath.Join(work, c.sarif))
			if (len(locs) > 0) != c.results || len(locs) != annotations {
				t.Errorf("%d SARIF results, %d annotations\n%s", len(locs), annotations, r.log)
			}
			for _, l := range locs {
				if l != "%SRCROOT%:compose.yaml" {
					t.Errorf("a result at %s, want %%SRCROOT%%:compose.yaml", l)
				}
			}
		})
	}
}

// TestGitHubActionExample reads docs/ci/github-action.yml, the workflow that uses the action,
// and runs the action as it says on the demo stack: the action is this repository's, its
// with keys are inputs, and the upload step takes the SARIF file from the action's output
// and runs even when findings fail the check.
func TestGitHubActionExample(t *testing.T) {
	a := readAction(t)
	var wf workflow
	decodeStrict(t, filepath.Join(root(t), "docs", "ci", "github-action.yml"), &wf)
	if wf.Permissions["security-events"] != "write" || wf.Permissions["contents"] != "read" {
		t.Errorf("permissions %v", wf.Permissions)
	}
	var steps []workflowStep
	for _, j := range wf.Jobs {
		steps = j.Steps
	}
	repo := strings.TrimPrefix(modulePath(t), "github.com/") + "@"
	var action, upload *workflowStep
	for i, s := range steps {
		switch {
		case strings.HasPrefix(s.Uses, repo):
			action = &steps[i]
		case strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@"):
			upload = &steps[i]
		}
	}
	if len(wf.Jobs) != 1 || action == nil || upload == nil || action.ID == "" {
		t.Fatalf("want one job using %s... with an id and upload-sarif: %+v", repo, steps)
	}
	if want := "${{ steps." + action.ID + ".outputs.sarif-file }}"; upload.With["sarif_file"] != want {
		t.Errorf("upload-sarif takes %q, want %s", upload.With["sarif_file"], want)
	}
	if !strings.Contains(upload.If, "always()") || upload.Uses != uploadSARIF {
		t.Errorf("%s runs if %q, want %s if always()", upload.Uses, upload.If, uploadSARIF)
	}
	// docs/ci.md shows the same.
	readme := readFile(t, filepath.Join(root(t), "docs", "ci.md"))
	for _, s := range []string{"uses: " + action.Uses, "uses: " + uploadSARIF} {
		if !strings.Contains(readme, s) {
			t.Errorf("docs/ci.md has no %q", s)
		}
	}
	work := copyTree(t, filepath.Join(root(t), "testdata", "demo"))
	r := runAction(t, a, action.With, work)
	if r.code != 1 || r.outputs["sarif-file"] == "" {
		t.Fatalf("the action exits %d with sarif-file %q, want 1 and a file\n%s", r.code, r.outputs["sarif-file"], r.log)
	}
	if locs := sarifLocations(t, filepath.Join(work, r.outputs["sarif-file"])); len(locs) == 0 {
		t.Error("no result in the SARIF file")
	}
}

// TestActionlint lints, with actionlint from the Go module proxy, the example workflows of
// docs/ci and the action's steps. actionlint lints workflows, not action metadata: the
// steps go into a workflow whose workflow_dispatch inputs are the action's, and the example
// using the action uses it as the local action ./, so that actionlint also checks its with
// keys against action.yml. shellcheck, when installed, checks every script.
func TestActionlint(t *testing.T) {
	a := readAction(t)
	project := t.TempDir()
	workflows := filepath.Join(project, ".github", "workflows")
	for _, d := range []string{filepath.Join(project, ".git"), workflows} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(project, "action.yml"), []byte(readFile(t, filepath.Join(root(t), "action.yml"))))
	repo := strings.TrimPrefix(modulePath(t), "github.com/")
	examples, err := filepath.Glob(filepath.Join(root(t), "docs", "ci", "github-*.yml"))
	if err != nil || len(examples) < 2 {
		t.Fatalf("examples %v: %v", examples, err)
	}
	for _, e := range examples {
		data := regexp.MustCompile(`uses: `+regexp.QuoteMeta(repo)+`@\S+`).ReplaceAllString(readFile(t, e), "uses: ./")
		write(filepath.Join(workflows, filepath.Base(e)), []byte(data))
	}
	type input struct {
		Type    string `yaml:"type"`
		Default string `yaml:"default"`
	}
	inputs := map[string]input{}
	for name, in := range a.Inputs {
		inputs[name] = input{"string", in.Default}
	}
	wf, err := yaml.Marshal(map[string]any{
		"name": "action steps",
		"on":   map[string]any{"workflow_dispatch": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-latest", "steps": a.Runs.Steps}},
	})
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(workflows, "action-steps.yml"), wf)

	cmd := exec.Command("go", "run", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12", "-no-color")
	cmd.Dir = project
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck is not installed: the scripts were not checked")
	}
}
