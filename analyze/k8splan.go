package analyze

// The Kubernetes sources of a container's /dev/shm. SourceHost (hostIPC: true, no volume)
// is shared with compose.
const (
	SourceDefault        Source = "default"         // the runtime's own 64 MiB tmpfs
	SourceEmptyDirMemory Source = "emptydir-memory" // an emptyDir with medium: Memory
	SourceEmptyDirDisk   Source = "emptydir-disk"   // an emptyDir on the node's disk
	SourceHostPath       Source = "hostpath"        // a hostPath volume
	// SourceOperator is a memory emptyDir an operator mounts at /dev/shm when the pod
	// reaches it: KubeRay's shared-mem in the Ray container. K8sPlan.Operator names it.
	SourceOperator Source = "operator"
)

// The roles of a pod's containers besides its main ones, as reports name them.
const (
	RoleInit    = "init container"    // runs to completion before the main containers start
	RoleSidecar = "sidecar container" // runs beside them: an init container with restartPolicy: Always, or an Argo sidecar
)

// The annotations through which a Kubernetes object or pod template talks to the doctor.
const (
	AnnotationNeed   = "shmdoctor.io/need"
	AnnotationIgnore = "shmdoctor.io/ignore"
)

// K8sPlan is what a Kubernetes container adds to its ShmPlan: where each fact is written.
// Positions are zero when the key is not written.
type K8sPlan struct {
	Kind      string
	Namespace string
	Name      string
	// Group is the replica or group the pod spec belongs to (Worker, headGroupSpec, an Argo
	// template), "" for plain workloads.
	Group     string
	Container string
	// Pod names the container's pod spec as reports show it: the object, and its replica or
	// group after a colon. A pod-wide finding (hostIPC) is the pod's, not a container's.
	Pod string
	// Role is RoleInit or RoleSidecar for a container that is not one of the pod's main
	// containers, "" for those; Key is the key of the pod spec or Argo template that holds
	// it (containers, initContainers, sidecars, container, script).
	Role string
	Key  string
	// ContainerPos is the container's name key (or its first key when unnamed).
	ContainerPos Pos
	// Volume is the name of the volume mounted at /dev/shm, "" when none.
	Volume    string
	MountPos  Pos // the volumeMounts entry at /dev/shm
	VolumePos Pos // the volumes entry it names
	// Medium is the emptyDir medium ("" for the node's disk).
	Medium       string
	SizeLimit    *int64
	SizeLimitPos Pos
	// HostPath is the node path of a hostPath volume at /dev/shm.
	HostPath string
	// HostShm is a hostPath volume of the node's /dev/shm mounted anywhere in the container.
	HostShm    string
	HostShmPos Pos
	HostIPC    bool
	HostIPCPos Pos
	// FirstInPod marks the pod's first analysed container: pod-wide facts are reported once.
	FirstInPod bool
	// MemLimitPos is the container's resources.limits.memory; AllLimited is true when every
	// container of the pod has a memory limit, and PodMemLimit is then the pod's limit.
	MemLimitPos Pos
	AllLimited  bool
	PodMemLimit *int64
	// Accelerators lists the accelerator resources the container requests.
	Accelerators []string
	// Argo is set for containers of Argo Workflows templates, whose pods also run an
	// executor the manifest does not show.
	Argo bool
	// Operator names the controller that mounts the volume at /dev/shm (SourceOperator):
	// "KubeRay", "" when the manifest mounts it.
	Operator string
}
