//go:build linux

package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/tail"
)

// Main is the hidden `shmdoctor agent ...` subcommand that runs inside the probe container;
// args are the arguments after "agent". It prints JSON lines on stdout (protocol.Line): a
// "measure" event with what /dev/shm is, "progress" events while the write probe runs, and a
// final "report" event. It returns the exit code.
//
// `agent watch` is the companion of `shmdoctor watch` (see watchMain).
//
// Flags: --protocol N (required: the doctor's protocol version; another than
// protocol.Version ends the agent with protocol.ExitProtocol before it measures), --target SIZE (write probe target, 0 disables it), --mode write|mmap|both,
// --max-share F (largest share of MemAvailable the write probe may use, default 0.5),
// --hold D (stay up this long after the report, so that IPC joiners can join), --budget D
// (time the write probe may take in all), --path, --deadline D (a hard limit: past it the
// agent stops its writer and exits 124, whatever it is doing), --mem-floor SIZE (the writer
// stops when the host's MemAvailable falls below it, default DefaultMemFloor) and --attached.
//
// With --attached, standard input is the doctor's attach stream: after the "measure" event the
// agent reads one grant line from it (protocol.Grant), which may lower the write target to
// what the run's memory budget has left, and it stops its writer and exits as soon as the
// stream ends, so that a doctor killed with SIGKILL leaves no writer running.
//
// The write probe runs in a child process (`<self> agent write ...`) that raises its own
// oom_score_adj, so that a memory-cgroup OOM kills the writer, not the agent: the agent then
// still reports how far the writer got. With --mode both (the default) the write(2) probe runs
// first; mmap runs only if write(2) reached the target, and the report carries the first mode
// that failed, else the mmap result (the path PyTorch DataLoader workers take).
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "write" {
		return writerMain(args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "watch" {
		return watchMain(args[1:], os.Stdin, stdout, stderr)
	}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	proto := fs.Int(protocol.Flag, 0, "the doctor's protocol version (required)")
	path := fs.String("path", "/dev/shm", "directory to measure and write into")
	targetFlag := fs.String("target", "0", "write probe target in bytes or as a size (512m); 0 disables the write probe")
	mode := fs.String("mode", "both", "write probe mode: write, mmap or both")
	share := fs.Float64("max-share", 0.5, "largest share of MemAvailable the write probe may use")
	hold := fs.Duration("hold", 0, "keep running this long after the report (IPC donors)")
	delay := fs.Duration("delay", 0, "wait this long before measuring (tests)")
	workers := fs.Int("workers", 0, "parallel writers in the write probe (default: CPUs, at most 4)")
	budget := fs.Duration("budget", 0, "time the write probe may take in all (0: no limit)")
	deadline := fs.Duration("deadline", 0, "hard limit: stop the writer and exit 124 after this long (0: none)")
	floorFlag := fs.String("mem-floor", strconv.FormatInt(DefaultMemFloor, 10), "the writer stops when MemAvailable falls below this")
	attached := fs.Bool("attached", false, "standard input is the doctor's attach stream: read the write grant from it, stop when it ends")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !checkProtocol(*proto, stderr) {
		return protocol.ExitProtocol
	}
	floor, err := analyze.ParseSize(*floorFlag)
	if err != nil {
		fmt.Fprintf(stderr, "agent: --mem-floor: %v\n", err)
		return 2
	}
	if *deadline > 0 {
		d := *deadline
		time.AfterFunc(d, func() { agentStop(stderr, 124, fmt.Sprintf("the deadline (%s) passed", d)) })
	}
	var grants <-chan protocol.Grant
	if *attached {
		grants = followStdin(os.Stdin, stderr)
	}
	target, err := analyze.ParseSize(*targetFlag)
	if err == nil && target < 0 {
		err = errors.New("negative size")
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent: --target: %v\n", err)
		return 2
	}
	if *mode != "write" && *mode != "mmap" && *mode != "both" {
		fmt.Fprintf(stderr, "agent: --mode %q: want write, mmap or both\n", *mode)
		return 2
	}
	var sigs chan os.Signal
	if *hold > 0 {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}
	if *delay > 0 {
		time.Sleep(*delay)
	}

	out := &lineWriter{w: stdout}
	rep := measure(*path)
	out.emit(protocol.Line{Protocol: protocol.Version, Event: protocol.EventMeasure, Report: rep})
	if target > 0 && rep.Exists && grants != nil {
		g, ok := <-grants
		if !ok {
			agentStop(stderr, 1, "standard input ended before the write grant")
		}
		target = min(target, max(g.Target, 0))
	}
	if target > 0 {
		rep.Write, rep.Writes = writeProbe(rep, target, *mode, *share, *workers, *budget, floor, out, stderr)
	} else if rep.Exists && grants != nil {
		rep.Write = &analyze.Write{Mode: *mode, Outcome: analyze.WriteSkipped, Reason: "no write budget left"}
	}
	out.emit(protocol.Line{Protocol: protocol.Version, Event: protocol.EventReport, Report: rep})

	if *hold > 0 {
		select {
		case <-time.After(*hold):
		case <-sigs:
		}
	}
	return 0
}

// lineWriter writes one JSON value per line; Encode issues a single Write per value.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) emit(v protocol.Line) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = json.NewEncoder(l.w).Encode(v)
}

// measure gathers everything the agent reports except the write probe.
func measure(path string) *protocol.Report {
	rep := &protocol.Report{Path: path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		rep.Exists = true
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		rep.Errors = append(rep.Errors, fmt.Sprintf("stat %s: %v", path, err))
	}

	mi, err := mountFor(path)
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	if rep.Exists {
		var s unix.Statfs_t
		if err := unix.Statfs(path, &s); err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("statfs %s: %v", path, err))
		} else {
			unit := s.Frsize
			if unit == 0 {
				unit = s.Bsize
			}
			size, free := int64(s.Blocks)*unit, int64(s.Bavail)*unit
			rep.SizeBytes, rep.FreeBytes = &size, &free
			rep.FSType = fsTypeName(int64(s.Type), mi)
		}
		if mi != nil {
			rep.MountPoint, rep.MountSource, rep.MountFSType, rep.MountOptions = mi.point, mi.source, mi.fstype, mi.options
		}
	}

	rep.Memlock, rep.MemlockHard = rlimit(unix.RLIMIT_MEMLOCK)
	rep.Stack, rep.StackHard = rlimit(unix.RLIMIT_STACK)

	cg := findCgroup()
	rep.CgroupVersion = cg.version
	if limit, err := cg.memoryLimit(); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	} else {
		rep.CgroupMemoryBytes = limit
	}

	total, avail, err := meminfo()
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	rep.MemTotalBytes, rep.MemAvailableBytes = total, avail
	return rep
}

func rlimit(resource int) (soft, hard string) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(resource, &rl); err != nil {
		return "", ""
	}
	f := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return strconv.FormatUint(v, 10)
	}
	return f(rl.Cur), f(rl.Max)
}

// Filesystem magics from linux/magic.h, for the types a /dev/shm can plausibly be.
var fsMagics = map[int64]string{
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0x794c7630: "overlay",
	0x65735546: "fuse",
	0xef53:     "ext4",
	0x58465342: "xfs",
	0x9123683e: "btrfs",
	0x2fc12fc1: "zfs",
	0x6969:     "nfs",
	0x01021997: "9p",
	0x62656572: "sysfs",
	0x9fa0:     "proc",
	0x1cd1:     "devpts",
}

func fsTypeName(magic int64, mi *mountInfo) string {
	name, ok := fsMagics[magic&0xffffffff]
	switch {
	case ok && name == "fuse" && mi != nil && mi.fstype != "":
		return mi.fstype // fuse.<subtype> says more than the magic
	case ok:
		return name
	case mi != nil && mi.fstype != "":
		return mi.fstype
	}
	return fmt.Sprintf("0x%x", magic)
}

type mountInfo struct {
	point, source, fstype, options string
}

// mountFor finds the mount that holds path in /proc/self/mountinfo: the longest mount point
// that contains it, the last one listed when mounts are stacked.
func mountFor(path string) (*mountInfo, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	defer f.Close()
	var best *mountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mi, ok := parseMountInfoLine(sc.Text())
		if !ok || !within(path, mi.point) {
			continue
		}
		if best == nil || len(mi.point) >= len(best.point) {
			best = mi
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	return best, nil
}

// parseMountInfoLine parses "36 35 98:0 /root /point rw,noatime master:1 - ext3 /dev/x rw,errors=continue".
func parseMountInfoLine(line string) (*mountInfo, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if len(fields) < 6 || sep < 0 || sep+3 > len(fields) {
		return nil, false
	}
	mi := &mountInfo{
		point:  unescapeMount(fields[4]),
		fstype: fields[sep+1],
		source: unescapeMount(fields[sep+2]),
	}
	opts := strings.Split(fields[5], ",")
	if sep+3 < len(fields) {
		// As /proc/mounts shows them: the per-mount ro/rw decides, the superblock's is dropped.
		for _, o := range strings.Split(fields[sep+3], ",") {
			if o != "ro" && o != "rw" {
				opts = append(opts, o)
			}
		}
	}
	seen := map[string]bool{}
	var merged []string
	for _, o := range opts {
		if o != "" && !seen[o] {
			seen[o] = true
			merged = append(merged, o)
		}
	}
	mi.options = strings.Join(merged, ",")
	return mi, true
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func within(path, point string) bool {
	if point == "/" {
		return true
	}
	return path == point || strings.HasPrefix(path, point+"/")
}

// cgroup is the memory cgroup directory of this process.
type cgroup struct {
	version int
	dir     string
}

func findCgroup() cgroup {
	self, _ := os.ReadFile("/proc/self/cgroup")
	var v1Path, v2Path string
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1Path = parts[2]
			}
		}
	}
	if fileExists("/sys/fs/cgroup/cgroup.controllers") {
		// With a private cgroup namespace the own cgroup is the root of the mount; with
		// the host's namespace it is the path /proc/self/cgroup names.
		for _, dir := range []string{filepath.Join("/sys/fs/cgroup", v2Path), "/sys/fs/cgroup"} {
			if fileExists(filepath.Join(dir, "memory.max")) {
				return cgroup{version: 2, dir: dir}
			}
		}
		return cgroup{version: 2}
	}
	for _, dir := range []string{filepath.Join("/sys/fs/cgroup/memory", v1Path), "/sys/fs/cgroup/memory"} {
		if fileExists(filepath.Join(dir, "memory.limit_in_bytes")) {
			return cgroup{version: 1, dir: dir}
		}
	}
	return cgroup{version: 1}
}

// memoryLimit is the cgroup memory limit, nil when unlimited.
func (c cgroup) memoryLimit() (*int64, error) {
	if c.dir == "" {
		return nil, nil
	}
	file := "memory.limit_in_bytes"
	if c.version == 2 {
		file = "memory.max"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return nil, fmt.Errorf("reading cgroup memory limit: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return nil, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// cgroup v1 writes "unlimited" as a page-aligned int64 max that still parses;
		// anything else is unexpected.
		return nil, fmt.Errorf("reading cgroup memory limit %q: %w", s, err)
	}
	if v >= 1<<62 {
		return nil, nil
	}
	return &v, nil
}

// oomKills is the cgroup's count of processes the OOM killer ended, -1 when unknown.
func (c cgroup) oomKills() int64 {
	if c.dir == "" {
		return -1
	}
	file := "memory.oom_control"
	if c.version == 2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

func meminfo() (total, avail *int64, err error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, nil, fmt.Errorf("reading meminfo: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "MemTotal" && key != "MemAvailable") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		v := kb << 10
		if key == "MemTotal" {
			total = &v
		} else {
			avail = &v
		}
	}
	return total, avail, nil
}

// writeProbe runs the write probe in child processes and returns the result to report and
// every mode that ran.
//
// A time budget bounds the whole probe: a mode the budget stops is reported as skipped, except
// the mmap leg after a successful write(2) leg, which then only adds a note to the result.
func writeProbe(rep *protocol.Report, target int64, mode string, share float64, workers int, budget time.Duration, floor int64, out *lineWriter, stderr io.Writer) (*analyze.Write, []analyze.Write) {
	if !rep.Exists {
		return &analyze.Write{Mode: mode, TargetBytes: target, Outcome: analyze.WriteSkipped, Reason: "no " + rep.Path}, nil
	}
	var capped string
	if rep.MemAvailableBytes != nil && share > 0 {
		limit := int64(float64(*rep.MemAvailableBytes) * share)
		limit -= limit % (1 << 20)
		if target > limit {
			capped = fmt.Sprintf("target %s capped at %.0f%% of the host's available memory (%s)",
				analyze.FormatSize(target), share*100, analyze.FormatSize(*rep.MemAvailableBytes))
			target = limit
		}
	}
	modes := []string{mode}
	if mode == "both" {
		modes = []string{"write", "mmap"}
	}
	deadline := time.Now().Add(budget)
	var all []analyze.Write
	var chosen analyze.Write
	for i, m := range modes {
		left := time.Until(deadline)
		if budget > 0 && left <= 0 {
			if i == 0 {
				chosen = analyze.Write{Mode: m, TargetBytes: target, Outcome: analyze.WriteSkipped,
					Reason: fmt.Sprintf("the time budget (%s) ran out before the write probe", budget)}
				all = append(all, chosen)
			} else {
				chosen.Reason = strings.Trim(chosen.Reason+"; no time budget left for the "+m+" mode", "; ")
			}
			break
		}
		if budget <= 0 {
			left = 0
		}
		w, stopped := runWriter(rep.Path, m, target, workers, left, floor, out, stderr)
		if capped != "" {
			w.Reason = strings.Trim(capped+"; "+w.Reason, "; ")
		}
		all = append(all, w)
		if i > 0 && stopped {
			chosen.Reason = strings.Trim(chosen.Reason+"; the "+m+" mode "+strings.TrimPrefix(w.Reason, capped+"; "), "; ")
			break
		}
		if i > 0 && w.Outcome == analyze.WriteOK {
			// Both modes reached the target: report write(2)'s throughput (mmap's page faults
			// measure the VM more than /dev/shm) and say that both ran.
			chosen.Mode = strings.Join(modes, "+")
			break
		}
		chosen = w
		if w.Outcome != analyze.WriteOK {
			break
		}
	}
	return &chosen, all
}

// writerLine is one line the writer child sends its parent on fd 3.
type writerLine struct {
	Bytes   int64                `json:"bytes"`
	Outcome analyze.WriteOutcome `json:"outcome,omitempty"`
	Nanos   int64                `json:"ns,omitempty"`
	Reason  string               `json:"reason,omitempty"`
	// Stopped: the time budget ended the writer before its target.
	Stopped bool `json:"stopped,omitempty"`
}

// runWriter re-executes the agent as `agent write` and follows its progress. The child may
// be killed at any time; the last progress it sent is what it reached.
//
// stopped reports that the time budget ended the writer before its target.
func runWriter(path, mode string, target int64, workers int, budget time.Duration, floor int64, out *lineWriter, stderr io.Writer) (w analyze.Write, stopped bool) {
	w = analyze.Write{Mode: mode, TargetBytes: target, Outcome: analyze.WriteSkipped}
	exe, err := os.Executable()
	if err != nil {
		w.Reason = "cannot find the agent's own executable: " + err.Error()
		return w, false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		w.Reason = "creating progress pipe: " + err.Error()
		return w, false
	}
	defer pr.Close()
	var errBuf tail.Buffer
	args := []string{"agent", "write", "--mode", mode, "--target", strconv.FormatInt(target, 10), "--path", path,
		"--mem-floor", strconv.FormatInt(floor, 10)}
	if workers > 0 {
		args = append(args, "--workers", strconv.Itoa(workers))
	}
	if budget > 0 {
		args = append(args, "--budget", budget.String())
	}
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Stderr = io.MultiWriter(stderr, &errBuf)
	// The writer dies with the agent, however the agent ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cg := findCgroup()
	oomBefore := cg.oomKills()
	start := time.Now()
	if err := startWriter(cmd); err != nil {
		pw.Close()
		w.Reason = "starting the writer: " + err.Error()
		return w, false
	}
	defer forgetWriter()
	pw.Close()

	var last writerLine
	var final *writerLine
	var emitted time.Time
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var l writerLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.Outcome != "" {
			final = &l
			continue
		}
		last = l
		if time.Since(emitted) >= 10*time.Millisecond {
			out.emit(protocol.Line{Protocol: protocol.Version, Event: protocol.EventProgress, Mode: mode, Target: target, Bytes: l.Bytes})
			emitted = time.Now()
		}
	}
	waitErr := cmd.Wait()
	elapsed := time.Since(start)
	if final != nil {
		last.Bytes = final.Bytes
	}
	out.emit(protocol.Line{Protocol: protocol.Version, Event: protocol.EventProgress, Mode: mode, Target: target, Bytes: last.Bytes})
	w.WrittenBytes = last.Bytes

	if final != nil && waitErr == nil {
		w.Outcome, w.Reason = final.Outcome, final.Reason
		w.GBps = gbps(final.Bytes, time.Duration(final.Nanos))
		return w, final.Stopped
	}
	w.GBps = gbps(last.Bytes, elapsed)
	var status syscall.WaitStatus
	if cmd.ProcessState != nil {
		status, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case status.Signaled() && status.Signal() == syscall.SIGKILL:
		w.Outcome = analyze.WriteOOMKilled
		if after := cg.oomKills(); oomBefore >= 0 && after > oomBefore {
			w.Reason = fmt.Sprintf("the OOM killer ended the writer after %s (cgroup oom_kill %d→%d)", analyze.FormatSize(last.Bytes), oomBefore, after)
		} else {
			w.Reason = fmt.Sprintf("the writer was killed (SIGKILL) after %s, most likely by the OOM killer", analyze.FormatSize(last.Bytes))
		}
	case status.Signaled() && status.Signal() == syscall.SIGBUS:
		w.Outcome = analyze.WriteSIGBUS
		w.Reason = "the writer died of SIGBUS"
	default:
		w.Reason = fmt.Sprintf("the writer failed (%v): %s", waitErr, errBuf.String())
	}
	return w, false
}

func gbps(n int64, d time.Duration) float64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	v := float64(n) / d.Seconds() / 1e9
	return float64(int64(v*1000+0.5)) / 1000
}

// The writer child running now, so that agentStop can end it from any goroutine.
var (
	writerMu   sync.Mutex
	writerProc *os.Process
	stopping   bool
)

// startWriter starts the writer unless the agent is stopping.
func startWriter(cmd *exec.Cmd) error {
	writerMu.Lock()
	defer writerMu.Unlock()
	if stopping {
		return errors.New("the agent is stopping")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	writerProc = cmd.Process
	return nil
}

func forgetWriter() {
	writerMu.Lock()
	writerProc = nil
	writerMu.Unlock()
}

// agentStop kills the writer, if one runs, and ends the agent with code: the doctor is gone
// (its attach stream ended) or the hard deadline passed. Nothing else may write after it.
func agentStop(stderr io.Writer, code int, why string) {
	writerMu.Lock()
	stopping = true
	if writerProc != nil {
		_ = writerProc.Kill()
	}
	writerMu.Unlock()
	fmt.Fprintf(stderr, "agent: stopping: %s\n", why)
	os.Exit(code)
}

// followStdin reads the doctor's attach stream: the first line is the write grant, sent on the
// channel; the end of the stream (the doctor closed it, or died) stops the agent.
func followStdin(stdin io.Reader, stderr io.Writer) <-chan protocol.Grant {
	grants := make(chan protocol.Grant, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		first := true
		for sc.Scan() {
			if !first {
				continue
			}
			var g protocol.Grant
			if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
				fmt.Fprintf(stderr, "agent: reading the write grant: %v\n", err)
				g.Target = 0
			} else if err := protocol.Check(g.Protocol, "doctor"); err != nil {
				// A grant this agent cannot read grants nothing.
				fmt.Fprintf(stderr, "agent: reading the write grant: %v\n", err)
				g.Target = 0
			}
			grants <- g
			first = false
		}
		agentStop(stderr, 1, "the doctor's attach stream ended")
	}()
	return grants
}

// checkProtocol reports whether the doctor speaks this agent's protocol, and says why not on
// stderr: an agent and a doctor of different versions would misread each other's lines.
func checkProtocol(got int, stderr io.Writer) bool {
	if got == 0 {
		fmt.Fprintf(stderr, "agent: no --%s: this agent speaks protocol %d and runs only for a doctor that names its own\n", protocol.Flag, protocol.Version)
		return false
	}
	if err := protocol.Check(got, "doctor"); err != nil {
		fmt.Fprintf(stderr, "agent: %v\n", err)
		return false
	}
	return true
}
