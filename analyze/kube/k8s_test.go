package kube_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

func loadOneK8s(t *testing.T, manifest string, need *int64) *analyze.Project {
	t.Helper()
	ps := compose.Load(context.Background(), compose.Options{Paths: []string{"-"}, Stdin: strings.NewReader(manifest), Need: need})
	if len(ps) != 1 || !ps[0].Kubernetes {
		t.Fatalf("want one Kubernetes project, got %+v", ps)
	}
	return ps[0]
}

func TestK8sPlans(t *testing.T) {
	p := loadOneK8s(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod}
spec:
  template:
    spec:
      initContainers:
        - name: init
          image: busybox
          resources: {limits: {memory: 10Gi}}
      containers:
        - name: a
          image: vllm/vllm-openai:latest
          resources: {limits: {memory: 3Gi, nvidia.com/gpu: "1"}}
          volumeMounts: [{name: dshm, mountPath: /dev/shm/}]
        - name: b
          image: busybox
          resources: {limits: {memory: 1024Mi}}
      volumes:
        - name: dshm
          emptyDir: {medium: Memory, sizeLimit: 16Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: bare}
spec:
  hostIPC: true
  containers: [{name: c, image: busybox}]
`, nil)
	if len(p.Errors) > 0 {
		t.Fatal(p.Errors)
	}
	if len(p.Plans) != 4 {
		t.Fatalf("%d plans", len(p.Plans))
	}
	a := p.Plans[0]
	if a.Service != "prod/Deployment/web:a" || a.Source != analyze.SourceEmptyDirMemory || !a.GPU || a.Profile == nil || a.Profile.ID != "vllm" {
		t.Errorf("plan a: %+v", a)
	}
	// the pod limit is the init container's 10Gi (above 3Gi+1Gi), below the 16Gi sizeLimit
	if a.Predicted == nil || *a.Predicted != 10<<30 || *a.MemLimit != 3<<30 || !a.K8s.AllLimited {
		t.Errorf("plan a predicted %v limit %v", a.Predicted, a.MemLimit)
	}
	if b := p.Plans[1]; b.Source != analyze.SourceDefault || *b.Predicted != analyze.DefaultShmSize || b.K8s.FirstInPod {
		t.Errorf("plan b: %+v", b)
	}
	if i := p.Plans[2]; i.Service != "prod/Deployment/web:init (init container)" || i.Source != analyze.SourceDefault || *i.MemLimit != 10<<30 {
		t.Errorf("init container: %+v", i)
	}
	if c := p.Plans[3]; c.Service != "Pod/bare:c" || c.Source != analyze.SourceHost || c.Predicted != nil || c.K8s.HostIPCPos.Line != 27 {
		t.Errorf("plan c: %+v %+v", c, c.K8s)
	}
	need := int64(4 << 30)
	p = loadOneK8s(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {shmdoctor.io/need: 1Gi}}\nspec: {containers: [{name: c}]}\n", &need)
	if pl := p.Plans[0]; *pl.Need != need || pl.NeedFrom != "--need" {
		t.Errorf("--need must win over the annotation: %+v", pl)
	}
}

func TestK8sInputErrors(t *testing.T) {
	p := loadOneK8s(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\nspec: {}\n", nil)
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Msg, "Helm template") || p.Errors[0].Line != 4 || p.Errors[0].Column != 9 {
		t.Errorf("helm: %+v", p.Errors)
	}
	p = loadOneK8s(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {shmdoctor.io/ignore: SHM999}}\nspec:\n  containers: [\n", nil)
	if len(p.Errors) != 1 || p.Errors[0].File != analyze.StdinName || p.Errors[0].Line == 0 {
		t.Errorf("yaml error: %+v", p.Errors)
	}
	p = loadOneK8s(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {shmdoctor.io/ignore: SHM999}}\nspec: {containers: [{name: c}]}\n", nil)
	if len(p.Errors) != 1 || p.Errors[0].Line != 3 {
		t.Errorf("bad ignore: %+v", p.Errors)
	}
	p = loadOneK8s(t, `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c"}]}}`, nil)
	if len(p.Plans) != 1 {
		t.Errorf("JSON manifest: %+v", p)
	}
}

func TestParseQuantity(t *testing.T) {
	for in, want := range map[string]int64{
		"1Gi": 1 << 30, "512Mi": 512 << 20, "1G": 1e9, "8G": 8e9, "129M": 129e6, "1.5Gi": 3 << 29,
		"123Ki": 123 << 10, "1073741824": 1 << 30, "129e6": 129e6, "2k": 2000, "32000Mi": 32000 << 20,
	} {
		got, err := analyze.ParseQuantity(in)
		if err != nil || got != want {
			t.Errorf("ParseQuantity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "1gb", "-1Gi", "Gi"} {
		if _, err := analyze.ParseQuantity(in); err == nil {
			t.Errorf("ParseQuantity(%q) accepted", in)
		}
	}
}

// corpusWithoutPods are the corpus manifests that hold no pod spec, and what the loader
// says of each: custom resources whose operator builds the pods, and resources whose pods
// come from a runtime defined in another file.
var corpusWithoutPods = map[string]string{
	"k8s/kubeflow__trainer/examples__yaml__01-multi-node.yaml":                                  "ClusterTrainingRuntime torch-distributed, not in this file",
	"k8s/kubeflow__trainer/examples__flux__lammps-train-gpus.yaml":                              "ClusterTrainingRuntime flux-distributed, not in this file",
	"k8s/NVIDIA__nim-deploy__extra/kserve__nim-models__llama-3.1-70b-instruct_2xgpu_1.1.0.yaml": "ServingRuntime nvidia-nim-llama-3.1-70b-instruct-1.1.0, not in this file",
	"k8s/zalando__postgres-operator/manifests__complete-postgres-manifest.yaml":                 "no pod spec found",
	"k8s/zalando__postgres-operator/manifests__minimal-postgres-manifest.yaml":                  "no pod spec found",
	"k8s/zalando__postgres-operator/manifests__configmap.yaml":                                  "no pod spec found",
	"k8s/cloudnative-pg__cloudnative-pg/docs__src__samples__cluster-example-full.yaml":          "no pod spec found",
	"k8s/cloudnative-pg__cloudnative-pg/docs__src__samples__cluster-example.yaml":               "no pod spec found",
}

// TestK8sCorpus analyses every manifest of the shared corpus, INDEX.tsv and the rows of
// INDEX-new.tsv not moved into it yet: no error, at least one plan (or, for the few
// without a pod spec, a note saying where the pods come from), and agreement with the
// facts the index records.
func TestK8sCorpus(t *testing.T) {
	dir := testutil.Corpus(t)
	n := 0
	rows := append(testutil.CorpusRows(t, dir), testutil.CorpusIndex(t, dir, "INDEX-new.tsv")...)
	for _, row := range rows {
		if row.Kind == "compose" {
			continue
		}
		n++
		t.Run(row.Path, func(t *testing.T) {
			projects := compose.Load(context.Background(), compose.Options{Paths: []string{filepath.Join(dir, row.Path)}})
			if len(projects) != 1 || !projects[0].Kubernetes {
				t.Fatalf("not loaded as one Kubernetes manifest: %+v", projects)
			}
			p := projects[0]
			for _, e := range p.Errors {
				t.Errorf("load error: %v", e)
			}
			if note, ok := corpusWithoutPods[row.Path]; ok {
				if len(p.Plans) > 0 || !strings.Contains(strings.Join(p.Notes, "\n"), note) {
					t.Errorf("%d plans, notes %q; want none, and a note saying %q", len(p.Plans), p.Notes, note)
				}
				return
			}
			if len(p.Plans) == 0 {
				t.Fatal("no container analysed")
			}
			rules.Check(p, analyze.Config{})
			switch row.Mount {
			case "emptyDir-memory":
				if !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.Source == analyze.SourceEmptyDirMemory }) {
					t.Error("no memory emptyDir at /dev/shm found")
				}
			case "bind":
				if !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool {
					return s.Source == analyze.SourceHostPath && s.K8s.HostPath == "/dev/shm"
				}) {
					t.Error("no hostPath of /dev/shm found")
				}
			}
			if row.Gpu == "yes" && !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.GPU }) {
				t.Error("no accelerator request found")
			}
			if row.Ipc == "hostIPC: true" && !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.K8s.HostIPC }) {
				t.Error("hostIPC not found")
			}
			for c, v := range testutil.Facts(row.MemLimit) {
				want, err := analyze.ParseQuantity(v)
				if err != nil {
					t.Fatal(err)
				}
				if !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool { return s.K8s.Container == c && s.MemLimit != nil && *s.MemLimit == want }) {
					t.Errorf("container %s: memory limit %s not found", c, v)
				}
			}
			for c, v := range testutil.Facts(row.ShmSize) {
				want, err := analyze.ParseQuantity(strings.TrimPrefix(v, "sizeLimit="))
				if err != nil {
					t.Fatal(err)
				}
				if !testutil.AnyPlan(p, func(s *analyze.ShmPlan) bool {
					return s.K8s.Container == c && s.K8s.SizeLimit != nil && *s.K8s.SizeLimit == want
				}) {
					t.Errorf("container %s: sizeLimit %s not found", c, v)
				}
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d manifests in the corpus index", n)
	}
}

// TestK8sKubeRay checks the volume the KubeRay operator adds, as its BuildPod does: in the
// Ray container only, sized to the memory limit, else the request, and not at all under
// plasma-directory or when the manifest mounts /dev/shm itself.
func TestK8sKubeRay(t *testing.T) {
	projects := compose.Load(context.Background(), compose.Options{Paths: []string{"../../testdata/k8s/kuberay/raycluster.yaml"}})
	if len(projects) != 1 || len(projects[0].Errors) > 0 {
		t.Fatalf("load: %+v", projects)
	}
	plans := map[string]*analyze.ShmPlan{}
	for _, p := range projects[0].Plans {
		plans[p.Service] = p
	}
	for _, c := range []struct {
		service string
		source  analyze.Source
		size    int64 // the sizeLimit, 0 for none
	}{
		{"RayCluster/operator-volume:headGroupSpec/ray-head", analyze.SourceOperator, 8 << 30},
		{"RayCluster/operator-volume:headGroupSpec/proxy", analyze.SourceDefault, 0},
		{"RayCluster/operator-volume:gpu-group/ray-worker", analyze.SourceOperator, 32 << 30},
		{"RayService/plasma:headGroupSpec/ray-head", analyze.SourceDefault, 0},
		{"RayService/plasma:workers/ray-worker", analyze.SourceOperator, 16 << 30},
		{"RayJob/own-volume:headGroupSpec/ray-head", analyze.SourceEmptyDirMemory, 0},
		{"RayJob/own-volume:submitterPodTemplate/submitter", analyze.SourceDefault, 0},
	} {
		p := plans[c.service]
		if p == nil {
			t.Errorf("%s: no plan", c.service)
			continue
		}
		var size int64
		if p.K8s.SizeLimit != nil {
			size = *p.K8s.SizeLimit
		}
		if p.Source != c.source || size != c.size {
			t.Errorf("%s: source %s sizeLimit %d, want %s %d", c.service, p.Source, size, c.source, c.size)
		}
		if op := p.K8s.Operator; (c.source == analyze.SourceOperator) != (op == "KubeRay") {
			t.Errorf("%s: operator %q", c.service, op)
		}
	}
	// a limit on the only container makes the pod's limit: the prediction is the smaller
	if p := plans["RayService/plasma:workers/ray-worker"]; p.Predicted == nil || *p.Predicted != 16<<30 || p.K8s.Volume != "shared-mem" {
		t.Errorf("operator volume: predicted %v volume %q", p.Predicted, p.K8s.Volume)
	}
	if p := plans["RayJob/own-volume:submitterPodTemplate/submitter"]; p.Profile != nil {
		t.Errorf("the RayJob submitter is not a Ray node: profile %s", p.Profile.ID)
	}

	// a pod volume named shared-mem is what the operator mounts
	p := loadOneK8s(t, `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: named}
spec:
  headGroupSpec:
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray:2.41.0, resources: {limits: {memory: 8Gi}}}]
        volumes: [{name: shared-mem, emptyDir: {}}]
`, nil)
	if pl := p.Plans[0]; pl.Source != analyze.SourceEmptyDirDisk || pl.K8s.Volume != "shared-mem" || pl.K8s.Operator != "" {
		t.Errorf("existing shared-mem volume: %s %+v", pl.Source, pl.K8s)
	}
}

// TestK8sUnboundedOnce checks that a memory emptyDir with neither a sizeLimit nor a memory
// limit is one SHM103 finding that names both facts.
func TestK8sUnboundedOnce(t *testing.T) {
	p := loadOneK8s(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
`, nil)
	fs := rules.Check(p, analyze.Config{})
	if len(fs) != 1 || fs[0].Rule != "SHM103" || !strings.Contains(fs[0].Message, "no sizeLimit and the container has no memory limit") {
		t.Fatalf("want one SHM103 naming both facts, got %+v", fs)
	}
}

// TestK8sTemplateDocuments checks that a manifest is refused as a Helm template only at a
// document whose YAML cannot be read (or reads a template action as a mapping key), and
// that every other document of the file is still analysed.
func TestK8sTemplateDocuments(t *testing.T) {
	p := loadOneK8s(t, `apiVersion: v1
kind: Pod
metadata: {name: before}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: files
data:
{{- range .Values.files }}
  {{ .name }}: {{ .content | quote }}
{{- end }}
---
apiVersion: v1
kind: Pod
metadata: {name: after, namespace: {{ .Release.Namespace }}}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  containers: [{name: c, image: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: last}
spec:
  containers: [{name: c, image: "{{inputs.parameters.image}}"}]
`, nil)
	var got []string
	for _, pl := range p.Plans {
		got = append(got, pl.Service)
	}
	if strings.Join(got, " ") != "Pod/before:c Pod/last:c" {
		t.Errorf("plans %q, want the readable documents' Pod/before:c and Pod/last:c", got)
	}
	want := []struct {
		line, col int
		msg       string
	}{{12, 1, "Helm template"}, {18, 36, "Helm template"}, {26, 0, "invalid YAML"}}
	if len(p.Errors) != len(want) {
		t.Fatalf("errors %+v, want %d", p.Errors, len(want))
	}
	for i, w := range want {
		e := p.Errors[i]
		if e.Line != w.line || w.col != 0 && e.Column != w.col || !strings.Contains(e.Msg, w.msg) {
			t.Errorf("error %d: %d:%d %s; want %d:%d %s", i, e.Line, e.Column, e.Msg, w.line, w.col, w.msg)
		}
	}
	for _, n := range p.Notes {
		if strings.Contains(n, "no pod spec") {
			t.Errorf("note %q beside the errors", n)
		}
	}
	// a complex key without a template action is odd YAML, not a template
	p = loadOneK8s(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: odd, labels: {? [a, b] : c}}\nspec: {containers: [{name: c}]}\n", nil)
	if len(p.Errors) > 0 || len(p.Plans) != 1 {
		t.Errorf("complex key: errors %+v, %d plans", p.Errors, len(p.Plans))
	}
}

// TestK8sNames checks the one naming scheme of containers: Kind/name:container, after
// namespace/ when the object sets one, so that the same container reads the same with
// and without a namespace; an object named by generateName is named by it.
func TestK8sNames(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web%s}
spec:
  template:
    spec:
      containers: [{name: app, image: busybox}]
`
	bare := loadOneK8s(t, fmt.Sprintf(deployment, ""), nil).Plans[0].Service
	namespaced := loadOneK8s(t, fmt.Sprintf(deployment, ", namespace: prod"), nil).Plans[0].Service
	if bare != "Deployment/web:app" || namespaced != "prod/"+bare {
		t.Errorf("names %q and %q; want Deployment/web:app and prod/Deployment/web:app", bare, namespaced)
	}
	p := loadOneK8s(t, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: pytorch, image: busybox}]
---
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: hello-}
spec:
  templates:
    - name: main
      container: {image: busybox}
`, nil)
	var got []string
	for _, pl := range p.Plans {
		got = append(got, pl.Service)
	}
	if want := "ml/PyTorchJob/train:Worker/pytorch Workflow/hello-:main"; strings.Join(got, " ") != want {
		t.Errorf("names %q, want %s", got, want)
	}
}

// TestK8sInitContainers checks that init containers and native sidecars are planned and
// named as such, and that the pod's memory limit counts them as the kubelet does
// (k8s.io/component-helpers resource.PodLimits, KEP-753): sidecars add to the containers'
// sum, and an init container runs beside the sidecars started before it.
func TestK8sInitContainers(t *testing.T) {
	p := loadOneK8s(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
    - {name: proxy, restartPolicy: Always, resources: {limits: {memory: 1Gi}}}
    - {name: migrate, resources: {limits: {memory: 6Gi}}}
    - {name: log, restartPolicy: Always, resources: {limits: {memory: 2Gi}}}
  containers:
    - {name: app, resources: {limits: {memory: 4Gi}}}
---
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  templates:
    - name: build
      initContainers: [{name: fetch, image: busybox}]
      sidecars: [{name: dind, image: docker:dind}]
      container: {image: busybox}
`, nil)
	var got []string
	for _, pl := range p.Plans {
		got = append(got, pl.Service)
	}
	want := "Pod/p:app Pod/p:proxy (sidecar container) Pod/p:migrate (init container) Pod/p:log (sidecar container) " +
		"Workflow/wf:build Workflow/wf:build/fetch (init container) Workflow/wf:build/dind (sidecar container)"
	if strings.Join(got, " ") != want {
		t.Errorf("plans\n%q\nwant\n%s", got, want)
	}
	// app 4 + sidecars 1 + 2 = 7 GiB; migrate runs with proxy: 6 + 1 = 7 GiB. 8 GiB were
	// the pod's if the sidecars counted as init containers only.
	if pl := p.Plans[0]; pl.K8s.PodMemLimit == nil || *pl.K8s.PodMemLimit != 7<<30 {
		t.Errorf("pod memory limit %v, want 7 GiB", pl.K8s.PodMemLimit)
	}
	for _, pl := range p.Plans {
		if pl.K8s.FirstInPod != (pl.K8s.Container == "app" || pl.K8s.Container == "build") {
			t.Errorf("%s: FirstInPod %v", pl.Service, pl.K8s.FirstInPod)
		}
	}
}

// TestK8sVolcanoRay checks the model of Volcano's ray plugin (volcano-sh/volcano,
// pkg/controllers/job/plugins/distributed-framework/ray/ray.go, OnPodCreate): the head and
// worker tasks' named containers run ray start, whatever their image, with no volume at
// /dev/shm; the plugin's arguments rename the tasks and containers.
func TestK8sVolcanoRay(t *testing.T) {
	projects := compose.Load(context.Background(), compose.Options{Paths: []string{"../../testdata/k8s/volcano-ray/job.yaml"}})
	if len(projects) != 1 || len(projects[0].Errors) > 0 {
		t.Fatalf("load: %+v", projects)
	}
	ray := map[string]string{ // service: "head" or "worker" for the Ray nodes, "" for the others
		"Job/ray-cluster-job:head/head":     "head",
		"Job/ray-cluster-job:worker/worker": "worker",
		"Job/renamed:master/ray":            "head",
		"Job/renamed:master/log-shipper":    "",
		"Job/renamed:workers/worker":        "worker",
		"Job/renamed:client/worker":         "",
		"Job/plain:head/head":               "",
	}
	for _, p := range projects[0].Plans {
		role, ok := ray[p.Service]
		if !ok {
			t.Errorf("unexpected plan %s", p.Service)
			continue
		}
		delete(ray, p.Service)
		isRay := p.Profile != nil && p.Profile.ID == "ray"
		noted := strings.Contains(strings.Join(p.Notes, " "), "Volcano's ray plugin")
		if isRay != (role != "") || noted != (role != "") {
			t.Errorf("%s: ray profile %v, note %v; want a Ray %q", p.Service, isRay, noted, role)
		}
		if role != "" && !strings.Contains(strings.Join(p.Notes, " "), "ray start --"+map[string]string{"head": "head", "worker": "block --address"}[role]) {
			t.Errorf("%s: notes %q do not give the plugin's command", p.Service, p.Notes)
		}
	}
	for s := range ray {
		t.Errorf("no plan %s", s)
	}
}

// TestK8sPodsElsewhere checks the resources whose pods are built from another file's
// template: the note says which, and KServe's storage container is planned as the init
// container it becomes, in pods the file does not hold (so no fix edits them).
func TestK8sPodsElsewhere(t *testing.T) {
	p := loadOneK8s(t, `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: named}
spec:
  predictor:
    model: {modelFormat: {name: nim}, runtime: nim-runtime, resources: {limits: {nvidia.com/gpu: "2"}}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: picked}
spec:
  predictor:
    sklearn: {storageUri: "gs://models/iris"}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: train}
spec:
  runtimeRef: {name: torch-distributed}
---
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata: {name: wf}
spec:
  templates:
    - name: create
      resource: {action: create, manifest: "apiVersion: v1\nkind: Pod\n"}
---
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterStorageContainer
metadata: {name: default}
spec:
  container: {name: storage-initializer, image: kserve/storage-initializer, resources: {limits: {memory: 1Gi}}}
  supportedUriFormats: [{prefix: "gs://"}]
`, nil)
	notes := strings.Join(p.Notes, "\n")
	for _, w := range []string{
		"InferenceService/named: its predictor runs in a pod built from the ServingRuntime nim-runtime, not in this file",
		"InferenceService/picked: its predictor runs in a pod built from the ServingRuntime KServe picks for its model format",
		"TrainJob/train: its pods are built from the ClusterTrainingRuntime torch-distributed, not in this file",
		"WorkflowTemplate/wf: template create creates a resource from a manifest written as text",
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("no note %q in\n%s", w, notes)
		}
	}
	if len(p.Plans) != 1 {
		t.Fatalf("plans %+v, want the storage container's", p.Plans)
	}
	pl := p.Plans[0]
	if pl.Service != "ClusterStorageContainer/default:storage-initializer (init container)" || *pl.MemLimit != 1<<30 || pl.Source != analyze.SourceDefault || pl.K8s.AllLimited {
		t.Errorf("storage container: %+v %+v", pl, pl.K8s)
	}
	if _, err := p.Doc.MountMemory(pl, "1Gi"); err == nil || !strings.Contains(err.Error(), "not in this file") {
		t.Errorf("a fix edits a pod the file does not hold: %v", err)
	}
}
