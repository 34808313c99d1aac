package compose

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// Resolve derives one ShmPlan per service of a loaded project, sorted by service name.
// need, when set, is the need of every service (--need), and from names who set it. Located errors in the doctor's own
// inputs (x-shmdoctor, ipc chains) are added to p.Errors; the plans are still made.
func resolve(p *project, need *int64, from string) {
	names := make([]string, 0, len(p.model.Services))
	for n := range p.model.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	byName := map[string]*analyze.ShmPlan{}
	for _, n := range names {
		s := p.model.Services[n]
		plan := p.plan(&s)
		if need != nil {
			plan.Need, plan.NeedFrom = analyze.Ptr(*need), from
		}
		byName[n] = plan
		p.Plans = append(p.Plans, plan)
	}
	for _, plan := range p.Plans {
		p.join(plan, byName)
	}
}

// plan derives what a service's own keys say; joins are settled afterwards.
func (p *project) plan(s *types.ServiceConfig) *analyze.ShmPlan {
	plan := &analyze.ShmPlan{Service: s.Name, IPC: s.Ipc}
	if _, ok := p.value(plan, analyze.ShmKey); ok {
		plan.Configured = analyze.Ptr(int64(s.ShmSize))
	} else if s.ShmSize != 0 {
		plan.Configured = analyze.Ptr(int64(s.ShmSize))
	}
	if s.Build != nil {
		if _, ok := p.value(plan, "build", analyze.ShmKey); ok || s.Build.ShmSize != 0 {
			plan.BuildShmSize = analyze.Ptr(int64(s.Build.ShmSize))
		}
	}
	plan.Mount = shmMount(s)
	if plan.Mount != nil && plan.Mount.Type == analyze.SourceTmpfs && plan.Mount.Size != nil {
		if p.mountDepends(plan) {
			plan.Mount.Size = nil
		}
	}
	p.memory(plan, s)
	plan.Memlock, plan.Stack = ulimit(s.Ulimits["memlock"]), ulimit(s.Ulimits["stack"])
	p.gpus(plan, s)
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	var limit int64
	if plan.MemLimit != nil {
		limit = *plan.MemLimit
	}
	plan.Profile, plan.Use = analyze.ReadWorkload(analyze.Signals{
		Image: s.Image, Command: append(append([]string{}, s.Entrypoint...), s.Command...),
		Env: env, GPUs: plan.GPUs, MemLimit: limit, Build: p.dockerfile(s),
	})
	p.intent(plan, s)
	p.refusals(plan)

	switch {
	case plan.Mount != nil:
		plan.Source = plan.Mount.Type
		if plan.Mount.Type == analyze.SourceTmpfs {
			plan.Predicted = plan.Mount.Size
		}
		if plan.Configured != nil {
			plan.Ignored = append(plan.Ignored, analyze.IgnoredKey{Key: analyze.ShmKey, Reason: fmt.Sprintf("a %s mount at /dev/shm replaces the shm mount", plan.Mount.Type)})
		}
	case s.Ipc == "host":
		plan.Source = analyze.SourceHost
	case s.Ipc == "none":
		plan.Source, plan.Predicted = analyze.SourceNone, analyze.Ptr(int64(0))
	case strings.HasPrefix(s.Ipc, "service:"):
		plan.Source, plan.Donor = analyze.SourceService, strings.TrimPrefix(s.Ipc, "service:")
	case strings.HasPrefix(s.Ipc, "container:"):
		plan.Source, plan.Donor = analyze.SourceContainer, strings.TrimPrefix(s.Ipc, "container:")
	default:
		plan.Source = analyze.SourcePrivate
		if s.Ipc == "shareable" {
			plan.Source = analyze.SourceShareable
		} else if s.Ipc != "" && s.Ipc != "private" {
			p.Fail(p.keyPos(plan, "ipc"), "ipc %q is not a valid IPC mode: use private, shareable, host, none, service:NAME or container:NAME", s.Ipc)
		}
		switch {
		case plan.Configured == nil && plan.DependsOn(analyze.ShmKey) != nil:
			// unknown: shm_size depends on an unset variable
		case plan.Configured != nil && *plan.Configured > 0:
			plan.Predicted = analyze.Ptr(*plan.Configured)
		default:
			plan.Predicted = analyze.Ptr(p.engine().DefaultShm)
		}
	}
	if plan.Configured != nil && plan.Mount == nil {
		switch plan.Source {
		case analyze.SourceHost:
			plan.Ignored = append(plan.Ignored, analyze.IgnoredKey{Key: analyze.ShmKey, Reason: "ipc is host: the host's /dev/shm is used"})
		case analyze.SourceService, analyze.SourceContainer:
			plan.Ignored = append(plan.Ignored, analyze.IgnoredKey{Key: analyze.ShmKey, Reason: fmt.Sprintf("ipc joins %s: its /dev/shm is used", s.Ipc)})
		case analyze.SourceNone:
			plan.Ignored = append(plan.Ignored, analyze.IgnoredKey{Key: analyze.ShmKey, Reason: "ipc is none: no /dev/shm is mounted"})
		}
	}
	if plan.BuildShmSize != nil && plan.Configured == nil {
		plan.Ignored = append(plan.Ignored, analyze.IgnoredKey{Key: "build.shm_size", Reason: "it sizes /dev/shm of build steps only, not of the running container"})
	}
	return plan
}

// engine is the project's engine, Docker unless Load was told otherwise.
func (p *project) engine() analyze.Engine {
	if p.Engine.Name == "" {
		return analyze.Docker
	}
	return p.Engine
}

// join follows ipc: service: chains to the service that owns the namespace.
func (p *project) join(plan *analyze.ShmPlan, byName map[string]*analyze.ShmPlan) {
	if plan.Source != analyze.SourceService || plan.Mount != nil {
		return
	}
	seen := map[string]bool{plan.Service: true}
	cur := plan
	for cur.Source == analyze.SourceService && (cur == plan || cur.Mount == nil) {
		donor, ok := byName[cur.Donor]
		if !ok {
			if _, disabled := p.model.DisabledServices[cur.Donor]; disabled {
				plan.Notes = append(plan.Notes, fmt.Sprintf("ipc donor %s is not enabled by the selected profiles", cur.Donor))
			} else {
				p.Fail(p.keyPos(cur, "ipc"), "ipc %q: no service named %s", cur.IPC, cur.Donor)
			}
			return
		}
		if seen[donor.Service] {
			p.Fail(p.keyPos(plan, "ipc"), "ipc cycle: %s", strings.Join(append(append([]string{plan.Service}, plan.Via...), donor.Service), " -> "))
			return
		}
		seen[donor.Service] = true
		plan.Via = append(plan.Via, donor.Service)
		cur = donor
	}
	switch {
	case cur.Mount != nil:
		plan.Notes = append(plan.Notes, fmt.Sprintf("donor %s has its own %s mount at /dev/shm, which is not shared through its IPC namespace", cur.Service, cur.Mount.Type))
	case cur.Source == analyze.SourceContainer:
		plan.Notes = append(plan.Notes, fmt.Sprintf("the chain ends at container %s, outside the project", cur.Donor))
	default:
		plan.Predicted = cur.Predicted
	}
}

// value returns the raw node of a service key in the winning file, recording the unset
// variables it depends on.
func (p *project) value(plan *analyze.ShmPlan, key ...string) (*yaml.Node, bool) {
	n, _, ok := p.Index.Lookup(plan.Service, key...)
	if !ok {
		return nil, false
	}
	if n != nil && n.Kind == yaml.ScalarNode {
		if vars := p.env.varsIn(n.Value); len(vars) > 0 {
			plan.Unresolved = append(plan.Unresolved, analyze.Unresolved{Key: strings.Join(key, "."), Vars: vars})
			return n, false
		}
	}
	return n, true
}

func (p *project) keyPos(plan *analyze.ShmPlan, key ...string) analyze.Pos {
	if _, pos, ok := p.Index.Lookup(plan.Service, key...); ok {
		return pos
	}
	return p.Index.ServicePos(plan.Service)
}

func (p *project) memory(plan *analyze.ShmPlan, s *types.ServiceConfig) {
	limit, key := int64(s.MemLimit), []string{"mem_limit"}
	if s.Deploy != nil && s.Deploy.Resources.Limits != nil && s.Deploy.Resources.Limits.MemoryBytes != 0 {
		limit, key = int64(s.Deploy.Resources.Limits.MemoryBytes), []string{"deploy", "resources", "limits", "memory"}
	}
	if _, resolved := p.value(plan, key...); !resolved && plan.DependsOn(strings.Join(key, ".")) != nil {
		return
	}
	if limit > 0 {
		plan.MemLimit = analyze.Ptr(limit)
	}
	if _, resolved := p.value(plan, "memswap_limit"); resolved && s.MemSwapLimit != 0 {
		plan.MemSwapLimit = analyze.Ptr(int64(s.MemSwapLimit))
	}
}

// mountDepends reports whether the /dev/shm tmpfs size was written with an unset variable.
func (p *project) mountDepends(plan *analyze.ShmPlan) bool {
	n, _, ok := p.mountNode(plan)
	if !ok {
		return false
	}
	var depends bool
	source.Scalars(n, "", func(_ string, v *yaml.Node) {
		if vars := p.env.varsIn(v.Value); len(vars) > 0 {
			plan.Unresolved = append(plan.Unresolved, analyze.Unresolved{Key: plan.Mount.Entry, Vars: vars})
			depends = true
		}
	})
	return depends
}

// mountNode finds the tmpfs or volumes entry that puts a mount at /dev/shm.
func (p *project) mountNode(plan *analyze.ShmPlan) (*yaml.Node, analyze.Pos, bool) {
	if plan.Mount == nil {
		return nil, analyze.Pos{}, false
	}
	return p.Index.LookupItem(plan.Service, plan.Mount.Entry, shmItem(plan))
}

// shmItem matches the tmpfs or volumes entry of a plan's mount at /dev/shm.
func shmItem(plan *analyze.ShmPlan) func(*yaml.Node) bool {
	return func(n *yaml.Node) bool {
		switch n.Kind {
		case yaml.ScalarNode:
			if plan.Mount.Entry == "tmpfs" {
				return analyze.IsShm(strings.SplitN(n.Value, ":", 2)[0])
			}
			parts := strings.Split(n.Value, ":")
			return len(parts) >= 2 && analyze.IsShm(parts[1]) || len(parts) == 1 && analyze.IsShm(parts[0])
		case yaml.MappingNode:
			return analyze.IsShm(source.Scalar(source.Get(n, "target")))
		}
		return false
	}
}

// shmMount finds a user mount at /dev/shm: a tmpfs entry or a volumes entry.
func shmMount(s *types.ServiceConfig) *analyze.Mount {
	for _, t := range s.Tmpfs {
		target, opts, _ := strings.Cut(t, ":")
		if !analyze.IsShm(target) {
			continue
		}
		m := &analyze.Mount{Type: analyze.SourceTmpfs, Entry: "tmpfs"}
		for _, o := range strings.Split(opts, ",") {
			if v, ok := strings.CutPrefix(o, "size="); ok {
				if n, ok := analyze.ParseTmpfsSize(v); ok {
					m.Size = analyze.Ptr(n)
				}
			}
		}
		return m
	}
	for _, v := range s.Volumes {
		if !analyze.IsShm(v.Target) {
			continue
		}
		m := &analyze.Mount{Source: v.Source, ReadOnly: v.ReadOnly, Entry: "volumes"}
		switch v.Type {
		case types.VolumeTypeTmpfs:
			m.Type = analyze.SourceTmpfs
			if v.Tmpfs != nil && v.Tmpfs.Size > 0 {
				m.Size = analyze.Ptr(int64(v.Tmpfs.Size))
			}
		case types.VolumeTypeBind:
			m.Type = analyze.SourceBind
			m.Source = path.Clean(v.Source)
		default:
			m.Type = analyze.SourceVolume
		}
		return m
	}
	return nil
}

func ulimit(u *types.UlimitsConfig) *analyze.Ulimit {
	switch {
	case u == nil:
		return nil
	case u.Single != 0:
		return &analyze.Ulimit{Soft: int64(u.Single), Hard: int64(u.Single)}
	}
	return &analyze.Ulimit{Soft: int64(u.Soft), Hard: int64(u.Hard)}
}

// gpus reads a service's GPU requests as docker compose hands them to the engine, and
// AMD or NVIDIA device nodes mapped into the container. compose-go gives a device request
// that states neither count nor device_ids count: all, as it does to gpus: all; the engine's
// NVIDIA driver then passes NVIDIA_VISIBLE_DEVICES=all, a list of device IDs as written
// ("all" among them is all), a count of n as n GPUs, and count: 0 as void (none). Without a
// device request, runtime: nvidia exposes what NVIDIA_VISIBLE_DEVICES in the service's
// environment names. CUDA_VISIBLE_DEVICES then narrows what the process sees.
func (p *project) gpus(plan *analyze.ShmPlan, s *types.ServiceConfig) {
	vendor := func(v string) {
		if plan.GPUVendor != analyze.VendorNVIDIA {
			plan.GPUVendor = v
		}
	}
	// add counts the GPUs of a request; atLeast raises the count to what a request implies.
	add := func(gpus *int, n int) {
		switch {
		case n == 0:
		case n == analyze.AllGPUs || *gpus == analyze.AllGPUs:
			*gpus = analyze.AllGPUs
		default:
			*gpus += n
		}
	}
	atLeast := func(n int, v string) {
		if n != 0 {
			vendor(v)
		}
		if plan.GPUs != analyze.AllGPUs && (n == analyze.AllGPUs || plan.GPUs < n) {
			plan.GPUs = n
		}
	}
	requests := 0
	request := func(r types.DeviceRequest) {
		requests++
		n := deviceCount(r)
		add(&plan.GPUs, n)
		if n != 0 {
			vendor(analyze.VendorNVIDIA)
		}
	}
	for _, r := range s.Gpus {
		request(r)
	}
	if s.Deploy != nil && s.Deploy.Resources.Reservations != nil {
		for _, d := range s.Deploy.Resources.Reservations.Devices {
			if d.Driver == "nvidia" || containsFold(d.Capabilities, "gpu") {
				request(d)
			}
		}
	}
	if requests == 0 && s.Runtime == "nvidia" {
		// The runtime exposes what NVIDIA_VISIBLE_DEVICES names; without it in the service,
		// the image's own variable decides (NVIDIA's CUDA images say all): one, as far as
		// the file tells.
		n := 1
		if v, ok := s.Environment["NVIDIA_VISIBLE_DEVICES"]; ok && v != nil {
			n = visibleDevices(*v)
		}
		atLeast(n, analyze.VendorNVIDIA)
	}
	for _, d := range s.Devices {
		// AMD ROCm compute (/dev/kfd), NVIDIA device nodes passed through by hand, and
		// NVIDIA's CDI names (nvidia.com/gpu=all, nvidia.com/gpu=0).
		switch {
		case d.Source == "/dev/kfd":
			atLeast(1, analyze.VendorAMD)
		case strings.HasPrefix(d.Source, "/dev/nvidia"):
			atLeast(1, analyze.VendorNVIDIA)
		case strings.HasPrefix(d.Source, "nvidia.com/gpu="):
			if strings.TrimPrefix(d.Source, "nvidia.com/gpu=") == "all" {
				atLeast(analyze.AllGPUs, analyze.VendorNVIDIA)
			} else {
				atLeast(1, analyze.VendorNVIDIA)
			}
		}
	}
	if plan.GPUs != 0 && plan.GPUVendor == analyze.VendorNVIDIA {
		if v, ok := s.Environment["CUDA_VISIBLE_DEVICES"]; ok && v != nil {
			n := cudaVisible(*v)
			if plan.GPUs == analyze.AllGPUs || plan.GPUs > n {
				plan.GPUs = n
			}
		}
	}
	if strings.HasPrefix(analyze.ParseProfileImage(s.Image).Path, "rocm/") {
		plan.GPUVendor = analyze.VendorAMD
	}
	plan.GPU = plan.GPUs != 0
	if !plan.GPU {
		plan.GPUVendor = ""
	}
}

// deviceCount is the number of GPUs the engine's NVIDIA driver gives a device request:
// its device IDs ("all" among them is every GPU), else its count (-1 for all, 0 for none).
func deviceCount(r types.DeviceRequest) int {
	if len(r.IDs) > 0 {
		if containsFold(r.IDs, "all") {
			return analyze.AllGPUs
		}
		return len(r.IDs)
	}
	if r.Count < 0 {
		return analyze.AllGPUs
	}
	return int(r.Count)
}

// visibleDevices is how many GPUs NVIDIA_VISIBLE_DEVICES exposes: all, none or void, or a
// list of indexes or UUIDs.
func visibleDevices(v string) int {
	switch ids := strings.ToLower(strings.TrimSpace(v)); ids {
	case "", "void", "none":
		return 0
	case "all":
		return analyze.AllGPUs
	default:
		return len(strings.Split(ids, ","))
	}
}

// cudaVisible is how many GPUs CUDA_VISIBLE_DEVICES leaves a process at most: CUDA
// enumerates the listed devices up to the first invalid one, so an empty value or -1
// leaves none.
func cudaVisible(v string) int {
	n := 0
	for _, id := range strings.Split(v, ",") {
		id = strings.TrimSpace(id)
		if id == "" || strings.HasPrefix(id, "-") {
			break
		}
		n++
	}
	return n
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
