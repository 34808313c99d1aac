package analyze

import (
	"path"
	"slices"
)

// Source says where a service's /dev/shm comes from.
type Source string

// The sources of /dev/shm. A mount at /dev/shm wins over every IPC mode, so the mount
// sources are checked first.
const (
	SourcePrivate   Source = "private"   // own IPC namespace, shm tmpfs sized by shm_size
	SourceShareable Source = "shareable" // as private, and others may join it
	SourceHost      Source = "host"      // the host's /dev/shm (ipc: host)
	SourceService   Source = "service"   // joins another service's namespace (ipc: service:X)
	SourceContainer Source = "container" // joins an external container (ipc: container:X)
	SourceTmpfs     Source = "tmpfs"     // a tmpfs mounted at /dev/shm
	SourceBind      Source = "bind"      // a bind mount at /dev/shm
	SourceVolume    Source = "volume"    // a named volume at /dev/shm
	SourceNone      Source = "none"      // ipc: none, no /dev/shm at all
)

// DefaultShmSize is the /dev/shm size Docker gives a container unless told otherwise.
const DefaultShmSize int64 = 64 << 20

// PodmanDefaultShmSize is the /dev/shm size Podman gives a container unless told otherwise:
// 64000k (62.5 MiB), not Docker's 64 MiB.
const PodmanDefaultShmSize int64 = 64000 << 10

// Engine is what a container engine does where engines differ: the defaults a compose
// service gets when it sets nothing, and what it refuses.
type Engine struct {
	// Name is how messages name the engine: "Docker", "Podman".
	Name string
	// DefaultShm is the size of the /dev/shm of a container that sets no shm_size.
	DefaultShm int64
	// DefaultIPC is the IPC mode of a container that sets none: "private" or "shareable".
	DefaultIPC string
	// RefusesShmSizeWith lists the IPC modes with which creating a container that sets
	// shm_size fails, rather than ignoring shm_size.
	RefusesShmSizeWith []string
}

// Refuses reports whether the engine refuses to create a container with shm_size under
// the IPC mode ipc.
func (e Engine) Refuses(ipc string) bool { return slices.Contains(e.RefusesShmSizeWith, ipc) }

// The engines.
var (
	Docker = Engine{Name: "Docker", DefaultShm: DefaultShmSize, DefaultIPC: "private"}
	Podman = Engine{Name: "Podman", DefaultShm: PodmanDefaultShmSize, DefaultIPC: "shareable", RefusesShmSizeWith: []string{"host", "none"}}
)

// Engine is the engine a target deploys with: Podman for podman, Docker otherwise.
func (t Target) Engine() Engine {
	if t == TargetPodman {
		return Podman
	}
	return Docker
}

// ShmPlan is everything the doctor knows about one service's /dev/shm. Rules read it, the
// probe turns it into a container, the report prints it; nothing else derives shm state.
type ShmPlan struct {
	Service string
	// IPC is the service's ipc value as loaded ("" when unset).
	IPC    string
	Source Source
	// Donor names the service or container whose namespace is joined (SourceService,
	// SourceContainer); Via lists the chain of ipc: service: hops, first hop first.
	Donor string
	Via   []string
	// Configured is shm_size in bytes, nil when not set (0 means the daemon default).
	Configured *int64
	// Predicted is the effective /dev/shm size, nil where it depends on the host.
	Predicted *int64
	// Mount is the mount at /dev/shm, if any.
	Mount *Mount
	// MemLimit is the container memory limit (deploy.resources.limits.memory wins over
	// mem_limit, as in docker compose), nil when unlimited or unknown.
	MemLimit     *int64
	MemSwapLimit *int64
	// Memlock and Stack are the ulimits, nil when not set; -1 means unlimited.
	Memlock *Ulimit
	Stack   *Ulimit
	// BuildShmSize is build.shm_size, nil when not set.
	BuildShmSize *int64
	// GPU is true when the service requests a GPU; GPUs says how many (AllGPUs for all, 1
	// when the request states no more) and GPUVendor whose ("nvidia", "amd", "" when unknown).
	GPU       bool
	GPUs      int
	GPUVendor string
	// Refusals are what makes docker compose (or the engine it calls) refuse the service as
	// written: the doctor analyses it all the same.
	Refusals []Refusal
	// Profile is the program recognised in the container, nil when none; Use is what its
	// parameters say of its /dev/shm use.
	Profile *Profile
	Use     *Use
	// Need is the declared /dev/shm need in bytes, nil when none; NeedFrom says who declared it.
	Need     *int64
	NeedFrom string
	// Ignore lists rule IDs silenced for this service through x-shmdoctor.ignore or the
	// shmdoctor.io/ignore annotation (their findings are marked Suppressed).
	Ignore []string
	// Ignored lists the keys that are set but have no effect, and why.
	Ignored []IgnoredKey
	// Unresolved lists the keys whose values depend on unset variables.
	Unresolved []Unresolved
	// Notes explain derivations a reader could not guess (a joined donor with a mount).
	Notes []string
	// K8s holds what a Kubernetes container adds; nil for compose services.
	K8s *K8sPlan
	// Secrets is what the run must not print, which Shown hides.
	Secrets *Secrets
}

// Mount is a mount at /dev/shm.
type Mount struct {
	Type     Source // SourceTmpfs, SourceBind or SourceVolume
	Source   string // host path or volume name; empty for tmpfs
	Size     *int64 // tmpfs size, nil when unset (the kernel default: half the RAM)
	ReadOnly bool
	// Entry is the compose key that declares it: "tmpfs" or "volumes".
	Entry string
}

// Ulimit is a soft and hard limit; -1 means unlimited.
type Ulimit struct{ Soft, Hard int64 }

// IgnoredKey is a key that is set but silently ignored by the engine.
type IgnoredKey struct {
	Key    string `json:"key"` // "shm_size", "build.shm_size"
	Reason string `json:"reason"`
}

// Unresolved is a key whose value depends on variables that are not set.
type Unresolved struct {
	Key  string
	Vars []string
}

// Mounted reports whether a user mount replaces /dev/shm.
func (p *ShmPlan) Mounted() bool { return p.Mount != nil }

// HostShared reports whether /dev/shm is the host's own (ipc: host or a bind of /dev/shm).
func (p *ShmPlan) HostShared() bool {
	return p.Source == SourceHost || (p.Mount != nil && (p.Mount.Type == SourceBind || p.Mount.Type == SourceHostPath) && p.Mount.Source == "/dev/shm")
}

// Workload reports whether the service uses shared memory: its parameters say its program
// passes data through /dev/shm, or it declares a need.
func (p *ShmPlan) Workload() bool { return p.Use.Uses() || p.Need != nil }

// Sized reports whether the doctor knows how much /dev/shm the service needs: a declared
// need, or one its parameters give.
func (p *ShmPlan) Sized() bool { return p.Need != nil || p.Use.Sized() }

// Target is what /dev/shm should hold: the declared need, else the one its parameters give,
// else 0 (not known).
func (p *ShmPlan) Target() int64 {
	switch {
	case p.Need != nil:
		return *p.Need
	case p.Use.Sized():
		return p.Use.Need
	}
	return 0
}

// Severity is how grave a shortfall of the plan's /dev/shm is: an error below a declared
// need, a warning where the workload crashes, info where it only slows down.
func (p *ShmPlan) Severity() Severity {
	switch {
	case p.Need != nil:
		return Error
	case p.Use != nil && p.Use.Failure == Slows:
		return Info
	}
	return Warning
}

// DependsOn returns the unset variables a key depends on, nil when none.
func (p *ShmPlan) DependsOn(key string) []string {
	for _, u := range p.Unresolved {
		if u.Key == key {
			return u.Vars
		}
	}
	return nil
}

func Ptr[T any](v T) *T { return &v }

// Refusal is one reason docker compose would not start a service, at the entry that causes it.
type Refusal struct {
	Pos
	Msg string // names keys and variables, never a value
	// Environment is true when what is missing is the environment's to give (a required
	// variable, an env file kept out of the repository), not a mistake in the file.
	Environment bool
}

// GPU vendors a plan can name.
const (
	VendorNVIDIA = "nvidia"
	VendorAMD    = "amd"
)

// ShmKey is the compose key that sizes a private /dev/shm.
const ShmKey = "shm_size"

func IsShm(target string) bool {
	return target != "" && path.Clean(target) == "/dev/shm"
}

// IntentKey is the service extension where a service declares what it needs.
const IntentKey = "x-shmdoctor"
