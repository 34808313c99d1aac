package rules_test

import (
	"context"
	"path/filepath"
	"strings"
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

// TestK8sSnippetKeys checks that a remediation's YAML puts the container under the key
// that holds it: an init container under initContainers, an Argo template's container
// under container, not under containers.
func TestK8sSnippetKeys(t *testing.T) {
	ps := compose.Load(context.Background(), compose.Options{Paths: []string{"-"}, Stdin: strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmdoctor.io/need: 1Gi}}
spec:
  initContainers: [{name: unpack, image: busybox}]
  containers: [{name: app, image: busybox, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]
---
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  templates:
    - name: train
      metadata: {annotations: {shmdoctor.io/need: 1Gi}}
      container: {image: busybox}
`)})
	want := map[string]string{
		"Pod/p:unpack (init container)": "initContainers:\n      - name: unpack\n        volumeMounts:\n          - name: dshm\n",
		"Workflow/wf:train":             "container:\n      volumeMounts:\n        - name: dshm\n",
	}
	for _, f := range rules.Check(ps[0], analyze.Config{}) {
		if f.Rule != "SHM101" {
			continue
		}
		if w, ok := want[f.Service]; !ok || !strings.Contains(f.Remediation, w) {
			t.Errorf("%s: remediation %q, want it to hold %q", f.Service, f.Remediation, w)
		}
		delete(want, f.Service)
	}
	if len(want) > 0 {
		t.Errorf("no SHM101 for %v", want)
	}
}

// TestK8sHostIPCPodLevel checks that hostIPC is reported once per pod, named by the pod
// and not by one of its containers, and that its advice covers every container whose
// /dev/shm is the node's, and only those.
func TestK8sHostIPCPodLevel(t *testing.T) {
	ps := compose.Load(context.Background(), compose.Options{Paths: []string{"-"}, Stdin: strings.NewReader(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod, annotations: {shmdoctor.io/need: 2Gi}}
spec:
  template:
    spec:
      hostIPC: true
      initContainers: [{name: unpack, image: busybox}]
      containers:
        - {name: own, image: busybox, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}
        - {name: plain, image: busybox}
      volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 4Gi}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {shmdoctor.io/ignore: SHM105 dedicated nodes}}
spec:
  hostIPC: true
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
`)})
	var got []analyze.Finding
	for _, f := range rules.Check(ps[0], analyze.Config{}) {
		if f.Rule == "SHM105" {
			got = append(got, f)
		}
	}
	if len(got) != 2 {
		t.Fatalf("SHM105 findings %+v, want one per pod", got)
	}
	web, p := got[0], got[1]
	if web.Service != "prod/Deployment/web" || web.Line != 7 || web.Column != 7 {
		t.Errorf("finding named %q at %d:%d, want the pod prod/Deployment/web at its hostIPC key 7:7", web.Service, web.Line, web.Column)
	}
	if want := "hostIPC is true: the pod shares the node's ipc namespace, and plain and unpack (init container) see the node's /dev/shm"; web.Message != want {
		t.Errorf("message %q\nwant %q", web.Message, want)
	}
	for _, w := range []string{"containers:\n      - name: plain\n", "initContainers:\n      - name: unpack\n", "sizeLimit: 2Gi"} {
		if !strings.Contains(web.Remediation, w) {
			t.Errorf("remediation %q does not hold %q", web.Remediation, w)
		}
	}
	if strings.Contains(web.Remediation, "name: own") {
		t.Errorf("remediation mounts a volume in the container that has one: %q", web.Remediation)
	}
	if p.Service != "Pod/p" || p.Suppressed == nil || p.Suppressed.Kind != analyze.SuppressAnnotation {
		t.Errorf("annotated pod: %s suppressed by %+v", p.Service, p.Suppressed)
	}
}
