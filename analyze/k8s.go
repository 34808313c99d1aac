package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kind of a YAML input, told by its content.
type inputKind int

const (
	inputCompose inputKind = iota
	inputKubernetes
	inputHelm
)

var (
	k8sAPIVersion = regexp.MustCompile(`(?m)^["']?apiVersion["']?\s*:`)
	k8sKind       = regexp.MustCompile(`(?m)^["']?kind["']?\s*:`)
	// helmAction is a template action where YAML structure goes: a line of its own, a
	// whole value or list item. Actions inside a value ("--name={{.Name}}", as KServe
	// writes) are the application's own placeholders.
	helmAction = regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(?:[\w.\-/"']+[ \t]*:[ \t]+)?["']?(\{\{)`)
)

// sniff tells a Kubernetes manifest (documents with apiVersion and kind) and an unrendered
// Helm template from a compose file. line is where the first template action is.
func sniff(b []byte) (kind inputKind, line, col int) {
	textual := k8sAPIVersion.Match(b) && k8sKind.Match(b)
	if textual {
		if m := helmAction.FindSubmatchIndex(b); m != nil {
			i := m[2]
			line = bytes.Count(b[:i], []byte("\n")) + 1
			col = i - bytes.LastIndexByte(b[:i], '\n')
			return inputHelm, line, col
		}
		return inputKubernetes, 0, 0
	}
	// JSON manifests and flow style: decide on the parsed documents.
	if !bytes.Contains(b, []byte("apiVersion")) || !bytes.Contains(b, []byte("kind")) {
		return inputCompose, 0, 0
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return inputCompose, 0, 0
		}
		if len(doc.Content) > 0 && isK8sObject(doc.Content[0]) {
			return inputKubernetes, 0, 0
		}
	}
}

func isK8sObject(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && scalar(get(n, "apiVersion")) != "" && scalar(get(n, "kind")) != ""
}

// sniffFile reads a file and sniffs it; unreadable files are compose's to report.
func sniffFile(s *sources, p string) inputKind {
	b, err := readSource(s, p)
	if err != nil {
		return inputCompose
	}
	k, _, _ := sniff(b)
	return k
}

// isYAMLName reports a .yaml or .yml file name.
func isYAMLName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// folderManifests lists the Kubernetes manifests (and Helm templates, which report their
// own error) directly in dir, sorted.
func folderManifests(s *sources, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !isYAMLName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if k := sniffFile(s, p); k != inputCompose {
			out = append(out, p)
		}
	}
	return out
}

// manifest is one Kubernetes manifest file as the loader reads it: the model, the file,
// and where in it fixes edit. It is the model's Document.
type manifest struct {
	*Project
	set        *Set
	texts      *Texts
	abs        string // the file: absolute, or "-"
	directives []directive
	// nodes are where each container's fixes edit.
	nodes map[*K8sPlan]*podNodes
}

// podNodes are where fixes edit a container: the container, the mapping holding its pod's
// volumes (the pod spec, or an Argo template) and the volume mounted at /dev/shm.
type podNodes struct {
	container, spec, volume *yaml.Node
}

// loadKubernetes loads one manifest file (or standard input, "-", named stdinName) as a
// project of its own; need is --need, named needFrom.
func loadKubernetes(file string, stdin []byte, stdinName string, need *int64, needFrom string, input *sources) *Project {
	p := &manifest{Project: &Project{Kubernetes: true}, set: NewSet(input), abs: file, nodes: map[*K8sPlan]*podNodes{}}
	p.texts = NewTexts(p.set)
	p.Doc = p
	var content []byte
	if file == "-" {
		content = stdin
		p.set.names[file] = stdinName
	} else {
		if a, err := filepath.Abs(file); err == nil {
			p.abs = a
		}
		b, err := readSource(input, p.abs)
		if err != nil {
			p.Name, p.Files = file, []string{file}
			p.Fail(Pos{File: file}, "%s", cleanPathErr(err))
			return p.Project
		}
		content = b
	}
	display := p.set.display(p.abs)
	p.Name, p.Files = display, []string{display}
	if k, line, col := sniff(content); k == inputHelm {
		p.Fail(Pos{File: display, Line: line, Column: col}, "this is a Helm template: render it first (helm template ... | shmdoctor -)")
		return p.Project
	}
	docs, err := parseManifest(display, content)
	p.set.docs[p.abs], p.set.src[p.abs] = docs, content
	if err != nil {
		p.Errors = append(p.Errors, asLoadError(err, display))
		return p.Project
	}
	p.directives = scanDirectives(content, docs)
	for _, d := range p.directives {
		if d.err != nil {
			p.Fail(Pos{File: display, Line: d.line, Column: d.col}, "%s: %v", IgnoreDirective, d.err)
		}
	}
	r := &k8sResolver{p: p, file: display, abs: p.abs, need: need, needFrom: needFrom, sups: map[Pos]*Suppressor{}}
	for _, d := range docs {
		r.object(d)
	}
	for _, d := range p.directives {
		if d.err != nil {
			continue
		}
		s := &Suppressor{
			Suppression: Suppression{Kind: SuppressComment, Reason: d.reason, Pos: Pos{File: display, Line: d.line, Column: d.col}},
			Rules:       d.ids, OnFile: display, OnLine: d.target, Analysed: true,
		}
		p.scope(s)
		p.Suppressors = append(p.Suppressors, s)
	}
	if len(p.Plans) == 0 {
		p.Notes = append(p.Notes, "no pod spec found: nothing here runs a container")
	}
	return p.Project
}

// parseManifest parses every document of a manifest, refusing alias bombs.
func parseManifest(display string, content []byte) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, yamlError(display, content, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		if lim := expansionLimit(doc.Content[0]); expandedSize(doc.Content[0], map[*yaml.Node]int64{}, lim) > lim {
			a := firstAlias(doc.Content[0])
			return docs, &LoadError{Pos: Pos{File: display, Line: a.Line, Column: a.Column}, Msg: fmt.Sprintf("YAML aliases expand to more than %d nodes: refusing an alias bomb", lim)}
		}
		docs = append(docs, doc.Content[0])
	}
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
	sups map[Pos]*Suppressor
	// rayGroups maps the pod spec of a KubeRay head or worker group to the group, whose
	// rayStartParams decide whether the operator mounts /dev/shm.
	rayGroups map[*yaml.Node]*yaml.Node
	// raySubmitters are the pod specs of RayJob submitters: clients of a Ray cluster.
	raySubmitters map[*yaml.Node]bool
}

func (r *k8sResolver) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return Pos{File: r.file, Line: n.Line, Column: n.Column}
}

// k8sObject is one object of a manifest and what its pod specs inherit from it.
type k8sObject struct {
	kind, namespace, name string
	meta                  []*yaml.Node // metadata mappings, outermost first
	// replicas counts the pods of a Kubeflow PyTorchJob or MPIJob, 0 for other kinds.
	replicas int
}

var argoKinds = map[string]bool{"Workflow": true, "WorkflowTemplate": true, "ClusterWorkflowTemplate": true, "CronWorkflow": true}

// object finds the pod specs of one document: a List's items, Argo workflows by their
// templates, anything else by the shape of a pod spec.
func (r *k8sResolver) object(n *yaml.Node) {
	n = deref(n)
	if !isK8sObject(n) {
		return
	}
	kind := scalar(get(n, "kind"))
	if items := get(n, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for _, it := range items.Content {
			r.object(it)
		}
		return
	}
	meta := get(n, "metadata")
	obj := k8sObject{kind: kind, name: scalar(get(meta, "name")), namespace: scalar(get(meta, "namespace"))}
	if meta != nil {
		obj.meta = append(obj.meta, meta)
	}
	obj.replicas = jobReplicas(kind, get(n, "spec"))
	if argoKinds[kind] && strings.HasPrefix(scalar(get(n, "apiVersion")), "argoproj.io/") {
		r.argo(obj, n)
		return
	}
	if strings.HasPrefix(scalar(get(n, "apiVersion")), "ray.io/") {
		r.rayCluster(kind, n)
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
	if ps := deref(get(get(get(n, "spec"), "submitterPodTemplate"), "spec")); ps != nil {
		r.raySubmitters[ps] = true
	}
	spec := n
	for _, k := range path {
		spec = get(spec, k)
	}
	groups := append([]*yaml.Node{deref(get(spec, "headGroupSpec"))}, seq(get(spec, "workerGroupSpecs"))...)
	for _, g := range groups {
		if ps := deref(get(get(g, "template"), "spec")); ps != nil {
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
	n = deref(n)
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if isPodSpec(n) {
			o := obj
			if m := get(parent, "metadata"); m != nil && parent != nil && depth > 1 {
				o.meta = append(slices.Clone(obj.meta), m)
			}
			r.pod(o, group, n, outer)
			outer = append(seq(get(n, "volumes")), outer...)
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
			if name := scalar(get(it, "groupName")); name != "" {
				g = name
			} else if name := scalar(get(it, "name")); name != "" {
				g = name
			}
			r.walk(obj, it, parent, g, outer, depth+1)
		}
	}
}

func isPodSpec(n *yaml.Node) bool {
	cs := get(n, "containers")
	if cs == nil || cs.Kind != yaml.SequenceNode || len(cs.Content) == 0 {
		return false
	}
	for _, c := range cs.Content {
		if c = deref(c); c.Kind != yaml.MappingNode || get(c, "name") == nil {
			return false
		}
	}
	return true
}

// podContainer is a container to plan and its label.
type podContainer struct {
	node  *yaml.Node
	label string
}

// pod plans every container of a pod spec.
func (r *k8sResolver) pod(obj k8sObject, group string, spec *yaml.Node, outer []*yaml.Node) {
	var cs []podContainer
	for _, c := range seq(get(spec, "containers")) {
		cs = append(cs, podContainer{node: c, label: scalar(get(c, "name"))})
	}
	limited := append(seq(get(spec, "containers")), seq(get(spec, "initContainers"))...)
	r.plans(obj, group, spec, cs, limited, append(seq(get(spec, "volumes")), outer...), false)
}

// argo plans the containers of an Argo workflow's templates: container, script and
// containerSet, with the template's volumes before the workflow's.
func (r *k8sResolver) argo(obj k8sObject, n *yaml.Node) {
	spec := get(n, "spec")
	if obj.kind == "CronWorkflow" {
		spec = get(spec, "workflowSpec")
	}
	wfVolumes := seq(get(spec, "volumes"))
	for _, t := range seq(get(spec, "templates")) {
		name := scalar(get(t, "name"))
		var cs []podContainer
		for _, k := range []string{"container", "script"} {
			if c := get(t, k); c != nil && c.Kind == yaml.MappingNode {
				cs = append(cs, podContainer{node: c, label: name})
			}
		}
		for _, c := range seq(get(get(t, "containerSet"), "containers")) {
			cs = append(cs, podContainer{node: c, label: name + "/" + scalar(get(c, "name"))})
		}
		if len(cs) == 0 {
			continue
		}
		o := obj
		if m := get(t, "metadata"); m != nil {
			o.meta = append(slices.Clone(obj.meta), m)
		}
		volumes := append(seq(get(t, "volumes")), wfVolumes...)
		r.plans(o, "", t, cs, nil, volumes, true)
	}
}

func seq(n *yaml.Node) []*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		if c = deref(c); c.Kind == yaml.MappingNode {
			out = append(out, c)
		}
	}
	return out
}

// plans makes one ShmPlan per container. limited are the containers whose memory limits
// make the pod's (nil when the pod runs containers the manifest does not show).
func (r *k8sResolver) plans(obj k8sObject, group string, spec *yaml.Node, cs []podContainer, limited, volumes []*yaml.Node, argo bool) {
	ipcKey, ipcVal := getKey(spec, "hostIPC")
	hostIPC := scalar(ipcVal) == "true"
	podLimit, allLimited := r.podLimit(spec, limited)
	sups, need, needFrom := r.annotations(obj)
	var ignore []string
	for _, s := range sups {
		ignore = append(ignore, s.Rules...)
	}
	for i, c := range cs {
		name := obj.kind + "/" + obj.name
		if obj.namespace != "" {
			name = obj.kind + "/" + obj.namespace + "/" + obj.name
		}
		label := c.label
		if group != "" {
			label = group + "/" + label
		}
		if label == "" {
			label = "container"
		}
		nameKey, _ := getKey(c.node, "name")
		if nameKey == nil && len(c.node.Content) > 0 {
			nameKey = c.node.Content[0]
		}
		if nameKey == nil {
			nameKey = c.node
		}
		k := &K8sPlan{
			Kind: obj.kind, Namespace: obj.namespace, Name: obj.name, Group: group, Container: c.label,
			ContainerPos: r.pos(nameKey), FirstInPod: i == 0, Argo: argo,
			AllLimited: allLimited, PodMemLimit: podLimit,
		}
		r.p.nodes[k] = &podNodes{container: c.node, spec: spec}
		plan := &ShmPlan{Service: name + ":" + label, K8s: k, Ignore: ignore}
		if hostIPC {
			k.HostIPC, k.HostIPCPos = true, r.pos(ipcKey)
		}
		if key, v := getKey(get(get(c.node, "resources"), "limits"), "memory"); key != nil {
			if n, err := ParseQuantity(scalar(v)); err == nil && n > 0 {
				plan.MemLimit, k.MemLimitPos = ptr(n), r.pos(key)
			} else {
				r.p.Fail(r.pos(v), "resources.limits.memory %q: %v", scalar(v), err)
			}
		}
		k.Accelerators = accelerators(c.node)
		plan.GPUs, plan.GPUVendor = gpuCount(c.node)
		plan.GPU = len(k.Accelerators) > 0
		if plan.GPU && plan.GPUs == 0 {
			plan.GPUs = 1 // TPUs, Gaudi, Neuron: one device, as far as the evidence goes
		}
		command := append(scalars0(get(c.node, "command")), scalars0(get(c.node, "args"))...)
		plan.Profile = DetectProfile(Signals{Image: scalar(get(c.node, "image")), Command: command, GPUs: plan.GPUs, Replicas: obj.replicas})
		if need != nil {
			plan.Need, plan.NeedFrom = ptr(*need), needFrom
		}
		if r.need != nil {
			plan.Need, plan.NeedFrom = ptr(*r.need), r.needFrom
		}
		r.volume(plan, c.node, volumes)
		if g := r.rayGroups[spec]; g != nil && i == 0 {
			r.kuberay(plan, g, c.node, volumes)
		}
		if r.raySubmitters[spec] && plan.Profile != nil && plan.Profile.ID == "ray" {
			plan.Profile = nil
			plan.Notes = append(plan.Notes, "a RayJob submitter is a client of the Ray cluster (ray job submit), not a Ray node")
		}
		r.predict(plan)
		r.p.Plans = append(r.p.Plans, plan)
		for _, s := range sups {
			s.Services = append(s.Services, plan.Service)
		}
	}
}

// volume finds what is mounted at /dev/shm, and any hostPath of the node's /dev/shm.
func (r *k8sResolver) volume(plan *ShmPlan, c *yaml.Node, volumes []*yaml.Node) {
	k := plan.K8s
	byName := func(name string) *yaml.Node {
		for _, v := range volumes {
			if scalar(get(v, "name")) == name {
				return v
			}
		}
		return nil
	}
	for _, m := range seq(get(c, "volumeMounts")) {
		name := scalar(get(m, "name"))
		v := byName(name)
		if hp := get(get(v, "hostPath"), "path"); hp != nil && isShm(scalar(hp)) && k.HostShm == "" {
			k.HostShm, k.HostShmPos = name, r.pos(v)
		}
		if !isShm(scalar(get(m, "mountPath"))) || k.Volume != "" {
			continue
		}
		k.Volume, k.MountPos = name, r.pos(m)
		r.mount(plan, name, scalar(get(m, "readOnly")) == "true", v)
	}
}

// mount resolves volume v (nil when the pod does not declare it), mounted at /dev/shm
// under name.
func (r *k8sResolver) mount(plan *ShmPlan, name string, readOnly bool, v *yaml.Node) {
	k := plan.K8s
	k.Volume = name
	if v == nil {
		plan.Source = SourceVolume
		plan.Notes = append(plan.Notes, fmt.Sprintf("volume %s mounted at /dev/shm is not declared in the pod", name))
		plan.Mount = &Mount{Type: SourceVolume, Source: name, ReadOnly: readOnly, Entry: "volumeMounts"}
		return
	}
	k.VolumePos, r.p.nodes[k].volume = r.pos(v), v
	plan.Mount = &Mount{Source: name, ReadOnly: readOnly, Entry: "volumeMounts"}
	switch {
	case get(v, "emptyDir") != nil:
		ed := get(v, "emptyDir")
		k.Medium = scalar(get(ed, "medium"))
		plan.Source = SourceEmptyDirDisk
		if k.Medium == "Memory" {
			plan.Source = SourceEmptyDirMemory
		}
		if key, sv := getKey(ed, "sizeLimit"); key != nil {
			if n, err := ParseQuantity(scalar(sv)); err == nil {
				k.SizeLimit, k.SizeLimitPos = ptr(n), r.pos(key)
				plan.Configured, plan.Mount.Size = ptr(n), ptr(n)
			} else {
				r.p.Fail(r.pos(sv), "emptyDir.sizeLimit %q: %v", scalar(sv), err)
			}
		}
	case get(v, "hostPath") != nil:
		k.HostPath = path.Clean(scalar(get(get(v, "hostPath"), "path")))
		plan.Source, plan.Mount.Source = SourceHostPath, k.HostPath
	default:
		plan.Source = SourceVolume
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
func (r *k8sResolver) kuberay(plan *ShmPlan, group, c *yaml.Node, volumes []*yaml.Node) {
	k := plan.K8s
	if k.Volume != "" || get(get(group, "rayStartParams"), "plasma-directory") != nil {
		return
	}
	for _, v := range volumes {
		if scalar(get(v, "name")) == kubeRayShmVolume {
			// the operator mounts the pod's own volume of that name
			plan.Notes = append(plan.Notes, fmt.Sprintf("the KubeRay operator mounts the pod's volume %s at /dev/shm", kubeRayShmVolume))
			r.mount(plan, kubeRayShmVolume, false, v)
			return
		}
	}
	k.Volume, k.Medium, k.Operator = kubeRayShmVolume, "Memory", "KubeRay"
	plan.Source = SourceOperator
	plan.Mount = &Mount{Type: SourceOperator, Source: kubeRayShmVolume, Entry: "volumeMounts"}
	res := get(c, "resources")
	sized := "no memory limit or request, so it has no sizeLimit"
	for _, kind := range []string{"limits", "requests"} {
		if n, err := ParseQuantity(scalar(get(get(res, kind), "memory"))); err == nil && n > 0 {
			k.SizeLimit, plan.Mount.Size = ptr(n), ptr(n)
			sized = fmt.Sprintf("sizeLimit %s, the container's memory %s", FormatSize(n), strings.TrimSuffix(kind, "s"))
			break
		}
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("the KubeRay operator mounts memory emptyDir %s at /dev/shm (%s)", kubeRayShmVolume, sized))
}

// predict sizes /dev/shm as the kubelet and the runtime do: a memory emptyDir is the
// smallest of node allocatable, the pod's memory limit (when every container has one) and
// sizeLimit; without a volume the runtime gives 64 MiB, or the node's under hostIPC.
func (r *k8sResolver) predict(plan *ShmPlan) {
	k := plan.K8s
	switch {
	case plan.Source == SourceEmptyDirMemory || plan.Source == SourceOperator:
		var n *int64
		if k.SizeLimit != nil {
			n = ptr(*k.SizeLimit)
		}
		if k.AllLimited && k.PodMemLimit != nil && (n == nil || *k.PodMemLimit < *n) {
			n = ptr(*k.PodMemLimit)
		}
		plan.Predicted = n
	case plan.Source != "":
		// disk, hostPath and other volumes: sized by the node
	case k.HostIPC:
		plan.Source = SourceHost
	default:
		plan.Source, plan.Predicted = SourceDefault, ptr(DefaultShmSize)
	}
	if k.Argo && plan.Source == SourceEmptyDirMemory {
		plan.Notes = append(plan.Notes, "an Argo pod also runs the executor's wait container, so the pod memory limit is not counted")
	}
}

// podLimit is the pod's memory limit: spec.resources.limits.memory (pod-level resources),
// else the sum of the containers' limits, or the largest init container's if higher, when
// every container has one.
func (r *k8sResolver) podLimit(spec *yaml.Node, containers []*yaml.Node) (*int64, bool) {
	if v := get(get(get(spec, "resources"), "limits"), "memory"); v != nil {
		if n, err := ParseQuantity(scalar(v)); err == nil && n > 0 {
			return ptr(n), true
		}
	}
	if len(containers) == 0 {
		return nil, false
	}
	inits := seq(get(spec, "initContainers"))
	var sum, initMax int64
	for _, c := range containers {
		n, err := ParseQuantity(scalar(get(get(get(c, "resources"), "limits"), "memory")))
		if err != nil || n <= 0 {
			return nil, false
		}
		if slices.Contains(inits, c) {
			initMax = max(initMax, n)
		} else {
			sum += n
		}
	}
	return ptr(max(sum, initMax)), true
}

// annotations reads shmdoctor.io/ignore and shmdoctor.io/need from the object's metadata
// and then the pod template's, which wins.
func (r *k8sResolver) annotations(obj k8sObject) (sups []*Suppressor, need *int64, from string) {
	for _, m := range obj.meta {
		ann := get(m, "annotations")
		if v := get(ann, AnnotationIgnore); v != nil {
			if s := r.ignore(v); s != nil {
				sups = append(sups, s)
			}
		}
		if v := get(ann, AnnotationNeed); v != nil {
			n, err := ParseQuantity(scalar(v))
			if err != nil {
				n, err = ParseSize(scalar(v))
			}
			if err != nil {
				r.p.Fail(r.pos(v), "%s: %q is not a size such as 8Gi", AnnotationNeed, scalar(v))
				continue
			}
			need, from = ptr(n), AnnotationNeed
		}
	}
	return sups, need, from
}

// ignore reads a shmdoctor.io/ignore annotation once, however many pod specs it covers;
// nil when it is malformed (a located error).
func (r *k8sResolver) ignore(v *yaml.Node) *Suppressor {
	pos := r.pos(v)
	if s, ok := r.sups[pos]; ok {
		return s
	}
	ids, reason, err := parseIgnore(scalar(v))
	if err != nil {
		r.p.Fail(pos, "%s: %v", AnnotationIgnore, err)
		r.sups[pos] = nil
		return nil
	}
	s := &Suppressor{Suppression: Suppression{Kind: SuppressAnnotation, Reason: reason, Pos: pos}, Rules: ids, Analysed: true}
	r.sups[pos] = s
	r.p.Suppressors = append(r.p.Suppressors, s)
	return s
}

// acceleratorPrefixes are the extended resources of GPUs and other accelerators.
var acceleratorPrefixes = []string{"nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "google.com/tpu", "habana.ai/gaudi", "aws.amazon.com/neuron", "gpu.intel.com/"}

// gpuCount sums the nvidia.com/gpu and amd.com/gpu a container asks for (the larger of its
// limit and request) and names the vendor.
func gpuCount(c *yaml.Node) (n int, vendor string) {
	res := get(c, "resources")
	for _, v := range []struct{ name, vendor string }{{"nvidia.com/gpu", VendorNVIDIA}, {"amd.com/gpu", VendorAMD}} {
		most := 0
		for _, kind := range []string{"limits", "requests"} {
			if q, err := strconv.Atoi(scalar(get(get(res, kind), v.name))); err == nil && q > most {
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
	specs := get(spec, key)
	if key == "" || specs == nil || specs.Kind != yaml.MappingNode {
		return 0
	}
	n := 0
	for i := 1; i < len(specs.Content); i += 2 {
		if kind == "MPIJob" && specs.Content[i-1].Value == "Launcher" {
			continue // the launcher runs mpirun, not a GPU process
		}
		r, err := strconv.Atoi(scalar(get(specs.Content[i], "replicas")))
		if err != nil {
			r = 1
		}
		n += r
	}
	return n
}

func accelerators(c *yaml.Node) []string {
	var out []string
	res := get(c, "resources")
	for _, kind := range []string{"limits", "requests"} {
		m := get(res, kind)
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			name := m.Content[i].Value
			if slices.Contains(out, name) || scalar(deref(m.Content[i+1])) == "0" {
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
func (p *manifest) scope(s *Suppressor) {
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
}
