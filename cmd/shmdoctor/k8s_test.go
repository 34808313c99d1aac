package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

const multiDoc = `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ai}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.3
          args: [--tensor-parallel-size, "4"]
          resources: {limits: {nvidia.com/gpu: 4}}
---
apiVersion: v1
kind: Pod
metadata: {name: bare}
spec:
  hostIPC: true
  containers: [{name: c, image: busybox}]
`

func TestKubernetesStdin(t *testing.T) {
	t.Chdir(repoRoot(t))
	code, doc, _ := jsonRun(t, multiDoc, "-")
	if code != exitFindings || len(doc.Projects) != 1 {
		t.Fatalf("exit %d: %+v", code, doc)
	}
	p := doc.Projects[0]
	if p.Name != "<stdin>" || len(p.Services) != 2 || p.Services[0].Name != "ai/Deployment/vllm:vllm" || p.Services[1].Name != "Pod/bare:c" {
		t.Fatalf("services: %+v", p.Services)
	}
	if p.Services[0].Shm.Source != "default" || p.Services[1].Shm.Source != "host" {
		t.Errorf("sources: %+v", p.Services)
	}
	rules := map[string]int{}
	for _, f := range p.Findings {
		if f.File != "<stdin>" {
			t.Errorf("finding in %q", f.File)
		}
		rules[f.Rule] = f.Line
	}
	if rules["SHM101"] != 13 || rules["SHM105"] != 22 {
		t.Errorf("findings: %+v", p.Findings)
	}
}

func TestKubernetesFolderAndRecursive(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"k8s/a.yaml":             multiDoc,
		"k8s/b.yml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"k8s/notes.yaml":         "hello: world\n",
		"chart/templates/d.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\n",
		"app/compose.yaml":       "services:\n  a:\n    image: alpine\n",
	})
	code, doc, _ := jsonRun(t, "", dir+"/k8s")
	if code != exitFindings || len(doc.Projects) != 2 || len(doc.Projects[0].Services) != 2 || len(doc.Projects[1].Services) != 0 {
		t.Fatalf("folder: exit %d %+v", code, doc.Projects)
	}
	code, doc, _ = jsonRun(t, "", "-r", dir)
	if code != exitFindings || len(doc.Projects) != 3 {
		t.Fatalf("-r: exit %d, %d projects (want app, a.yaml, b.yml; the Helm template skipped): %+v", code, len(doc.Projects), doc.Projects)
	}
	code, doc, _ = jsonRun(t, "", dir+"/chart/templates/d.yaml")
	if code != exitUsage || len(doc.Projects[0].Errors) != 1 || !strings.Contains(doc.Projects[0].Errors[0].Message, "render it first") || doc.Projects[0].Errors[0].Line != 4 {
		t.Fatalf("helm: exit %d %+v", code, doc.Projects)
	}
}

func TestKubernetesExitCodes(t *testing.T) {
	t.Chdir(repoRoot(t))
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"silent manifests", []string{"testdata/k8s/silent"}, exitClean},
		{"warning", []string{"testdata/k8s/SHM103"}, exitFindings},
		{"fail-on error ignores warnings", []string{"--fail-on", "error", "testdata/k8s/SHM103"}, exitClean},
		{"error", []string{"--fail-on", "error", "testdata/k8s/SHM104"}, exitFindings},
		{"info only", []string{"testdata/k8s/SHM105"}, exitClean},
		{"isolation makes hostIPC a warning", []string{"--policy", "isolation", "testdata/k8s/SHM105"}, exitFindings},
		// the probe never starts containers for manifests, so always needs no daemon here
		{"probe always skips manifests", []string{"--probe", "always", "testdata/k8s/silent"}, exitClean},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args[0] != "--probe" {
				args = append([]string{"--probe", "never"}, args...)
			}
			if code, out, errs := shmdoctor(t, "", args...); code != c.want {
				t.Errorf("exit %d, want %d\n%s%s", code, c.want, out, errs)
			}
		})
	}
	code, _, _ := shmdoctor(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\n", "--probe", "never", "-")
	if code != exitUsage {
		t.Errorf("helm template on stdin: exit %d", code)
	}
}

func TestKubernetesDemoGolden(t *testing.T) {
	t.Chdir(repoRoot(t))
	code, out, errs := shmdoctor(t, "", "--probe", "never", "testdata/demo-k8s")
	if code != exitFindings || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	golden(t, "demo-k8s.txt", out)
	_, doc, _ := jsonRun(t, "", "testdata/demo-k8s")
	seen := map[string]bool{}
	for _, f := range doc.Projects[0].Findings {
		seen[f.Rule] = true
	}
	// the Kubernetes form of each compose demo finding
	for _, r := range []string{"SHM101", "SHM102", "SHM103", "SHM104", "SHM105", "SHM106", "SHM111"} {
		if !seen[r] {
			t.Errorf("demo-k8s has no %s", r)
		}
	}
	_, doc, _ = jsonRun(t, "", "testdata/demo")
	if len(doc.Projects) != 1 || doc.Projects[0].Name != "llm-demo" {
		t.Errorf("testdata/demo must stay one compose project: %+v", doc.Projects)
	}
}

// TestKubernetesNames checks that a container has one name, whether or not its object
// sets a namespace: namespace/ goes before Kind/name:container, in every format that
// names it, and suppressions written beside it match it.
func TestKubernetesNames(t *testing.T) {
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web%s}
spec:
  template:
    spec:
      containers:
        - name: app # shmdoctor-ignore SHM103 sized by the node on purpose
          volumeMounts: [{name: dshm, mountPath: /dev/shm}]
        - name: side
          volumeMounts: [{name: dshm, mountPath: /dev/shm}]
      volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`
	for ns, want := range map[string]string{"": "Deployment/web", ", namespace: prod": "prod/Deployment/web"} {
		in := fmt.Sprintf(manifest, ns)
		_, text, _ := shmdoctor(t, in, "--probe", "never", "-")
		_, junit, _ := shmdoctor(t, in, "--probe", "never", "--format", "junit", "-")
		_, doc, _ := jsonRun(t, in, "-")
		for format, out := range map[string]string{"text": text, "junit": junit} {
			if !strings.Contains(out, want+":side") || strings.Count(out, "Deployment/") != strings.Count(out, want+":") {
				t.Errorf("%s names %s:side otherwise:\n%s", format, want, out)
			}
		}
		var names, findings []string
		for _, s := range doc.Projects[0].Services {
			names = append(names, s.Name)
		}
		for _, f := range doc.Projects[0].Findings {
			findings = append(findings, f.Service)
		}
		// the comment on app's name silences app's SHM103: side's is the one reported
		if strings.Join(names, " ") != want+":app "+want+":side" || strings.Join(findings, " ") != want+":side" {
			t.Errorf("json: services %q, findings %q", names, findings)
		}
	}
}
