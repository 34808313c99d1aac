// Package protocol is what the doctor and the probe agent say to each other, in one place for
// both sides: the flag that names the version, the write grant the doctor sends on the agent's
// standard input, the JSON lines the agent prints (Line, Report) and the lines of its watch
// mode (WatchLine).
//
// The agent runs from a probe image that the engine may have cached long ago, so a doctor can
// meet an agent built from another version of this package. Both sides therefore carry
// Version: the doctor starts the agent with --protocol Version (Flag), and an agent of
// another version refuses to run (exit code ExitProtocol, with a message on stderr); every
// line the agent prints carries its own version, and the doctor refuses the lines of another
// version (Output.Err, WatchLine.Check). Change Version whenever a field changes meaning,
// appears or goes.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Version is the protocol this build speaks. Version 1 is the first versioned protocol: the
// agents before it print lines without a "protocol" field, which read as version 0.
const Version = 1

// Flag is the agent's flag that names the doctor's protocol: --protocol N.
const Flag = "protocol"

// ExitProtocol is the agent's exit code when the doctor speaks another protocol.
const ExitProtocol = 3

// Args is the flag to pass the agent, before its other flags.
func Args() []string { return []string{"--" + Flag, fmt.Sprint(Version)} }

// MismatchError says that the two sides speak different versions.
type MismatchError struct {
	// Got is the version the other side speaks (0: one from before versions); Side names
	// the other side, "agent" or "doctor".
	Got  int
	Side string
}

func (e *MismatchError) Error() string {
	if e.Side == "doctor" {
		return fmt.Sprintf("the doctor speaks agent protocol %d, this agent protocol %d: the probe image holds an agent of another version of shmdoctor; remove it with `shmdoctor probe --clean` and probe again", e.Got, Version)
	}
	return fmt.Sprintf("the agent speaks protocol %d, this doctor protocol %d: the probe image holds an agent of another version of shmdoctor; remove it with `shmdoctor probe --clean` and probe again", e.Got, Version)
}

// Check returns nil when got is Version, else a *MismatchError naming side, the side that
// speaks got.
func Check(got int, side string) error {
	if got == Version {
		return nil
	}
	return &MismatchError{Got: got, Side: side}
}

// Grant is the line the doctor sends a probe agent on its standard input once the agent has
// measured: the most the agent may write, what is left of the run's budget.
type Grant struct {
	Protocol int   `json:"protocol"`
	Target   int64 `json:"target"`
}

// Report is what the agent saw inside the container. It prints it as JSON: first without the
// write probe (event "measure"), at the end with it (event "report").
type Report struct {
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
	// Write is the write probe's result as reported (see the agent's Main for which mode is
	// reported); Writes lists every mode that ran, in order.
	Write  *analyze.Write  `json:"write,omitempty"`
	Writes []analyze.Write `json:"writes,omitempty"`
	// Errors lists what could not be measured.
	Errors []string `json:"errors,omitempty"`
}

// The events of a Line.
const (
	EventMeasure  = "measure"  // Report without the write probe
	EventProgress = "progress" // Mode, Target and Bytes: how far the write probe got
	EventReport   = "report"   // the final Report
)

// Line is one line of the agent's stdout.
type Line struct {
	Protocol int     `json:"protocol"`
	Event    string  `json:"event"`
	Report   *Report `json:"report,omitempty"`
	Mode     string  `json:"mode,omitempty"`
	Bytes    int64   `json:"bytes,omitempty"`
	Target   int64   `json:"target,omitempty"`
}

// Output is the agent's stdout, parsed.
type Output struct {
	// Report is the final report, or the "measure" report when the agent died before the end
	// (then Complete is false).
	Report   *Report
	Complete bool
	// Progress is the furthest the write probe got: its mode, target and bytes.
	ProgressMode   string
	ProgressTarget int64
	ProgressBytes  int64
	// Other counts the lines that were not agent JSON (ignored).
	Other int
	// Err is a *MismatchError when the agent's lines carry another protocol version: those
	// lines are not read.
	Err error
}

// ParseOutput reads the agent's JSON lines. Lines that are not agent JSON are counted and
// skipped, so the output of a container that prints other things can be parsed too.
func ParseOutput(r io.Reader) (*Output, error) {
	out := &Output{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		out.Add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading agent output: %w", err)
	}
	return out, nil
}

// ParseLine reads one agent line; ok is false for a line that is not agent JSON. A line of
// another version is returned with ok true and err set.
func ParseLine(line []byte) (l Line, ok bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return l, false, nil
	}
	if json.Unmarshal(line, &l) != nil {
		return l, false, nil
	}
	switch l.Event {
	case EventMeasure, EventProgress, EventReport:
	default:
		return l, false, nil
	}
	return l, true, Check(l.Protocol, "agent")
}

// Add folds one line in and reports whether it was the final report.
func (o *Output) Add(line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 {
		return false
	}
	l, ok, err := ParseLine(line)
	if !ok {
		o.Other++
		return false
	}
	if err != nil {
		if o.Err == nil {
			o.Err = err
		}
		return false
	}
	switch l.Event {
	case EventMeasure:
		if !o.Complete && l.Report != nil {
			o.Report = l.Report
		}
	case EventProgress:
		if l.Mode != o.ProgressMode {
			o.ProgressMode, o.ProgressBytes = l.Mode, 0
		}
		o.ProgressTarget = l.Target
		o.ProgressBytes = max(o.ProgressBytes, l.Bytes)
	case EventReport:
		if l.Report != nil {
			o.Report, o.Complete = l.Report, true
			return true
		}
	}
	return false
}

// Measurement turns the agent's report into the Measurement the rules read.
func (r *Report) Measurement() *analyze.Measurement {
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

// WatchLine is one line of `shmdoctor agent watch`: the filesystem's size and use at the end
// of an interval, and the highest use sampled during it.
type WatchLine struct {
	Protocol  int    `json:"protocol"`
	SizeBytes int64  `json:"size_bytes"`
	UsedBytes int64  `json:"used_bytes"`
	PeakBytes int64  `json:"peak_bytes"`
	Error     string `json:"error,omitempty"`
	// Rise marks a line written within an interval because use climbed above every peak
	// reported before: a container that ends before the interval's line (a workload killed
	// when /dev/shm fills) would otherwise take its peak with it. It is no sample of its own.
	Rise bool `json:"rise,omitempty"`
}

// Merge keeps the later sample and the higher peak; an error wins until a sample succeeds.
func (l WatchLine) Merge(s WatchLine) WatchLine {
	if s.Error != "" {
		return s
	}
	if l.Error == "" {
		s.PeakBytes = max(s.PeakBytes, l.PeakBytes)
	}
	return s
}

// Check returns nil when the line is of this version, else a *MismatchError.
func (l WatchLine) Check() error { return Check(l.Protocol, "agent") }
