package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// WatchMethod names how `shmdoctor watch` reads a container's /dev/shm use.
type WatchMethod string

// The watch methods, in the order watch prefers them.
const (
	// WatchStats reads the shmem counter of the container's memory cgroup through the Docker
	// stats API (cgroup v2 only: the engine reports no shmem for cgroup v1). It counts every
	// tmpfs and shared anonymous page charged to the container, not only /dev/shm.
	WatchStats WatchMethod = "stats"
	// WatchAgent is statfs of the container's /dev/shm by the doctor's agent, run in a
	// companion container that shares the watched container's PID namespace and reads
	// /proc/PID/root/dev/shm: nothing is copied into the watched container.
	WatchAgent WatchMethod = "agent"
	// WatchDf executes the image's own `df -P -k /dev/shm` in the container at every sample.
	WatchDf WatchMethod = "df"
)

// Describe says what a method's numbers include, for the report.
func (m WatchMethod) Describe() string {
	switch m {
	case WatchStats:
		return "the shmem counter of each container's memory cgroup (Docker stats API): /dev/shm pages the container wrote, plus its other tmpfs and shared anonymous memory; read once per --interval, so a spike shorter than the interval can fall between two readings"
	case WatchAgent:
		return "statfs of /dev/shm by the doctor's agent in a companion container that shares the container's PID namespace (sampled every 50ms, nothing copied into the container)"
	case WatchDf:
		return "the image's df -P -k /dev/shm, executed in the container at every sample, so a spike shorter than --interval can fall between two readings"
	}
	return string(m)
}

// KeepsPeaks reports whether a method keeps the highest use between two readings: the agent
// samples every 50ms and keeps the peak; stats and df read once per --interval, so a spike
// between two readings is never seen.
func (m WatchMethod) KeepsPeaks() bool { return m == WatchAgent }

// WatchedContainer is one container of a watched project and what watch saw of its /dev/shm.
// Containers that share one /dev/shm (ipc: service:, ipc: host) report the same numbers;
// SharesWith names the container that owns it, so that the sum counts it once.
type WatchedContainer struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Service string `json:"service"`
	Number  int    `json:"number"`
	// SharesWith and SharesService name the container (and its service) whose /dev/shm this
	// one uses through ipc: service: or container:, "" when it has its own.
	SharesWith    string `json:"shares_with,omitempty"`
	SharesService string `json:"shares_service,omitempty"`
	// HostIPC is true when /dev/shm is the host's own (ipc: host).
	HostIPC bool `json:"host_ipc,omitempty"`
	// Mount is the type of a mount at /dev/shm (tmpfs, bind, volume), "" when none.
	Mount   string      `json:"mount,omitempty"`
	Running bool        `json:"running"`
	Method  WatchMethod `json:"method,omitempty"`
	// SizeBytes is the size of /dev/shm, UsedBytes the latest use, PeakBytes the highest use
	// seen; nil until read.
	SizeBytes *int64 `json:"size_bytes"`
	UsedBytes *int64 `json:"used_bytes"`
	PeakBytes *int64 `json:"peak_bytes"`
	// MemLimitBytes is the container's memory limit as the engine applies it, nil when none.
	MemLimitBytes *int64 `json:"mem_limit_bytes"`
	Samples       int    `json:"samples"`
	// Error is the latest reason the use could not be read, "" when it could.
	Error string `json:"error,omitempty"`
	// Fallback says why Method is not the one watch prefers ("agent: ..."), "" when it is.
	Fallback string `json:"fallback,omitempty"`
}

// ServiceUsage is one service's /dev/shm over a watch: the largest of its containers (each
// replica has its own /dev/shm, and shm_size sizes each one).
type ServiceUsage struct {
	Service string `json:"service"`
	// Running counts the containers running now; Seen every container seen during the watch.
	Running int `json:"running"`
	Seen    int `json:"seen"`
	// SharesService is the service whose /dev/shm this one uses (ipc: service:): its use is
	// counted there.
	SharesService string        `json:"shares_service,omitempty"`
	HostIPC       bool          `json:"host_ipc,omitempty"`
	Mount         string        `json:"mount,omitempty"`
	Methods       []WatchMethod `json:"methods,omitempty"`
	SizeBytes     *int64        `json:"size_bytes"`
	UsedBytes     *int64        `json:"used_bytes"`
	PeakBytes     *int64        `json:"peak_bytes"`
	MemLimitBytes *int64        `json:"mem_limit_bytes"`
	Errors        []string      `json:"errors,omitempty"`
}

// SummarizeServices folds containers into one ServiceUsage per service, sorted by name.
func SummarizeServices(cs []WatchedContainer) []ServiceUsage {
	by := map[string]*ServiceUsage{}
	var names []string
	maxp := func(a *int64, b *int64) *int64 {
		switch {
		case b == nil:
			return a
		case a == nil || *b > *a:
			return Ptr(*b)
		}
		return a
	}
	for _, c := range cs {
		u := by[c.Service]
		if u == nil {
			u = &ServiceUsage{Service: c.Service, SharesService: c.SharesService, HostIPC: c.HostIPC, Mount: c.Mount}
			by[c.Service] = u
			names = append(names, c.Service)
		}
		u.Seen++
		if c.SharesService != u.SharesService {
			u.SharesService = "" // replicas disagree: show each one's own numbers
		}
		if c.Method != "" && !containsMethod(u.Methods, c.Method) {
			u.Methods = append(u.Methods, c.Method)
		}
		u.SizeBytes = maxp(u.SizeBytes, c.SizeBytes)
		u.PeakBytes = maxp(u.PeakBytes, c.PeakBytes)
		u.MemLimitBytes = maxp(u.MemLimitBytes, c.MemLimitBytes)
		if c.Running {
			u.Running++
			u.UsedBytes = maxp(u.UsedBytes, c.UsedBytes)
			if c.Error != "" {
				u.Errors = append(u.Errors, c.Name+": "+c.Error)
			}
		}
	}
	sort.Strings(names)
	out := make([]ServiceUsage, 0, len(names))
	for _, n := range names {
		out = append(out, *by[n])
	}
	return out
}

func containsMethod(ms []WatchMethod, m WatchMethod) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// WatchSample is what watch saw at one moment: one object of the JSON stream.
type WatchSample struct {
	Type       string             `json:"type"` // "sample"
	Time       time.Time          `json:"time"`
	Project    string             `json:"project"`
	Services   []ServiceUsage     `json:"services"`
	Containers []WatchedContainer `json:"containers"`
}

// WatchSummary is the end of a watch: what each service used at its peak and the shm_size
// that follows.
type WatchSummary struct {
	Type     string        `json:"type"` // "summary"
	Project  string        `json:"project"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"duration_seconds"`
	// Interrupted is true when Ctrl-C ended the watch, false when --duration did.
	Interrupted bool `json:"interrupted"`
	// DaemonError, when set, is why the watch ended early or badly: the daemon died or
	// stopped answering. What was seen until then is in the summary.
	DaemonError     string              `json:"daemon_error,omitempty"`
	Methods         []WatchMethod       `json:"methods"`
	Services        []ServiceUsage      `json:"services"`
	Containers      []WatchedContainer  `json:"containers"`
	Recommendations []ShmRecommendation `json:"recommendations"`
	Notes           []string            `json:"notes,omitempty"`
}

// DefaultHeadroom is the factor between the observed peak and the recommended shm_size.
const DefaultHeadroom = 1.5

// ShmRecommendation is the shm_size a watch recommends for one service, and where to set it.
type ShmRecommendation struct {
	Service   string  `json:"service"`
	PeakBytes int64   `json:"peak_bytes"`
	Headroom  float64 `json:"headroom"`
	// RecommendedBytes is peak × headroom rounded up to a size people write, never below
	// FloorBytes; ShmSize is the same as a compose value ("2g").
	RecommendedBytes int64  `json:"recommended_bytes"`
	ShmSize          string `json:"shm_size"`
	// FloorBytes is the workload profile's minimum or the declared need, FloorFrom says which.
	FloorBytes int64  `json:"floor_bytes,omitempty"`
	FloorFrom  string `json:"floor_from,omitempty"`
	// CurrentBytes is the /dev/shm size the service has now, nil when unknown.
	CurrentBytes *int64 `json:"current_bytes"`
	// MemLimitBytes is the memory limit (the compose file's, else the engine's); Fits says
	// whether it can hold the recommendation (the SHM012 condition), Verdict says it in words.
	MemLimitBytes *int64 `json:"mem_limit_bytes"`
	MemLimitKey   string `json:"mem_limit_key,omitempty"`
	Fits          bool   `json:"fits_memory_limit"`
	Verdict       string `json:"verdict"`
	// Pos is where the size is set (Set) or would be set: the key, else the service's name.
	Pos Pos    `json:"pos"`
	Key string `json:"key"`
	Set bool   `json:"set"`
	// Change is false when /dev/shm already has the recommended size: nothing to write.
	Change bool `json:"change"`
	// NoReduction says why the recommendation keeps the current size although the peak
	// read would give less: a method that reads once per interval may have missed a spike,
	// and a smaller /dev/shm would bring back the crash it causes. "" when not held.
	NoReduction string `json:"no_reduction,omitempty"`
	// Snippet is the compose text to write there; Diff a unified diff of the file, when the
	// fix machinery could produce one.
	Snippet string `json:"snippet"`
	Diff    string `json:"diff,omitempty"`
	Note    string `json:"note,omitempty"`
}

// RecommendSize is the shm_size for an observed peak: peak × headroom, never below floor,
// rounded up to a size people write (a power of two MiB below 1 GiB, whole GiB above).
// Docker's default 64 MiB is the answer whenever it suffices.
func RecommendSize(peak int64, headroom float64, floor int64) int64 {
	n := int64(math.Ceil(float64(max(peak, 0)) * headroom))
	n = max(n, floor)
	if n <= DefaultShmSize {
		return DefaultShmSize
	}
	return Friendly(n)
}

// Recommend turns a service's observed peak into a recommendation. p may be nil (a project
// watched by its labels alone): then there is no need from its parameters and no position.
// observedLimit is the memory limit the engine applies, used when the compose file sets none.
// methods are the ways the peak was read: a size below the current one is recommended only
// when every one of them keeps peaks (the agent), or when the current size is at or above
// the memory limit.
func Recommend(p *Project, service string, peak int64, current, observedLimit *int64, headroom float64, methods []WatchMethod) ShmRecommendation {
	r := ShmRecommendation{Service: service, PeakBytes: peak, Headroom: headroom, CurrentBytes: current, MemLimitBytes: observedLimit}
	var plan *ShmPlan
	if p != nil {
		for _, q := range p.Plans {
			if q.Service == service {
				plan = q
			}
		}
	}
	if plan != nil {
		if t := plan.Target(); t > 0 {
			r.FloorBytes = t
			r.FloorFrom = NeedBasis(plan)
		}
		if plan.MemLimit != nil {
			r.MemLimitBytes = plan.MemLimit
		}
	}
	r.RecommendedBytes = RecommendSize(peak, headroom, r.FloorBytes)
	if current != nil && r.RecommendedBytes < *current && (r.MemLimitBytes == nil || !ExceedsLimit(*current, *r.MemLimitBytes)) {
		if why := missesPeaks(methods); why != "" {
			r.NoReduction = fmt.Sprintf("no reduction advised: the peak read gives %s, but %s, and a smaller /dev/shm would bring back the crash such a spike causes; watch with --method agent, which keeps peaks, to size it down",
				ComposeSize(r.RecommendedBytes), why)
			r.RecommendedBytes = *current
		}
	}
	r.ShmSize = ComposeSize(r.RecommendedBytes)
	r.Change = current == nil || *current != r.RecommendedBytes
	r.MemLimitKey = "mem_limit"
	if p != nil && plan != nil && p.Doc != nil {
		if _, ok := p.Doc.KeyPos(service, "deploy", "resources", "limits", "memory"); ok {
			r.MemLimitKey = "deploy.resources.limits.memory"
		}
	}
	r.Fits, r.Verdict = memoryVerdict(r.RecommendedBytes, r.MemLimitBytes, r.MemLimitKey)
	r.Key = ShmKey
	if plan != nil && p.Doc != nil {
		r.locate(p.Doc, plan)
	}
	if r.Snippet == "" {
		r.Snippet = fmt.Sprintf("services:\n  %s:\n    shm_size: %s\n", service, r.ShmSize)
	}
	return r
}

// missesPeaks says why the methods may have missed a peak, "" when every one keeps them.
func missesPeaks(methods []WatchMethod) string {
	if len(methods) == 0 {
		return "no reading is known to have kept the peaks"
	}
	var out []string
	for _, m := range methods {
		if !m.KeepsPeaks() {
			out = append(out, string(m))
		}
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return out[0] + " reads /dev/shm once per --interval, so a spike between two readings can be missed"
	}
	return strings.Join(out, " and ") + " read /dev/shm once per --interval, so a spike between two readings can be missed"
}

// memoryVerdict applies SHM012's condition to a recommended size.
func memoryVerdict(size int64, limit *int64, key string) (bool, string) {
	switch {
	case limit == nil:
		return true, "no memory limit: /dev/shm pages count against the host's memory"
	case ExceedsLimit(size, *limit):
		return false, fmt.Sprintf("the memory limit %s (%s) cannot hold /dev/shm of %s: the container is OOM-killed before /dev/shm fills; raise %s above %s plus what the processes need",
			FormatSize(*limit), key, FormatSize(size), key, FormatSize(size))
	}
	return true, fmt.Sprintf("fits the memory limit %s (%s), leaving %s for the processes", FormatSize(*limit), key, FormatSize(*limit-size))
}

// locate finds where the size is or would be written, and the text to write there.
func (r *ShmRecommendation) locate(doc Document, plan *ShmPlan) {
	svc := "services:\n  " + plan.Service + ":\n"
	switch {
	case plan.Mount != nil && plan.Mount.Type == SourceTmpfs:
		r.Key = plan.Mount.Entry
		if pos, ok := doc.MountPos(plan); ok {
			r.Pos, r.Set = pos, true
		} else {
			r.Pos = doc.ServicePos(plan.Service)
		}
		if plan.Mount.Entry == "tmpfs" {
			r.Snippet = svc + "    tmpfs:\n      - /dev/shm:size=" + ComposeSize(r.RecommendedBytes) + "\n"
		} else {
			r.Snippet = svc + "    volumes:\n      - type: tmpfs\n        target: /dev/shm\n        tmpfs:\n          size: " + ComposeSize(r.RecommendedBytes) + "\n"
		}
		r.Note = "a tmpfs mounted at /dev/shm replaces the shm mount: its size is set on the mount, not with shm_size"
		return
	case plan.Mount != nil:
		r.Note = fmt.Sprintf("a %s mount at /dev/shm replaces the shm mount; remove it so that shm_size applies", plan.Mount.Type)
	case plan.Source == SourceHost:
		r.Note = "ipc: host shares the host's /dev/shm and ignores shm_size; replace ipc: host with shm_size to give the service a /dev/shm of its own"
	}
	r.Pos, r.Set = doc.KeyPos(plan.Service, ShmKey)
	if !r.Set {
		r.Pos = doc.ServicePos(plan.Service)
	}
}

// WatchNotes are the sentences a summary needs besides its numbers.
func WatchNotes(methods []WatchMethod) []string {
	var notes []string
	for _, m := range methods {
		notes = append(notes, string(m)+": "+m.Describe())
	}
	return notes
}

// SharedNote explains a service that uses another one's /dev/shm.
func SharedNote(u ServiceUsage) string {
	if u.SharesService == "" {
		return ""
	}
	return u.Service + " uses the /dev/shm of " + u.SharesService + " (ipc: service:): counted and sized there"
}
