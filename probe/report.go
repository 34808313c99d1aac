package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// AgentReport is what the agent saw inside the container. It prints it as JSON: first
// without the write probe (event "measure"), at the end with it (event "report").
type AgentReport struct {
	// Path is the directory measured, /dev/shm.
	Path string `json:"path"`
	// Exists is false when there is no such directory (ipc: none).
	Exists bool `json:"exists"`
	// SizeBytes and FreeBytes come from statfs(2).
	SizeBytes *int64 `json:"size_bytes,omitempty"`
	FreeBytes *int64 `json:"free_bytes,omitempty"`
	// FSType is named from the statfs magic ("tmpfs"), else the mount's type.
	FSType string `json:"fs_type,omitempty"`
	// MountPoint, MountSource and MountOptions describe the mount that holds Path, from
	// /proc/self/mountinfo; options are the per-mount and superblock options together.
	MountPoint   string `json:"mount_point,omitempty"`
	MountSource  string `json:"mount_source,omitempty"`
	MountFSType  string `json:"mount_fs_type,omitempty"`
	MountOptions string `json:"mount_options,omitempty"`
	// Memlock and Stack are the soft limits: "unlimited" or bytes.
	Memlock     string `json:"memlock,omitempty"`
	MemlockHard string `json:"memlock_hard,omitempty"`
	Stack       string `json:"stack,omitempty"`
	StackHard   string `json:"stack_hard,omitempty"`
	// CgroupVersion is 1 or 2; CgroupMemoryBytes is the memory limit, nil when unlimited.
	CgroupVersion     int    `json:"cgroup_version,omitempty"`
	CgroupMemoryBytes *int64 `json:"cgroup_memory_bytes,omitempty"`
	// MemTotalBytes and MemAvailableBytes are what the kernel reports in /proc/meminfo:
	// the daemon host's memory, not the container's limit.
	MemTotalBytes     *int64 `json:"mem_total_bytes,omitempty"`
	MemAvailableBytes *int64 `json:"mem_available_bytes,omitempty"`
	// Write is the write probe's result as reported (see AgentMain for which mode is
	// reported); Writes lists every mode that ran, in order.
	Write  *analyze.Write  `json:"write,omitempty"`
	Writes []analyze.Write `json:"writes,omitempty"`
	// Errors lists what could not be measured.
	Errors []string `json:"errors,omitempty"`
}

// agentLine is one line of the agent's stdout.
type agentLine struct {
	Event  string       `json:"event"` // "measure", "progress", "report"
	Report *AgentReport `json:"report,omitempty"`
	Mode   string       `json:"mode,omitempty"`
	Bytes  int64        `json:"bytes,omitempty"`
	Target int64        `json:"target,omitempty"`
}

// AgentOutput is the agent's stdout, parsed.
type AgentOutput struct {
	// Report is the final report, or the "measure" report when the agent died before the end
	// (then Complete is false).
	Report   *AgentReport
	Complete bool
	// Progress is the furthest the write probe got: its mode, target and bytes.
	ProgressMode   string
	ProgressTarget int64
	ProgressBytes  int64
	// Other counts the lines that were not agent JSON (ignored).
	Other int
}

// ParseAgentOutput reads the agent's JSON lines. Lines that are not agent JSON are counted
// and skipped, so the output of a container that prints other things can be parsed too.
func ParseAgentOutput(r io.Reader) (*AgentOutput, error) {
	out := &AgentOutput{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		out.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading agent output: %w", err)
	}
	return out, nil
}

// add folds one line in and reports whether it was the final report.
func (o *AgentOutput) add(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		if len(line) > 0 {
			o.Other++
		}
		return false
	}
	var l agentLine
	if err := json.Unmarshal(line, &l); err != nil {
		o.Other++
		return false
	}
	switch l.Event {
	case "measure":
		if !o.Complete && l.Report != nil {
			o.Report = l.Report
		}
	case "progress":
		if l.Mode != o.ProgressMode {
			o.ProgressMode, o.ProgressBytes = l.Mode, 0
		}
		o.ProgressTarget = l.Target
		o.ProgressBytes = max(o.ProgressBytes, l.Bytes)
	case "report":
		if l.Report != nil {
			o.Report, o.Complete = l.Report, true
			return true
		}
	default:
		o.Other++
	}
	return false
}

// Measurement turns the agent's report into the Measurement the rules read.
func (r *AgentReport) Measurement() *analyze.Measurement {
	m := &analyze.Measurement{
		Exists:        r.Exists,
		MeasuredBytes: r.SizeBytes,
		FreeBytes:     r.FreeBytes,
		FSType:        r.FSType,
		MountSource:   r.MountSource,
		MountOptions:  r.MountOptions,
		Memlock:       r.Memlock,
		Stack:         r.Stack,
		CgroupMemory:  r.CgroupMemoryBytes,
		KernelMemory:  r.MemTotalBytes,
	}
	if r.Write != nil {
		w := *r.Write
		m.Write = &w
	}
	if len(r.Errors) > 0 {
		m.Error = "agent: " + strings.Join(r.Errors, "; ")
	}
	return m
}
