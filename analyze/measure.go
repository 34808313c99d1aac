package analyze

// Measurement is what the probe saw of one service's /dev/shm in a throwaway container.
// The probe fills it; the SHM2xx rules compare it with the ShmPlan.
type Measurement struct {
	// Exists is false when the container has no /dev/shm (ipc: none).
	Exists        bool   `json:"exists"`
	MeasuredBytes *int64 `json:"measured_bytes"`
	FreeBytes     *int64 `json:"free_bytes"`
	FSType        string `json:"fs_type,omitempty"`
	MountSource   string `json:"mount_source,omitempty"`
	MountOptions  string `json:"mount_options,omitempty"`
	Write         *Write `json:"write,omitempty"`
	Memlock       string `json:"memlock,omitempty"` // "unlimited" or bytes, soft limit
	Stack         string `json:"stack,omitempty"`
	CgroupMemory  *int64 `json:"cgroup_memory_bytes,omitempty"`
	KernelMemory  *int64 `json:"kernel_memory_bytes,omitempty"`
	// CreateError is Docker's own message when the container could not be created or started
	// with the service's settings (SHM205).
	CreateError string `json:"create_error,omitempty"`
	// Error is any other failure of the probe for this service.
	Error string `json:"error,omitempty"`
	// Omitted lists the service settings the probe did not copy, and why.
	Omitted []string `json:"omitted,omitempty"`
}

// WriteOutcome is how the write probe ended.
type WriteOutcome string

// Write probe outcomes.
const (
	WriteOK        WriteOutcome = "ok"
	WriteENOSPC    WriteOutcome = "enospc"
	WriteSIGBUS    WriteOutcome = "sigbus"
	WriteOOMKilled WriteOutcome = "oom_killed"
	WriteSkipped   WriteOutcome = "skipped"
)

// Write is the result of the bounded write probe.
type Write struct {
	Mode         string       `json:"mode,omitempty"` // "write", "mmap", or "write+mmap" when both reached the target
	TargetBytes  int64        `json:"target_bytes"`
	WrittenBytes int64        `json:"written_bytes"`
	Outcome      WriteOutcome `json:"outcome"`
	GBps         float64      `json:"gbps"`
	// Reason says why the probe was skipped or capped.
	Reason string `json:"reason,omitempty"`
	// BudgetCapped is true when the run's memory budget, shared by every service of the
	// run, lowered the target: an "ok" then says the lower target fitted, not the service's.
	BudgetCapped bool `json:"budget_capped,omitempty"`
}
