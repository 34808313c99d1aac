// Package agent is the probe agent: the hidden `shmdoctor agent` subcommand that runs inside
// the probe container (and, as `agent watch`, inside the companion of `shmdoctor watch`).
// It is its own process on Linux, with no Docker client: it reads /dev/shm, the cgroup and
// /proc, runs the write probe in a child process, and speaks to the doctor only through
// package protocol (the write grant on its standard input, JSON lines on its standard
// output).
//
// The agent's write probe writes into unlinked files in /dev/shm from a child process (a
// re-exec of the agent), so nothing is left behind even when the kernel kills the writer, and
// it streams its progress so that an OOM kill still tells how far it got.
//
// The binary that contains the agent must dispatch `<binary> agent ARGS...` to
// Main(ARGS, os.Stdout, os.Stderr): the agent re-executes itself that way.
package agent

// DefaultMemFloor is the host's MemAvailable below which the writer stops, whatever its
// target: the writers read /proc/meminfo before the first 1 MiB chunk and again every few
// milliseconds (memCheckEvery), so that several doctors probing one host at once, or a
// workload growing meanwhile, stop the write probes here rather than at the OOM killer. The
// agent's --mem-floor overrides it.
const DefaultMemFloor int64 = 1 << 30
