package rules_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// k8sFixtureConfig reads the "# shmdoctor: ..." header of the first manifest of a folder.
func k8sFixtureConfig(t *testing.T, dir string) (analyze.Config, *int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("%s: no manifests", dir)
	}
	return fixtureHeader(t, files[0])
}

// TestK8sRules runs the rules over every manifest folder under testdata/k8s and matches
// findings to the want comments, as TestRules does for compose.
func TestK8sRules(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/k8s/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, need := k8sFixtureConfig(t, dir)
			projects := compose.Load(context.Background(), compose.Options{Paths: []string{dir}, Need: need})
			var findings []analyze.Finding
			for _, p := range projects {
				if !p.Kubernetes {
					t.Fatalf("%s loaded as compose", p.Name)
				}
				for _, e := range p.Errors {
					t.Fatalf("load error: %v", e)
				}
				findings = append(findings, rules.Check(p, cfg)...)
			}
			checkWants(t, findings, fixtureWants(t, dir))
		})
	}
}
