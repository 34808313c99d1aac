package analyze

import (
	"fmt"
	"slices"
	"strings"
)

// Use is what a container's workload does with /dev/shm, read from the parameters it runs
// with: whether it passes data through it at all, how much it writes when its parameters
// say so, what happens when /dev/shm is short, and what each of those rests on.
//
// A Use never holds a number it cannot back: where the parameters that decide the size are
// not known (a model's size, the rows of a join, a flag in a shell variable), Need is 0 and
// Unknown says why.
type Use struct {
	// Workload is the program that was recognised: "vLLM", "PostgreSQL".
	Workload string
	// None is true when the parameters say it passes nothing through /dev/shm beyond what
	// the default holds (one process on one device, shared memory turned off); Why says which.
	None bool
	// Need is the /dev/shm the parameters imply, in bytes; 0 when not known.
	Need int64
	// Formula is how Need was reached, in words and numbers: "2 channels × 7 connections ×
	// 9,637,888 bytes". Unknown says what decides the size when Need is 0.
	Formula, Unknown string
	// Why is the reason for None.
	Why string
	// Failure is what happens when /dev/shm is too small for it.
	Failure Failure
	// Sources are the documentation and lab measurements behind the formula.
	Sources []NeedSource
	// Evidence is what the use was read from: "image vllm/vllm-openai",
	// "--tensor-parallel-size 4 in the command", "NCCL_SHM_DISABLE=1 in the environment".
	Evidence []string
}

// Failure is what a workload does when its /dev/shm is full.
type Failure int

const (
	// Crashes: a Bus error, ENOSPC, an OOM kill or a failed NCCL initialisation; a finding on
	// it is a warning.
	Crashes Failure = iota
	// Slows: the workload falls back to slower storage and goes on; a finding on it is info.
	Slows
)

// NeedSource is a publication or a lab measurement a formula rests on.
type NeedSource struct {
	Name string // "NCCL User Guide: Troubleshooting (shared memory)"
	URL  string // public page, or the repository's own docs/lab.md
}

// Uses reports whether the workload passes data through /dev/shm.
func (u *Use) Uses() bool { return u != nil && !u.None }

// Sized reports whether its parameters give how much.
func (u *Use) Sized() bool { return u.Uses() && u.Need > 0 }

// Read says what the use was read from, for a message: "read from image x, --tp 4".
func (u *Use) Read() string {
	if u == nil || len(u.Evidence) == 0 {
		return ""
	}
	return "read from " + strings.Join(u.Evidence, ", ")
}

// Cite names the use's sources for a message, shortly: "vLLM source; NCCL User Guide"
// (docs/needs.md and the JSON report give them in full, with their links).
func (u *Use) Cite() string {
	var names []string
	for _, s := range u.Sources {
		name, _, _ := strings.Cut(s.Name, ":")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, "; ")
}

// Describe is the sentence a finding prints about the use: its need and formula with the
// sources, or that it uses /dev/shm in amounts its parameters do not give.
func (u *Use) Describe() string {
	var b strings.Builder
	switch {
	case u.Sized():
		fmt.Fprintf(&b, "%s needs %s: %s", u.Workload, FormatSize(u.Need), u.Formula)
	case u.Uses():
		fmt.Fprintf(&b, "%s uses /dev/shm, and its parameters do not give how much: %s", u.Workload, u.Unknown)
	default:
		fmt.Fprintf(&b, "%s needs no more than the default: %s", u.Workload, u.Why)
	}
	if c := u.Cite(); c != "" && u.Sized() {
		b.WriteString(" (" + c + ")")
	}
	if r := u.Read(); r != "" {
		b.WriteString("; " + r)
	}
	return b.String()
}

// nccl is NCCL's SHM transport between ranks of one container: each receiving connection
// holds one segment of the three protocols' buffers, LL (524,288 bytes), LL128 (4,915,200)
// and SIMPLE (NCCL_BUFFSIZE, 4 MiB by default), plus a 4,096-byte header: 9,637,888 bytes,
// the size NCCL's own error names. On each channel a rank receives from the rank before it
// in the ring and, up the tree (a chain within a node), from the one after it; with two
// ranks those are the same peer. So n ranks hold 2n-1 receiving connections a channel (2
// with two ranks), and NCCL opens 2 channels where ranks talk through host memory.
const (
	ncclSegment  = 524288 + 4915200 + 4194304 + 4096
	ncclChannels = 2
)

var (
	srcNCCL = NeedSource{"NCCL User Guide: Troubleshooting, shared memory",
		"https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html#shared-memory"}
	srcNCCLCode = NeedSource{"NCCL source: src/transport/shm.cc (shmRecvSetup) and src/init.cc (computeBuffSizes)",
		"https://github.com/NVIDIA/nccl/blob/master/src/transport/shm.cc"}
)

// ncclUse is what n ranks of one container hold in /dev/shm through NCCL's SHM transport,
// with NCCL_BUFFSIZE read from the environment; nil when NCCL_SHM_DISABLE turns it off.
func ncclUse(n int, inv Invocation) (int64, string, []string) {
	if p := inv.Var("NCCL_SHM_DISABLE"); p.Bool() {
		return 0, "", []string{p.From}
	}
	seg, buff := int64(ncclSegment), "4 MiB"
	var ev []string
	if p := inv.Var("NCCL_BUFFSIZE"); p.Set {
		if b, ok := p.Int(); ok && b > 0 {
			seg, buff = seg-4194304+int64(b), FormatSize(int64(b))
			ev = append(ev, p.From)
		}
	}
	conns := 2*n - 1
	if n == 2 {
		conns = 2
	}
	need := int64(ncclChannels*conns) * seg
	formula := fmt.Sprintf("NCCL between %d ranks: %d channels × %d connections × %s B (LL, LL128, %s SIMPLE buffers, header) = %s",
		n, ncclChannels, conns, groupDigits(seg), buff, FormatSize(need))
	return need, formula, ev
}

// groupDigits writes n with thousands separators: 9,637,888.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// NeedSources lists every source a need formula rests on, for the rule docs.
func NeedSources() []NeedSource {
	return []NeedSource{
		srcNCCL, srcNCCLCode, srcVLLM, srcSGLang,
		{"Hugging Face text-generation-inference README: A note on Shared Memory (shm)", "https://github.com/huggingface/text-generation-inference#a-note-on-shared-memory-shm"},
		{"NVIDIA NIM for LLMs documentation: Getting Started", "https://docs.nvidia.com/nim/large-language-models/1.8.0/getting-started.html"},
		srcRay, srcTorchrun, srcDeepSpeed, srcPostgres, srcChromium,
		{"Triton Inference Server: Python backend, managing shared memory", "https://github.com/triton-inference-server/python_backend#managing-shared-memory"},
		{"the project's truth lab: docs/lab.md", "https://github.com/shmdoctor/shmdoctor/blob/main/docs/lab.md"},
	}
}
