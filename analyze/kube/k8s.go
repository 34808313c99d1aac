package kube

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/shmdoctor/shmdoctor/analyze/suppress"
	"go.yaml.in/yaml/v3"
)

// Kind of a YAML input, told by its content.
type InputKind int

const (
	InputCompose InputKind = iota
	InputKubernetes
	inputHelm
)

var (
	k8sAPIVersion = regexp.MustCompile(`(?m)^["']?apiVersion["']?\s*:`)
	k8sKind       = regexp.MustCompile(`(?m)^["']?kind["']?\s*:`)
)

// Sniff tells a Kubernetes manifest (documents with apiVersion and kind) and an unrendered
// Helm template from a compose file. A manifest is a Helm template when one of its
// documents cannot be read for its template actions; line and col are where the first
// such document fails.
func Sniff(b []byte) (kind InputKind, line, col int) {
	textual := k8sAPIVersion.Match(b) && k8sKind.Match(b)
	if textual {
		if bytes.Contains(b, []byte("{{")) {
			_, errs := readManifest("", b)
			for _, e := range errs {
				if e.Msg == helmRefusal {
					return inputHelm, e.Line, e.Column
				}
			}
		}
		return InputKubernetes, 0, 0
	}
	// JSON manifests and flow style: decide on the parsed documents.
	if !bytes.Contains(b, []byte("apiVersion")) || !bytes.Contains(b, []byte("kind")) {
		return InputCompose, 0, 0
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return InputCompose, 0, 0
		}
		if len(doc.Content) > 0 && isK8sObject(doc.Content[0]) {
			return InputKubernetes, 0, 0
		}
	}
}

func isK8sObject(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && source.Scalar(source.Get(n, "apiVersion")) != "" && source.Scalar(source.Get(n, "kind")) != ""
}

// SniffFile reads a file and sniffs it; unreadable files are compose's to report.
func SniffFile(s *source.Sources, p string) InputKind {
	b, err := source.ReadSource(s, p)
	if err != nil {
		return InputCompose
	}
	k, _, _ := Sniff(b)
	return k
}

// IsYAMLName reports a .yaml or .yml file name.
func IsYAMLName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// FolderManifests lists the Kubernetes manifests (and Helm templates, which report their
// own error) directly in dir, sorted.
func FolderManifests(s *source.Sources, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !IsYAMLName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if k := SniffFile(s, p); k != InputCompose {
			out = append(out, p)
		}
	}
	return out
}

// manifest is one Kubernetes manifest file as the loader reads it: the model, the file,
// and where in it fixes edit. It is the model's Document.
type manifest struct {
	*analyze.Project
	set   *source.Set
	texts *fix.Texts
	abs   string // the file: absolute, or "-"
	// nodes are where each container's fixes edit.
	nodes map[*analyze.K8sPlan]*podNodes
}

// podNodes are where fixes edit a container: the container, the mapping holding its pod's
// volumes (the pod spec, or an Argo template) and the volume mounted at /dev/shm.
type podNodes struct {
	container, spec, volume *yaml.Node
}

// loadKubernetes loads one manifest file (or standard input, "-", named stdinName) as a
// project of its own; need is --need, named needFrom.
func Load(file string, stdin []byte, stdinName string, need *int64, needFrom string, input *source.Sources) *analyze.Project {
	p := &manifest{Project: &analyze.Project{Kubernetes: true}, set: source.NewSet(input), abs: file, nodes: map[*analyze.K8sPlan]*podNodes{}}
	p.texts = fix.NewTexts(p.set)
	p.Doc = p
	var content []byte
	if file == "-" {
		content = stdin
		p.set.Names[file] = stdinName
	} else {
		if a, err := filepath.Abs(file); err == nil {
			p.abs = a
		}
		b, err := source.ReadSource(input, p.abs)
		if err != nil {
			p.Name, p.Files = file, []string{file}
			p.Fail(analyze.Pos{File: file}, "%s", source.CleanPathErr(err))
			return p.Project
		}
		content = b
	}
	input.Public(p.abs, content)
	display := p.set.Display(p.abs)
	p.Name, p.Files = display, []string{display}
	docs, errs := readManifest(display, content)
	p.set.Docs[p.abs], p.set.Src[p.abs] = docs, content
	p.Errors = append(p.Errors, errs...)
	directives := suppress.ScanDirectives(content, docs)
	for _, d := range directives {
		if e := d.Problem(display); e != nil {
			p.Errors = append(p.Errors, e)
		}
	}
	r := &k8sResolver{p: p, file: display, abs: p.abs, need: need, needFrom: needFrom, sups: map[analyze.Pos]*analyze.Suppressor{}}
	for _, d := range docs {
		r.object(d)
	}
	for _, d := range directives {
		if d.Err != nil {
			continue
		}
		s := d.Suppressor(display)
		p.scope(s)
		p.Suppressors = append(p.Suppressors, s)
	}
	if len(p.Plans) == 0 && len(p.Errors) == 0 && len(p.Notes) == 0 {
		p.Notes = append(p.Notes, "no pod spec found: nothing here runs a container")
	}
	return p.Project
}

// k8sResolver turns the objects of one manifest file into plans.
type k8sResolver struct {
	p    *manifest
	file string // as displayed
	abs  string
	need *int64
	// needFrom names who set need: --need or the config file.
	needFrom string
	// sups are the shmdoctor.io/ignore annotations by position: an object's annotation
	// covers the containers of every pod spec it holds.
	sups map[analyze.Pos]*analyze.Suppressor
	// rayGroups maps the pod spec of a KubeRay head or worker group to the group, whose
	// rayStartParams decide whether the operator mounts /dev/shm.
	rayGroups map[*yaml.Node]*yaml.Node
	// raySubmitters are the pod specs of RayJob submitters: clients of a Ray cluster.
	raySubmitters map[*yaml.Node]bool
	// volcanoRay maps the pod spec of a Volcano Job's head or worker task to the Ray node
	// its ray plugin starts in it.
	volcanoRay map[*yaml.Node]rayNode
}

func (r *k8sResolver) pos(n *yaml.Node) analyze.Pos {
	if n == nil {
		return analyze.Pos{}
	}
	return analyze.Pos{File: r.file, Line: n.Line, Column: n.Column}
}

// k8sObject is one object of a manifest and what its pod specs inherit from it.
type k8sObject struct {
	kind, namespace, name string
	meta                  []*yaml.Node // metadata mappings, outermost first
	// replicas counts the pods of a Kubeflow PyTorchJob or MPIJob, 0 for other kinds.
	replicas int
}

// ref names the object in reports: Kind/name, after namespace/ when the manifest sets one,
// so that Kind/name:container reads the same with and without a namespace (as kustomize
// adds one).
func (o k8sObject) ref() string {
	if o.namespace != "" {
		return o.namespace + "/" + o.kind + "/" + o.name
	}
	return o.kind + "/" + o.name
}

// pod names a pod spec of the object: the object, and its replica or group after a colon.
// Its containers are named below it.
func (o k8sObject) pod(group string) string {
	if group == "" {
		return o.ref()
	}
	return o.ref() + ":" + group
}

var argoKinds = map[string]bool{"Workflow": true, "WorkflowTemplate": true, "ClusterWorkflowTemplate": true, "CronWorkflow": true}

// object finds the pod specs of one document: a List's items, Argo workflows by their
// templates, anything else by the shape of a pod spec.
func (r *k8sResolver) object(n *yaml.Node) {
	n = source.Deref(n)
	if !isK8sObject(n) {
		return
	}
	kind := source.Scalar(source.Get(n, "kind"))
	if items := source.Get(n, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for _, it := range items.Content {
			r.object(it)
		}
		return
	}
	meta := source.Get(n, "metadata")
	obj := k8sObject{kind: kind, name: source.Scalar(source.Get(meta, "name")), namespace: source.Scalar(source.Get(meta, "namespace"))}
	if obj.name == "" {
		obj.name = source.Scalar(source.Get(meta, "generateName")) // Argo workflows, Jobs: the prefix the API server completes
	}
	if meta != nil {
		obj.meta = append(obj.meta, meta)
	}
	obj.replicas = jobReplicas(kind, source.Get(n, "spec"))
	if argoKinds[kind] && strings.HasPrefix(source.Scalar(source.Get(n, "apiVersion")), "argoproj.io/") {
		r.argo(obj, n)
		return
	}
	if strings.HasPrefix(source.Scalar(source.Get(n, "apiVersion")), "ray.io/") {
		r.rayCluster(kind, n)
	}
	switch api := source.Scalar(source.Get(n, "apiVersion")); {
	case kind == "Job" && strings.HasPrefix(api, "batch.volcano.sh/"):
		r.volcanoJob(source.Get(n, "spec"))
	case kind == "ClusterStorageContainer" && strings.HasPrefix(api, "serving.kserve.io/"):
		r.storageContainer(obj, source.Get(n, "spec"))
		return
	case kind == "InferenceService" && strings.HasPrefix(api, "serving.kserve.io/"):
		r.inferenceService(obj, source.Get(n, "spec"))
	case kind == "TrainJob" && strings.HasPrefix(api, "trainer.kubeflow.org/"):
		r.trainJob(obj, source.Get(n, "spec"))
	}
	r.walk(obj, n, nil, "", nil, 0)
}

// rayClusterSpecs is where each KubeRay kind holds its RayClusterSpec.
var rayClusterSpecs = map[string][]string{
	"RayCluster": {"spec"},
	"RayService": {"spec", "rayClusterConfig"},
	"RayJob":     {"spec", "rayClusterSpec"},
}

// rayCluster records the pod specs of a KubeRay object's head and worker groups, and of
// a RayJob's submitter, which is not a Ray node: it runs ray job submit against the
// cluster's dashboard (kuberay, ray-operator/controllers/ray/common/job.go).
func (r *k8sResolver) rayCluster(kind string, n *yaml.Node) {
	path, ok := rayClusterSpecs[kind]
	if !ok {
		return
	}
	if r.rayGroups == nil {
		r.rayGroups, r.raySubmitters = map[*yaml.Node]*yaml.Node{}, map[*yaml.Node]bool{}
	}
	if ps := source.Deref(source.Get(source.Get(source.Get(n, "spec"), "submitterPodTemplate"), "spec")); ps != nil {
		r.raySubmitters[ps] = true
	}
	spec := n
	for _, k := range path {
		spec = source.Get(spec, k)
	}
	groups := append([]*yaml.Node{source.Deref(source.Get(spec, "headGroupSpec"))}, seq(source.Get(spec, "workerGroupSpecs"))...)
	for _, g := range groups {
		if ps := source.Deref(source.Get(source.Get(g, "template"), "spec")); ps != nil {
			r.rayGroups[ps] = g
		}
	}
}

// structural keys lead to a pod spec without naming a replica or group.
var structural = map[string]bool{"spec": true, "template": true, "jobTemplate": true, "podTemplate": true, "podSpec": true, "pod": true}

// podSpecLists are the keys of a pod spec that hold its containers and volumes.
var podSpecLists = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true, "volumes": true}

// walk looks for mappings shaped like a pod spec (containers: a list of named mappings).
// parent is the mapping holding n; group is the nearest key naming a replica or group.
// outer are the volumes of an enclosing pod spec: a pod spec nested in another (KServe's
// workerSpec) mounts them.
func (r *k8sResolver) walk(obj k8sObject, n, parent *yaml.Node, group string, outer []*yaml.Node, depth int) {
	n = source.Deref(n)
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if isPodSpec(n) {
			o := obj
			if m := source.Get(parent, "metadata"); m != nil && parent != nil && depth > 1 {
				o.meta = append(slices.Clone(obj.meta), m)
			}
			r.pod(o, group, n, outer)
			outer = append(seq(source.Get(n, "volumes")), outer...)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if depth == 0 && (k == "metadata" || k == "status") || isPodSpec(n) && podSpecLists[k] {
				continue
			}
			g := group
			if !structural[k] {
				g = k
			}
			r.walk(obj, n.Content[i+1], n, g, outer, depth+1)
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			g := group
			if name := source.Scalar(source.Get(it, "groupName")); name != "" {
				g = name
			} else if name := source.Scalar(source.Get(it, "name")); name != "" {
				g = name
			}
			r.walk(obj, it, parent, g, outer, depth+1)
		}
	}
}

func isPodSpec(n *yaml.Node) bool {
	cs := source.Get(n, "containers")
	if cs == nil || cs.Kind != yaml.SequenceNode || len(cs.Content) == 0 {
		return false
	}
	for _, c := range cs.Content {
		if c = source.Deref(c); c.Kind != yaml.MappingNode || source.Get(c, "name") == nil {
			return false
		}
	}
	return true
}

// podContainer is a container to plan: its node, its label, its role in the pod and the
// key of the pod spec or template that holds it.
type podContainer struct {
	node  *yaml.Node
	label string
	role  string
	key   string
}

// pod plans every container of a pod spec: its containers, then its init containers, of
// which those with restartPolicy: Always are native sidecars.
func (r *k8sResolver) pod(obj k8sObject, group string, spec *yaml.Node, outer []*yaml.Node) {
	var cs []podContainer
	for _, c := range seq(source.Get(spec, "containers")) {
		cs = append(cs, podContainer{node: c, label: source.Scalar(source.Get(c, "name")), key: "containers"})
	}
	for _, c := range seq(source.Get(spec, "initContainers")) {
		role := analyze.RoleInit
		if sidecar(c) {
			role = analyze.RoleSidecar
		}
		cs = append(cs, podContainer{node: c, label: source.Scalar(source.Get(c, "name")), role: role, key: "initContainers"})
	}
	r.plans(obj, group, obj.pod(group), spec, cs, true, append(seq(source.Get(spec, "volumes")), outer...), false)
}

// sidecar reports an init container that keeps running beside the containers: a native
// sidecar (Kubernetes 1.29+, restartPolicy: Always).
func sidecar(c *yaml.Node) bool { return source.Scalar(source.Get(c, "restartPolicy")) == "Always" }

// argo plans the containers of an Argo workflow's templates: container, script and
// containerSet, the template's init containers and sidecars, with the template's volumes
// before the workflow's. Each template is a pod of its own.
func (r *k8sResolver) argo(obj k8sObject, n *yaml.Node) {
	spec := source.Get(n, "spec")
	if obj.kind == "CronWorkflow" {
		spec = source.Get(spec, "workflowSpec")
	}
	wfVolumes := seq(source.Get(spec, "volumes"))
	for _, t := range seq(source.Get(spec, "templates")) {
		name := source.Scalar(source.Get(t, "name"))
		var cs []podContainer
		for _, k := range []string{"container", "script"} {
			if c := source.Get(t, k); c != nil && c.Kind == yaml.MappingNode {
				cs = append(cs, podContainer{node: c, label: name, key: k})
			}
		}
		for _, c := range seq(source.Get(source.Get(t, "containerSet"), "containers")) {
			cs = append(cs, podContainer{node: c, label: name + "/" + source.Scalar(source.Get(c, "name")), key: "containers"})
		}
		if m := source.Get(source.Get(t, "resource"), "manifest"); m != nil {
			r.p.Notes = append(r.p.Notes, fmt.Sprintf("%s: template %s creates a resource from a manifest written as text: analyse that manifest on its own", obj.ref(), name))
		}
		if len(cs) == 0 {
			continue
		}
		for _, k := range []struct{ key, role string }{{"initContainers", analyze.RoleInit}, {"sidecars", analyze.RoleSidecar}} {
			for _, c := range seq(source.Get(t, k.key)) {
				cs = append(cs, podContainer{node: c, label: name + "/" + source.Scalar(source.Get(c, "name")), role: k.role, key: k.key})
			}
		}
		o := obj
		if m := source.Get(t, "metadata"); m != nil {
			o.meta = append(slices.Clone(obj.meta), m)
		}
		volumes := append(seq(source.Get(t, "volumes")), wfVolumes...)
		r.plans(o, "", obj.pod(name), t, cs, false, volumes, true)
	}
}

func seq(n *yaml.Node) []*yaml.Node {
	n = source.Deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		if c = source.Deref(c); c.Kind == yaml.MappingNode {
			out = append(out, c)
		}
	}
	return out
}

// plans makes one ShmPlan per container of the pod named pod. known is false when the pod
// runs containers the manifest does not show, whose memory limits are unknown.
func (r *k8sResolver) plans(obj k8sObject, group, pod string, spec *yaml.Node, cs []podContainer, known bool, volumes []*yaml.Node, argo bool) {
	ipcKey, ipcVal := source.GetKey(spec, "hostIPC")
	hostIPC := source.Scalar(ipcVal) == "true"
	podLimit, allLimited := r.podLimit(spec, known)
	sups, need, needFrom := r.annotations(obj)
	var ignore []string
	for _, s := range sups {
		ignore = append(ignore, s.Rules...)
	}
	for i, c := range cs {
		label := c.label
		if group != "" {
			label = group + "/" + label
		}
		if label == "" {
			label = "container"
		}
		if c.role != "" {
			label += " (" + c.role + ")"
		}
		nameKey, _ := source.GetKey(c.node, "name")
		if nameKey == nil && len(c.node.Content) > 0 {
			nameKey = c.node.Content[0]
		}
		if nameKey == nil {
			nameKey = c.node
		}
		k := &analyze.K8sPlan{
			Kind: obj.kind, Namespace: obj.namespace, Name: obj.name, Group: group, Container: c.label, Pod: pod, Role: c.role, Key: c.key,
			ContainerPos: r.pos(nameKey), FirstInPod: i == 0, Argo: argo,
			AllLimited: allLimited, PodMemLimit: podLimit,
		}
		r.p.nodes[k] = &podNodes{container: c.node, spec: spec}
		plan := &analyze.ShmPlan{Service: obj.ref() + ":" + label, K8s: k, Ignore: ignore}
		if hostIPC {
			k.HostIPC, k.HostIPCPos = true, r.pos(ipcKey)
		}
		if key, v := source.GetKey(source.Get(source.Get(c.node, "resources"), "limits"), "memory"); key != nil {
			if n, err := analyze.ParseQuantity(source.Scalar(v)); err == nil && n > 0 {
				plan.MemLimit, k.MemLimitPos = analyze.Ptr(n), r.pos(key)
			} else {
				r.p.Fail(r.pos(v), "resources.limits.memory %q: %v", source.Scalar(v), err)
			}
		}
		k.Accelerators = accelerators(c.node)
		plan.GPUs, plan.GPUVendor = gpuCount(c.node)
		plan.GPU = len(k.Accelerators) > 0
		if plan.GPU && plan.GPUs == 0 {
			plan.GPUs = 1 // TPUs, Gaudi, Neuron: one device, as far as the evidence goes
		}
		command := source.Scalars0(source.Get(c.node, "command"))
		if n, ok := r.volcanoRay[spec]; ok && c.role == "" && n.container == c.label {
			command = n.command
			plan.Notes = append(plan.Notes, fmt.Sprintf("Volcano's ray plugin runs %s here and mounts no volume at /dev/shm", strings.Join(n.command[2:], " ")))
		}
		command = append(command, source.Scalars0(source.Get(c.node, "args"))...)
		var limit int64
		if plan.MemLimit != nil {
			limit = *plan.MemLimit
		}
		plan.Profile, plan.Use = analyze.ReadWorkload(analyze.Signals{
			Image: source.Scalar(source.Get(c.node, "image")), Command: command,
			Env: containerEnv(c.node), GPUs: plan.GPUs, MemLimit: limit,
		})
		if need != nil {
			plan.Need, plan.NeedFrom = analyze.Ptr(*need), needFrom
		}
		if r.need != nil {
			plan.Need, plan.NeedFrom = analyze.Ptr(*r.need), r.needFrom
		}
		r.volume(plan, c.node, volumes)
		if g := r.rayGroups[spec]; g != nil && i == 0 {
			r.kuberay(plan, g, c.node, volumes)
		}
		if r.raySubmitters[spec] && plan.Profile != nil && plan.Profile.ID == "ray" {
			plan.Profile, plan.Use = nil, nil
			plan.Notes = append(plan.Notes, "a RayJob submitter is a client of the Ray cluster (ray job submit), not a Ray node")
		}
		r.predict(plan)
		r.p.Plans = append(r.p.Plans, plan)
		for _, s := range sups {
			s.Services = append(s.Services, plan.Service)
			if i == 0 {
				s.Services = append(s.Services, pod) // pod-wide findings: hostIPC
			}
		}
	}
}

// volume finds what is mounted at /dev/shm, and any hostPath of the node's /dev/shm.
func (r *k8sResolver) volume(plan *analyze.ShmPlan, c *yaml.Node, volumes []*yaml.Node) {
	k := plan.K8s
	byName := func(name string) *yaml.Node {
		for _, v := range volumes {
			if source.Scalar(source.Get(v, "name")) == name {
				return v
			}
		}
		return nil
	}
	for _, m := range seq(source.Get(c, "volumeMounts")) {
		name := source.Scalar(source.Get(m, "name"))
		v := byName(name)
		if hp := source.Get(source.Get(v, "hostPath"), "path"); hp != nil && analyze.IsShm(source.Scalar(hp)) && k.HostShm == "" {
			k.HostShm, k.HostShmPos = name, r.pos(v)
		}
		if !analyze.IsShm(source.Scalar(source.Get(m, "mountPath"))) || k.Volume != "" {
			continue
		}
		k.Volume, k.MountPos = name, r.pos(m)
		r.mount(plan, name, source.Scalar(source.Get(m, "readOnly")) == "true", v)
	}
}

// mount resolves volume v (nil when the pod does not declare it), mounted at /dev/shm
// under name.
func (r *k8sResolver) mount(plan *analyze.ShmPlan, name string, readOnly bool, v *yaml.Node) {
	k := plan.K8s
	k.Volume = name
	if v == nil {
		plan.Source = analyze.SourceVolume
		plan.Notes = append(plan.Notes, fmt.Sprintf("volume %s mounted at /dev/shm is not declared in the pod", name))
		plan.Mount = &analyze.Mount{Type: analyze.SourceVolume, Source: name, ReadOnly: readOnly, Entry: "volumeMounts"}
		return
	}
	k.VolumePos, r.p.nodes[k].volume = r.pos(v), v
	plan.Mount = &analyze.Mount{Source: name, ReadOnly: readOnly, Entry: "volumeMounts"}
	switch {
	case source.Get(v, "emptyDir") != nil:
		ed := source.Get(v, "emptyDir")
		k.Medium = source.Scalar(source.Get(ed, "medium"))
		plan.Source = analyze.SourceEmptyDirDisk
		if k.Medium == "Memory" {
			plan.Source = analyze.SourceEmptyDirMemory
		}
		if key, sv := source.GetKey(ed, "sizeLimit"); key != nil {
			if n, err := analyze.ParseQuantity(source.Scalar(sv)); err == nil {
				k.SizeLimit, k.SizeLimitPos = analyze.Ptr(n), r.pos(key)
				plan.Configured, plan.Mount.Size = analyze.Ptr(n), analyze.Ptr(n)
			} else {
				r.p.Fail(r.pos(sv), "emptyDir.sizeLimit %q: %v", source.Scalar(sv), err)
			}
		}
	case source.Get(v, "hostPath") != nil:
		k.HostPath = path.Clean(source.Scalar(source.Get(source.Get(v, "hostPath"), "path")))
		plan.Source, plan.Mount.Source = analyze.SourceHostPath, k.HostPath
	default:
		plan.Source = analyze.SourceVolume
	}
	plan.Mount.Type = plan.Source
}

// The volume the KubeRay operator mounts at /dev/shm (ray-project/kuberay,
// ray-operator/controllers/ray/common/pod.go: BuildPod, addEmptyDir, makeEmptyDirVolume).
const kubeRayShmVolume = "shared-mem"

// kuberay models what the KubeRay operator does to the Ray container of a group (the
// pod's first container): unless rayStartParams sets plasma-directory or the container
// already mounts something at /dev/shm, it mounts the pod's volume shared-mem there,
// adding it as a memory emptyDir sized to the container's memory limit, else its memory
// request, else unsized.
func (r *k8sResolver) kuberay(plan *analyze.ShmPlan, group, c *yaml.Node, volumes []*yaml.Node) {
	k := plan.K8s
	if k.Volume != "" || source.Get(source.Get(group, "rayStartParams"), "plasma-directory") != nil {
		return
	}
	for _, v := range volumes {
		if source.Scalar(source.Get(v, "name")) == kubeRayShmVolume {
			// the operator mounts the pod's own volume of that name
			plan.Notes = append(plan.Notes, fmt.Sprintf("the KubeRay operator mounts the pod's volume %s at /dev/shm", kubeRayShmVolume))
			r.mount(plan, kubeRayShmVolume, false, v)
			return
		}
	}
	k.Volume, k.Medium, k.Operator = kubeRayShmVolume, "Memory", "KubeRay"
	plan.Source = analyze.SourceOperator
	plan.Mount = &analyze.Mount{Type: analyze.SourceOperator, Source: kubeRayShmVolume, Entry: "volumeMounts"}
	res := source.Get(c, "resources")
	sized := "no memory limit or request, so it has no sizeLimit"
	for _, kind := range []string{"limits", "requests"} {
		if n, err := analyze.ParseQuantity(source.Scalar(source.Get(source.Get(res, kind), "memory"))); err == nil && n > 0 {
			k.SizeLimit, plan.Mount.Size = analyze.Ptr(n), analyze.Ptr(n)
			sized = fmt.Sprintf("sizeLimit %s, the container's memory %s", analyze.FormatSize(n), strings.TrimSuffix(kind, "s"))
			break
		}
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("the KubeRay operator mounts memory emptyDir %s at /dev/shm (%s)", kubeRayShmVolume, sized))
}

// predict sizes /dev/shm as the kubelet and the runtime do: a memory emptyDir is the
// smallest of node allocatable, the pod's memory limit (when every container has one) and
// sizeLimit; without a volume the runtime gives 64 MiB, or the node's under hostIPC.
func (r *k8sResolver) predict(plan *analyze.ShmPlan) {
	k := plan.K8s
	switch {
	case plan.Source == analyze.SourceEmptyDirMemory || plan.Source == analyze.SourceOperator:
		var n *int64
		if k.SizeLimit != nil {
			n = analyze.Ptr(*k.SizeLimit)
		}
		if k.AllLimited && k.PodMemLimit != nil && (n == nil || *k.PodMemLimit < *n) {
			n = analyze.Ptr(*k.PodMemLimit)
		}
		plan.Predicted = n
	case plan.Source != "":
		// disk, hostPath and other volumes: sized by the node
	case k.HostIPC:
		plan.Source = analyze.SourceHost
	default:
		plan.Source, plan.Predicted = analyze.SourceDefault, analyze.Ptr(analyze.DefaultShmSize)
	}
	if k.Argo && plan.Source == analyze.SourceEmptyDirMemory {
		plan.Notes = append(plan.Notes, "an Argo pod also runs the executor's wait container, so the pod memory limit is not counted")
	}
}

// podLimit is the pod's memory limit as the kubelet sizes the pod's cgroup:
// spec.resources.limits.memory (pod-level resources), else, when every container has a
// limit, the sum of the containers' and the sidecars' limits, or the largest init
// container's with the sidecars started before it, if higher (k8s.io/component-helpers
// resource.PodLimits, after KEP-753). known is false when the pod has containers the
// manifest does not show.
func (r *k8sResolver) podLimit(spec *yaml.Node, known bool) (*int64, bool) {
	if v := source.Get(source.Get(source.Get(spec, "resources"), "limits"), "memory"); v != nil {
		if n, err := analyze.ParseQuantity(source.Scalar(v)); err == nil && n > 0 {
			return analyze.Ptr(n), true
		}
	}
	if !known {
		return nil, false
	}
	limit := func(c *yaml.Node) (int64, bool) {
		n, err := analyze.ParseQuantity(source.Scalar(source.Get(source.Get(source.Get(c, "resources"), "limits"), "memory")))
		return n, err == nil && n > 0
	}
	var sum, sidecars, inits int64
	for _, c := range seq(source.Get(spec, "containers")) {
		n, ok := limit(c)
		if !ok {
			return nil, false
		}
		sum += n
	}
	for _, c := range seq(source.Get(spec, "initContainers")) {
		n, ok := limit(c)
		if !ok {
			return nil, false
		}
		if sidecar(c) {
			sum, sidecars = sum+n, sidecars+n
			inits = max(inits, sidecars)
		} else {
			inits = max(inits, n+sidecars)
		}
	}
	return analyze.Ptr(max(sum, inits)), true
}

// annotations reads shmdoctor.io/ignore and shmdoctor.io/need from the object's metadata
// and then the pod template's, which wins.
func (r *k8sResolver) annotations(obj k8sObject) (sups []*analyze.Suppressor, need *int64, from string) {
	for _, m := range obj.meta {
		ann := source.Get(m, "annotations")
		if v := source.Get(ann, analyze.AnnotationIgnore); v != nil {
			if s := r.ignore(v); s != nil {
				sups = append(sups, s)
			}
		}
		if v := source.Get(ann, analyze.AnnotationNeed); v != nil {
			n, err := analyze.ParseQuantity(source.Scalar(v))
			if err != nil {
				n, err = analyze.ParseSize(source.Scalar(v))
			}
			if err != nil {
				r.p.Fail(r.pos(v), "%s: %q is not a size such as 8Gi", analyze.AnnotationNeed, source.Scalar(v))
				continue
			}
			need, from = analyze.Ptr(n), analyze.AnnotationNeed
		}
	}
	return sups, need, from
}

// ignore reads a shmdoctor.io/ignore annotation once, however many pod specs it covers;
// nil when it is malformed (a located error).
func (r *k8sResolver) ignore(v *yaml.Node) *analyze.Suppressor {
	pos := r.pos(v)
	if s, ok := r.sups[pos]; ok {
		return s
	}
	ids, reason, err := suppress.ParseIgnore(source.Scalar(v))
	if err != nil {
		r.p.Fail(pos, "%s: %v", analyze.AnnotationIgnore, err)
		r.sups[pos] = nil
		return nil
	}
	s := &analyze.Suppressor{Suppression: analyze.Suppression{Kind: analyze.SuppressAnnotation, Reason: reason, Pos: pos}, Rules: ids, Analysed: true}
	r.sups[pos] = s
	r.p.Suppressors = append(r.p.Suppressors, s)
	return s
}

// acceleratorPrefixes are the extended resources of GPUs and other accelerators.
var acceleratorPrefixes = []string{"nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "google.com/tpu", "habana.ai/gaudi", "aws.amazon.com/neuron", "gpu.intel.com/"}

// gpuCount sums the nvidia.com/gpu and amd.com/gpu a container asks for (the larger of its
// limit and request) and names the vendor.
func gpuCount(c *yaml.Node) (n int, vendor string) {
	res := source.Get(c, "resources")
	for _, v := range []struct{ name, vendor string }{{"nvidia.com/gpu", analyze.VendorNVIDIA}, {"amd.com/gpu", analyze.VendorAMD}} {
		most := 0
		for _, kind := range []string{"limits", "requests"} {
			if q, err := strconv.Atoi(source.Scalar(source.Get(source.Get(res, kind), v.name))); err == nil && q > most {
				most = q
			}
		}
		if most > 0 {
			n, vendor = n+most, v.vendor
		}
	}
	return n, vendor
}

// jobReplicas counts the pods of a Kubeflow PyTorchJob or MPIJob: the replicas of each
// replica spec (one when unset, as the training operator defaults it).
func jobReplicas(kind string, spec *yaml.Node) int {
	key := map[string]string{"PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}[kind]
	specs := source.Get(spec, key)
	if key == "" || specs == nil || specs.Kind != yaml.MappingNode {
		return 0
	}
	n := 0
	for i := 1; i < len(specs.Content); i += 2 {
		if kind == "MPIJob" && specs.Content[i-1].Value == "Launcher" {
			continue // the launcher runs mpirun, not a GPU process
		}
		r, err := strconv.Atoi(source.Scalar(source.Get(specs.Content[i], "replicas")))
		if err != nil {
			r = 1
		}
		n += r
	}
	return n
}

func accelerators(c *yaml.Node) []string {
	var out []string
	res := source.Get(c, "resources")
	for _, kind := range []string{"limits", "requests"} {
		m := source.Get(res, kind)
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			name := m.Content[i].Value
			if slices.Contains(out, name) || source.Scalar(source.Deref(m.Content[i+1])) == "0" {
				continue
			}
			for _, p := range acceleratorPrefixes {
				if strings.HasPrefix(name, p) {
					out = append(out, name)
					break
				}
			}
		}
	}
	return out
}

// scope decides what a comment covers in a manifest: the containers whose name is on
// the line, else the line.
func (p *manifest) scope(s *analyze.Suppressor) {
	best := 0
	for _, plan := range p.Plans {
		cp := plan.K8s.ContainerPos
		if cp.File != s.OnFile {
			continue
		}
		if cp.Line == s.OnLine {
			s.Services = append(s.Services, plan.Service)
		}
		if cp.Line <= s.OnLine && cp.Line > best {
			best, s.Owner = cp.Line, plan.Service
		}
	}
	for _, plan := range p.Plans {
		if ip := plan.K8s.HostIPCPos; ip.File == s.OnFile && ip.Line == s.OnLine {
			s.Owner = plan.K8s.Pod // a pod-wide key: the line is the pod's
		}
	}
}

// containerEnv is a container's env list as the variables a workload reads: a value from
// valueFrom, or one that refers to another with $(NAME), is not known to the doctor.
func containerEnv(container *yaml.Node) map[string]string {
	env := map[string]string{}
	list := source.Get(container, "env")
	if list == nil || list.Kind != yaml.SequenceNode {
		return env
	}
	for _, e := range list.Content {
		name := source.Scalar(source.Get(e, "name"))
		if name == "" {
			continue
		}
		if source.Get(e, "valueFrom") != nil {
			env[name] = "$(valueFrom)"
			continue
		}
		env[name] = source.Scalar(source.Get(e, "value"))
	}
	return env
}
