package kube

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// What the controllers of custom resources do to the pods they build, read from their
// source. KubeRay's is beside the resolver (rayCluster, kuberay).

// rayNode is a container that Volcano's ray plugin turns into a Ray node: its name, and
// the command the plugin gives it.
type rayNode struct {
	container string
	command   []string
}

// volcanoJob records the Ray nodes of a Volcano Job with the ray plugin. The plugin's
// OnPodCreate replaces the command of the head task's head container and of the worker
// task's worker container (names set by its --head, --headContainer, --worker and
// --workerContainer arguments) with ray start, and adds ports and a Service, but no
// volume: the pods keep the runtime's /dev/shm unless they mount one (volcano-sh/volcano,
// pkg/controllers/job/plugins/distributed-framework/ray/ray.go). Without a head task the
// plugin fails the pod's creation, and nothing is modelled.
func (r *k8sResolver) volcanoJob(spec *yaml.Node) {
	plugin := source.Get(source.Get(spec, "plugins"), "ray")
	if plugin == nil {
		return
	}
	args := map[string]string{"head": "head", "headContainer": "head", "worker": "worker", "workerContainer": "worker", "port": "6379", "dashboardPort": "8265", "clientPort": "10001"}
	words := source.Scalars0(plugin)
	for i := 0; i < len(words); i++ {
		name, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(words[i], "-"), "-"), "=")
		if _, known := args[name]; !known || !strings.HasPrefix(words[i], "-") {
			continue
		}
		if !ok && i+1 < len(words) {
			i++
			value = words[i]
		}
		args[name] = value
	}
	tasks := map[string]*yaml.Node{}
	for _, t := range seq(source.Get(spec, "tasks")) {
		if ps := source.Deref(source.Get(source.Get(t, "template"), "spec")); ps != nil {
			tasks[source.Scalar(source.Get(t, "name"))] = ps
		}
	}
	if tasks[args["head"]] == nil {
		return
	}
	if r.volcanoRay == nil {
		r.volcanoRay = map[*yaml.Node]rayNode{}
	}
	r.volcanoRay[tasks[args["head"]]] = rayNode{container: args["headContainer"], command: []string{"sh", "-c",
		fmt.Sprintf("ray start --head --block --dashboard-host=0.0.0.0 --port=%s --dashboard-port=%s --ray-client-server-port=%s", args["port"], args["dashboardPort"], args["clientPort"])}}
	if ps := tasks[args["worker"]]; ps != nil && args["worker"] != args["head"] {
		r.volcanoRay[ps] = rayNode{container: args["workerContainer"], command: []string{"sh", "-c", "ray start --block --address=<head>:" + args["port"]}}
	}
}

// kserveFrameworks are the keys of a KServe predictor that describe a model, not a
// container: KServe merges them into the container of the ServingRuntime it picks
// (kserve/kserve pkg/apis/serving/v1beta1/predictor.go, PredictorSpec; the runtime in
// pkg/controller/v1beta1/inferenceservice/components/predictor.go).
var kserveFrameworks = []string{"model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle"}

// inferenceService notes a KServe InferenceService whose predictor is a model: its pod is
// the ServingRuntime's, defined in another file, and so is its /dev/shm. A predictor with
// containers of its own is a pod spec, and walked as one.
func (r *k8sResolver) inferenceService(obj k8sObject, spec *yaml.Node) {
	predictor := source.Get(spec, "predictor")
	for _, f := range kserveFrameworks {
		m := source.Get(predictor, f)
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		runtime := "the ServingRuntime KServe picks for its model format"
		if name := source.Scalar(source.Get(m, "runtime")); name != "" {
			runtime = "the ServingRuntime " + name
		}
		r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: its predictor runs in a pod built from %s, not in this file: analyse that runtime's manifest", obj.ref(), runtime))
		return
	}
}

// trainJob notes a Kubeflow TrainJob: its pods are built from the training runtime it
// names (a ClusterTrainingRuntime unless runtimeRef says otherwise), with its trainer's
// image, command and resources merged in (kubeflow/trainer
// pkg/apis/trainer/v1alpha1/trainjob_types.go, RuntimeRef); /dev/shm is the runtime's.
func (r *k8sResolver) trainJob(obj k8sObject, spec *yaml.Node) {
	ref := source.Get(spec, "runtimeRef")
	kind, name := source.Scalar(source.Get(ref, "kind")), source.Scalar(source.Get(ref, "name"))
	if kind == "" {
		kind = "ClusterTrainingRuntime"
	}
	r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: its pods are built from the %s %s, not in this file: analyse that runtime's manifest", obj.ref(), kind, name))
}

// storageContainer plans the container of a KServe ClusterStorageContainer: KServe runs
// it as the storage-initializer init container of the pods whose storageUri it serves
// (kserve/kserve pkg/apis/serving/v1alpha1/storage_container_types.go). Those pods are
// not in the file: nothing is known of their volumes or other containers.
func (r *k8sResolver) storageContainer(obj k8sObject, spec *yaml.Node) {
	c := source.Get(spec, "container")
	if c == nil || c.Kind != yaml.MappingNode {
		return
	}
	name := source.Scalar(source.Get(c, "name"))
	r.plans(obj, "", obj.ref(), nil, []podContainer{{node: c, label: name, role: analyze.RoleInit, key: "container"}}, false, nil, false)
	plan := r.p.Plans[len(r.p.Plans)-1]
	plan.Notes = append(plan.Notes, "KServe runs this container as the storage-initializer init container of the pods whose storageUri it serves; their volumes are not in this file")
}
