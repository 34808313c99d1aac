package probe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// HostInfo is what `shmdoctor host` prints: the daemon, its host, and the /dev/shm a
// container gets there, measured.
type HostInfo struct {
	// DaemonHost is the address the client talks to.
	DaemonHost string `json:"daemon_host"`
	// Engine is the engine behind the API, from its version response: "Docker" or "Podman".
	Engine string `json:"engine"`
	// ServerVersion is the engine's version (20.10.24, or Podman's 4.3.1).
	ServerVersion string `json:"server_version"`
	// APIVersion is the API version negotiated with the daemon; DaemonAPIVersion is the
	// daemon's own maximum.
	APIVersion       string `json:"api_version"`
	DaemonAPIVersion string `json:"daemon_api_version"`
	// OS and Arch are the daemon's platform as GOOS/GOARCH (linux, amd64).
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// OperatingSystem and KernelVersion describe the daemon's host.
	OperatingSystem string `json:"operating_system,omitempty"`
	KernelVersion   string `json:"kernel_version,omitempty"`
	// CgroupVersion is "1" or "2"; CgroupDriver is cgroupfs or systemd.
	CgroupVersion string `json:"cgroup_version,omitempty"`
	CgroupDriver  string `json:"cgroup_driver,omitempty"`
	// StorageDriver is the daemon's storage driver (overlay2, fuse-overlayfs).
	StorageDriver string `json:"storage_driver,omitempty"`
	// CPUs is the number of CPUs the daemon sees.
	CPUs int `json:"cpus,omitempty"`
	// MemTotalBytes is the daemon's total memory; MemAvailableBytes what the kernel reports
	// available inside a container (the host's MemAvailable), nil if not measured.
	MemTotalBytes     int64  `json:"mem_total_bytes"`
	MemAvailableBytes *int64 `json:"mem_available_bytes"`
	// DefaultShmBytes is the size of the /dev/shm a container created with no shm settings
	// gets, measured; DefaultShmSource and DefaultShmFSType are its mount's source and type.
	DefaultShmBytes  *int64 `json:"default_shm_bytes"`
	DefaultShmSource string `json:"default_shm_source,omitempty"`
	DefaultShmFSType string `json:"default_shm_fs_type,omitempty"`
	// DefaultIPCMode is the IPC mode the daemon gives a container that asks for none
	// (private unless default-ipc-mode says otherwise).
	DefaultIPCMode string `json:"default_ipc_mode,omitempty"`
	// HostShmBytes is the size of the host's /dev/shm, measured with ipc: host;
	// HostShmFreeBytes is what is free in it.
	HostShmBytes     *int64 `json:"host_shm_bytes"`
	HostShmFreeBytes *int64 `json:"host_shm_free_bytes,omitempty"`
	// NVIDIARuntime is true when a runtime named nvidia is configured; Runtimes lists every
	// runtime and DefaultRuntime is the one containers get.
	NVIDIARuntime  bool     `json:"nvidia_runtime"`
	Runtimes       []string `json:"runtimes,omitempty"`
	DefaultRuntime string   `json:"default_runtime,omitempty"`
	// Errors lists what could not be measured.
	Errors []string `json:"errors,omitempty"`
}

// CanGive reports whether a container on this host can hold need bytes in /dev/shm (with
// shm_size set accordingly): the pages must fit in the memory the host has available. The
// error says why not.
func (h *HostInfo) CanGive(need int64) error {
	if h.MemAvailableBytes == nil {
		return errors.New("the host's available memory was not measured")
	}
	if need > *h.MemAvailableBytes {
		return fmt.Errorf("the daemon's host has %s of memory available; %s of /dev/shm cannot be backed",
			analyze.FormatSize(*h.MemAvailableBytes), analyze.FormatSize(need))
	}
	return nil
}

// Host measures the daemon's host for `shmdoctor host`: versions, platform, cgroup version,
// memory, runtimes, and, each in a probe container, the default /dev/shm of a new container
// and the host's own /dev/shm (ipc: host). The write probe never runs. Containers are
// removed as in Run.
func Host(ctx context.Context, c engine.Client, opts Options) (*HostInfo, error) {
	opts.WriteProbe = "off"
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if o.Project == "" {
		o.Project = "host"
	}
	r, err := start(ctx, c, o)
	if err != nil {
		return nil, err
	}
	defer r.cancel()

	info := r.info.Info
	h := &HostInfo{
		DaemonHost: c.DaemonHost(), ServerVersion: info.ServerVersion, APIVersion: c.ClientVersion(),
		OS: info.OSType, OperatingSystem: info.OperatingSystem, KernelVersion: info.KernelVersion,
		CgroupVersion: info.CgroupVersion, CgroupDriver: info.CgroupDriver, StorageDriver: info.Driver,
		CPUs: info.NCPU, MemTotalBytes: info.MemTotal, DefaultRuntime: info.DefaultRuntime,
	}
	_, h.Arch = engine.DaemonPlatform(info.OSType, info.Architecture)
	h.Engine = r.engine.Name
	if v, err := c.ServerVersion(r.ctx, client.ServerVersionOptions{}); err == nil {
		h.DaemonAPIVersion = v.APIVersion
	} else {
		h.Errors = append(h.Errors, "reading the daemon version: "+engine.Reason(err))
	}
	for name := range info.Runtimes {
		h.Runtimes = append(h.Runtimes, name)
		if strings.Contains(strings.ToLower(name), "nvidia") {
			h.NVIDIARuntime = true
		}
	}
	sort.Strings(h.Runtimes)

	def := &node{plan: &analyze.ShmPlan{Service: "default"}, m: &analyze.Measurement{}, ready: make(chan struct{})}
	host := &node{plan: &analyze.ShmPlan{Service: "ipc-host", IPC: "host", Source: analyze.SourceHost}, m: &analyze.Measurement{}, ready: make(chan struct{})}
	nodes := []*node{def, host}
	for _, n := range nodes {
		n.spec = buildSpec(n.plan, o, r.runID, r.image, r.now(), false)
	}
	runErr := r.runAll(nodes)

	for _, n := range nodes {
		if msg := strings.TrimSpace(n.m.CreateError + " " + n.m.Error); msg != "" {
			h.Errors = append(h.Errors, n.plan.Service+": "+msg)
		}
	}
	h.DefaultShmBytes, h.DefaultShmSource, h.DefaultShmFSType = def.m.MeasuredBytes, def.m.MountSource, def.m.FSType
	h.HostShmBytes, h.HostShmFreeBytes = host.m.MeasuredBytes, host.m.FreeBytes
	if def.inspect != nil && def.inspect.HostConfig != nil {
		h.DefaultIPCMode = string(def.inspect.HostConfig.IpcMode)
	}
	if def.report != nil {
		h.MemAvailableBytes = def.report.MemAvailableBytes
	}
	return h, runErr
}
