package compose

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestDiscoverVariants runs -r over testdata/discover: a base with its override, a GPU
// overlay, a standalone vLLM variant, a production overlay, a compose file named otherwise
// (ray-cluster.yaml), two YAML files that are not compose files (values.yaml has services), a folder with only compose.cuda.yaml, a compose folder holding a stack
// and a service's configuration, and an overlay whose merge does not load. Each variant is checked the way docker compose runs it, and said so.
func TestDiscoverVariants(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "testdata", "discover"))
	if err != nil {
		t.Fatal(err)
	}
	projects := Load(context.Background(), Options{Paths: []string{root}, Recursive: true})
	got := map[string]*analyze.Project{}
	for _, p := range projects {
		for _, e := range p.Errors {
			t.Errorf("%v", e)
		}
		key := strings.Join(p.Files, " ")
		got[key] = p
		for _, f := range p.Doc.FilesRead() {
			if b := filepath.Base(f); b == "values.yaml" || b == "compose-lint.yaml" || b == "prometheus.yml" {
				t.Errorf("%s read %s, which is not a compose variant", key, f)
			}
		}
	}
	stack := filepath.Join(root, "stack")
	in := func(dir string, names ...string) string {
		for i, n := range names {
			names[i] = filepath.Join(dir, n)
		}
		return strings.Join(names, " ")
	}
	want := map[string]string{ // files -> how the variant was checked ("" for a default project)
		in(stack, "docker-compose.yml", "docker-compose.override.yml"): "",
		in(stack, "docker-compose.yml", "docker-compose.gpu.yml"):      "overlay",
		in(stack, "docker-compose.yml", "docker-compose.prod.yaml"):    "overlay",
		in(stack, "docker-compose-vllm.yml"):                           "standalone",
		in(stack, "ray-cluster.yaml"):                                  "standalone",
		in(filepath.Join(root, "cuda-only"), "compose.cuda.yaml"):      "standalone",
		in(filepath.Join(root, "merge-fails"), "compose.yaml"):         "",
		in(filepath.Join(root, "merge-fails"), "compose.cycle.yaml"):   "standalone",
		in(filepath.Join(root, "deploy", "compose"), "nims.yaml"):      "standalone",
		// common/docker-compose-db.yml is included by zz-app: no project of its own.
		in(filepath.Join(root, "zz-app"), "compose.yaml"): "",
	}
	if len(projects) != len(want) {
		t.Errorf("%d projects, want %d: %v", len(projects), len(want), slices.Sorted(mapKeys(got)))
	}
	for files, mode := range want {
		p := got[files]
		switch {
		case p == nil:
			t.Errorf("no project of %s", files)
		case mode == "" && p.Variant != nil:
			t.Errorf("%s: a default project reported as a variant: %+v", files, p.Variant)
		case mode != "" && (p.Variant == nil || p.Variant.Mode() != mode):
			t.Errorf("%s: want %s, got %+v", files, mode, p.Variant)
		}
	}

	// The GPU overlay: trainer merged (8g from the base, 4g and two GPUs from the
	// overlay), web left to the default project.
	gpu := got[in(stack, "docker-compose.yml", "docker-compose.gpu.yml")]
	if gpu == nil {
		t.FailNow()
	}
	if v := gpu.Variant; v.CheckedAs() != "-f "+filepath.Join(stack, "docker-compose.yml")+" -f "+filepath.Join(stack, "docker-compose.gpu.yml") || !strings.Contains(v.Why, "trainer") {
		t.Errorf("gpu overlay: checked as %q because %q", v.CheckedAs(), v.Why)
	}
	if len(gpu.Plans) != 1 || gpu.Plans[0].Service != "trainer" {
		t.Fatalf("gpu overlay analyses %d services, want trainer alone", len(gpu.Plans))
	}
	if tr := gpu.Plans[0]; !tr.GPU || *tr.Configured != 8<<30 || tr.MemLimit == nil || *tr.MemLimit != 4<<30 {
		t.Errorf("gpu overlay: trainer not merged: gpu %v, shm_size %v, mem %v", tr.GPU, tr.Configured, tr.MemLimit)
	}
	if !testutil.HasFinding(rules.Check(gpu, analyze.Config{}), "SHM012", "trainer") {
		t.Error("gpu overlay: 8g of /dev/shm under a 4g limit not reported")
	}
	vllm := got[in(stack, "docker-compose-vllm.yml")]
	if vllm == nil || !testutil.HasFinding(rules.Check(vllm, analyze.Config{}), "SHM010", "vllm") {
		t.Error("standalone vllm variant: SHM010 not reported")
	}
	cycle := got[in(filepath.Join(root, "merge-fails"), "compose.cycle.yaml")]
	if cycle == nil || !cycle.Compose || !strings.Contains(cycle.Variant.Why, "does not load") {
		t.Errorf("a variant whose merge fails is not checked alone: %+v", cycle)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestVariantNames pins the names -r takes as compose variants: dclint's
// ^(docker-)?compose.*\.ya?ml$ and more.
func TestVariantNames(t *testing.T) {
	for name, want := range map[string]bool{
		"docker-compose.gpu.yml": true, "compose.cuda.yaml": true, "docker-compose-vllm.yml": true,
		"docker-compose.prod.yaml": true, "compose.override.yml": true, "compose_tracker.yaml": true,
		"gpu.compose.yaml": true, "Docker-Compose.GPU.YML": true, "ml__docker-compose.yml": true,
		"deploy/compose/nims.yaml": true, "docker-compose/gpu.yml": true,
		"config.yaml": false, "deploy/k8s/values.yaml": false, "docker-compose.yml.example": false, "compose.json": false, "values.yaml": false,
	} {
		if isVariantName(name) != want {
			t.Errorf("%s: variant name %v, want %v", name, !want, want)
		}
	}
}

// TestDiscoverBrokenVariants gives -r a folder whose default file does not parse, with an
// overlay beside it, and a variant that does not parse: the overlay is checked alone (no
// base to merge over), the broken variant reports its error at its line, nothing stops.
func TestDiscoverBrokenVariants(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"a/compose.yaml":           "services:\n  web: [\n",
		"a/compose.gpu.yaml":       "services:\n  web:\n    shm_size: 1g\n",
		"b/compose.yaml":           "services:\n  web:\n    image: nginx\n",
		"b/docker-compose.dev.yml": "services:\n  web:\n    image: nginx\n    shm_size: [1g\n",
	})
	projects := Load(context.Background(), Options{Paths: []string{dir}, Recursive: true})
	if len(projects) != 4 {
		t.Fatalf("%d projects, want 4", len(projects))
	}
	gpu, dev := projects[1], projects[3]
	if gpu.Variant == nil || gpu.Variant.Mode() != "standalone" || !strings.Contains(gpu.Variant.Why, "does not load") || !gpu.Compose || len(gpu.Errors) > 0 {
		t.Errorf("overlay of a broken base: %+v, errors %v", gpu.Variant, gpu.Errors)
	}
	if dev.Variant == nil || len(dev.Errors) != 1 || dev.Errors[0].Line != 4 || !strings.HasSuffix(dev.Errors[0].File, "docker-compose.dev.yml") {
		t.Errorf("broken variant: %+v, errors %v", dev.Variant, dev.Errors)
	}
	if !projects[2].Compose {
		t.Errorf("b's default project was not analysed: %v", projects[2].Errors)
	}
}

// TestUnmistakablyCompose pins the content that makes a YAML file of any name a compose
// file for -r, and the look-alikes that do not.
func TestUnmistakablyCompose(t *testing.T) {
	for doc, want := range map[string]bool{
		"version: '3'\nservices:\n  a:\n    image: x\nnetworks: {n: {}}\nx-common: &c {}\n": true,
		"services:\n  a:\n    build: .\n  b:\n    extends: {service: a}\n":                  true,
		"replicaCount: 2\nservices:\n  a:\n    image: x\n":                                  false, // Helm values
		"services:\n  a:\n    image: {repository: x}\n":                                     false,
		"services:\n  - docker:dind\nstages: [test]\n":                                      false, // GitLab CI
		"services:\n  a:\n    ports: [80]\n":                                                false, // an override
		"services: {}\n":                                                                    false,
		"services:\n  a: [\n":                                                               false,
	} {
		if got := isUnmistakablyCompose([]byte(doc)); got != want {
			t.Errorf("%q: %v, want %v", doc, got, want)
		}
	}
}
