package compose

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// loadFiles loads a project laid out from files, from its folder, and checks it.
func loadFiles(t *testing.T, files map[string]string, cfg analyze.Config) (*analyze.Project, []analyze.Finding) {
	t.Helper()
	t.Chdir(testutil.WriteFiles(t, files))
	ps := Load(context.Background(), Options{Paths: []string{"."}})
	if len(ps) != 1 || len(ps[0].Errors) > 0 || !ps[0].Loaded() {
		t.Fatalf("loading: %+v", ps[0].Errors)
	}
	return ps[0], rules.Check(ps[0], cfg)
}

// fixAll applies the fixes of every finding and returns the patched files by base name.
func fixAll(t *testing.T, p *analyze.Project, fs []analyze.Finding) (map[string]string, *fix.Patch) {
	t.Helper()
	var fixes []*analyze.Fix
	for _, f := range fs {
		fixes = append(fixes, f.Fix)
	}
	pt, err := fix.Apply(p, fixes)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range pt.Files {
		out[filepath.Base(c.Path)] = string(c.After)
	}
	return out, pt
}

// TestFixText holds the exact text of fixes where the layout of a file is unusual.
func TestFixText(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"crlf line endings",
			"services:\r\n  db:\r\n    image: postgres:16\r\n    x-shmdoctor: {need: 200m}\r\n",
			"services:\r\n  db:\r\n    image: postgres:16\r\n    x-shmdoctor: {need: 200m}\r\n    shm_size: 256m\r\n"},
		{"no newline at the end",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: 256m"},
		{"a list at its key's indentation ends the service",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    volumes:\n    - ./data:/data\n  web:\n    image: nginx\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    volumes:\n    - ./data:/data\n    shm_size: 256m\n  web:\n    image: nginx\n"},
		{"comments after the last key stay below it",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    # mem_limit: 1g\n\n  # the web\n  web:\n    image: nginx\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: 256m\n    # mem_limit: 1g\n\n  # the web\n  web:\n    image: nginx\n"},
		{"double quotes are kept",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: \"0\"   # the default\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: \"256m\"   # the default\n"},
		{"a removed key takes its block and comment, not its neighbours'",
			"services:\n  app:\n    ipc: host\n    shm_size: 2g # ignored\n    # about image\n    image: alpine\n",
			"services:\n  app:\n    ipc: host\n    # about image\n    image: alpine\n"},
		{"a block scalar line that looks like a comment stays in the scalar",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: |\n      postgres\n      # not a comment\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: |\n      postgres\n      # not a comment\n    shm_size: 256m\n"},
		{"the kept trailing lines of a block scalar stay in the scalar",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: |+\n      postgres\n\n\n  web:\n    image: nginx\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: |+\n      postgres\n\n\n    shm_size: 256m\n  web:\n    image: nginx\n"},
		{"a flow list over several lines ends at its bracket",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: [\n      \"postgres\",\n    ]\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: [\n      \"postgres\",\n    ]\n    shm_size: 256m\n"},
		{"a quoted string over several lines ends at its quote",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: \"postgres\n      # -c x\"\n",
			"services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    command: \"postgres\n      # -c x\"\n    shm_size: 256m\n"},
		{"tab-free deep indentation",
			"services:\n        db:\n                image: postgres:16\n                x-shmdoctor: {need: 200m}\n",
			"services:\n        db:\n                image: postgres:16\n                x-shmdoctor: {need: 200m}\n                shm_size: 256m\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, fs := loadFiles(t, map[string]string{"compose.yaml": c.in}, analyze.Config{})
			got, _ := fixAll(t, p, fs)
			if got["compose.yaml"] != c.want {
				t.Errorf("got\n%q\nwant\n%q", got["compose.yaml"], c.want)
			}
		})
	}
}

// TestNoFix: where a fix would be wrong, the finding says why instead.
func TestNoFix(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		cfg   analyze.Config
		rule  string
		why   string
	}{
		{"flow style", map[string]string{"compose.yaml": "services:\n  db: {image: postgres:16, x-shmdoctor: {need: 200m}}\n"}, analyze.Config{}, "SHM010", "flow style"},
		{"shared anchor", map[string]string{"compose.yaml": "x-a: &a\n  ipc: host\n  shm_size: 2g\nservices:\n  a:\n    <<: *a\n    image: alpine\n"}, analyze.Config{}, "SHM001", "YAML anchor"},
		{"memory limit", map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    mem_limit: 100m\n"}, analyze.Config{}, "SHM010", "memory limit 100 MiB cannot hold"},
		{"variable", map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: ${SHM:-64m}\n"}, analyze.Config{}, "SHM011", "variable"},
		{"swarm", map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"}, analyze.Config{Target: analyze.TargetSwarm}, "SHM010", "docker stack deploy"},
		{"reset", map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n    shm_size: 1g\n", "compose.override.yaml": "services:\n  db:\n    shm_size: !reset null\n"}, analyze.Config{}, "SHM010", "!reset"},
		{"kubernetes memory limit", map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai\n      args: [--tensor-parallel-size, \"8\"]\n      resources: {limits: {memory: 1Gi, nvidia.com/gpu: 8}}\n"}, analyze.Config{}, "SHM101", "memory limit 1 GiB cannot hold"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, fs := loadFiles(t, c.files, c.cfg)
			found := false
			for _, f := range fs {
				if f.Rule != c.rule {
					continue
				}
				found = true
				if f.Fix != nil || !strings.Contains(f.NoFix, c.why) {
					t.Errorf("%s: fix %v, no fix %q, want a reason with %q", f.Pos, f.Fix, f.NoFix, c.why)
				}
			}
			if !found {
				t.Fatalf("no %s finding in %+v", c.rule, fs)
			}
		})
	}
}

// TestSetShmSize is the helper other commands use to size a service: it replaces the
// winning value where it is written and adds the key where it is not.
func TestSetShmSize(t *testing.T) {
	p, _ := loadFiles(t, map[string]string{
		"compose.yaml":          "services:\n  a:\n    image: alpine\n    shm_size: '1g' # sized\n  b:\n    image: alpine\n",
		"compose.override.yaml": "services:\n  a:\n    shm_size: '2g'\n",
	}, analyze.Config{})
	fa, err := p.Doc.SetShmSize("a", 4<<30)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := p.Doc.SetShmSize("b", 512<<20)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := p.Doc.SetShmSize("b", 1<<30) // overlaps fb: left for another run
	got, pt := fixAll(t, p, []analyze.Finding{{Fix: fa}, {Fix: fb}, {Fix: again}})
	if want := "services:\n  a:\n    shm_size: '4g'\n"; got["compose.override.yaml"] != want {
		t.Errorf("override: %q, want %q", got["compose.override.yaml"], want)
	}
	if want := "services:\n  a:\n    image: alpine\n    shm_size: '1g' # sized\n  b:\n    image: alpine\n    shm_size: 512m\n"; got["compose.yaml"] != want {
		t.Errorf("compose.yaml: %q, want %q", got["compose.yaml"], want)
	}
	if len(pt.Applied) != 2 || len(pt.Skipped) != 1 || pt.Skipped[0] != again {
		t.Errorf("applied %d, skipped %v", len(pt.Applied), pt.Skipped)
	}
	if d := pt.Diff(); !strings.HasPrefix(d, "--- a/compose.override.yaml\n+++ b/compose.override.yaml\n") || !strings.Contains(d, "\n--- a/compose.yaml\n") {
		t.Errorf("diff names the files otherwise than a/NAME, b/NAME:\n%s", d)
	}
	if _, err := p.Doc.SetShmSize("nope", 1<<30); err == nil {
		t.Error("no error for a missing service")
	}
	k8s, _ := loadFiles(t, map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: busybox\n"}, analyze.Config{})
	if _, err := k8s.Doc.SetShmSize("Pod/p:c", 1<<30); err == nil {
		t.Error("no error for a Kubernetes manifest")
	}
}

// TestApplyFixesRefuses a fix made for other bytes, and a patch that would not parse.
func TestApplyFixesRefuses(t *testing.T) {
	p, _ := loadFiles(t, map[string]string{"compose.yaml": "services:\n  a:\n    image: alpine\n"}, analyze.Config{})
	path := p.Doc.(*project).Index.top[0]
	if _, err := fix.Apply(p, []*analyze.Fix{{Edits: []analyze.Edit{{Path: path, Start: 0, End: 4, Old: "nope"}}}}); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("stale fix: %v", err)
	}
	if _, err := fix.Apply(p, []*analyze.Fix{{Edits: []analyze.Edit{{Path: path, Start: 0, End: 0, New: "a: [\n"}}}}); err == nil || !strings.Contains(err.Error(), "invalid YAML") {
		t.Errorf("broken patch: %v", err)
	}
}
