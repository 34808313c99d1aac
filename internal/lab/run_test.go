//go:build lab

package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// images are the lab's images: name, then the Debian packages in it.
var images = map[string][]string{
	"torch":    {"python3-torch", "python3-numpy"},
	"postgres": {"postgresql-15"},
}

// maxRun bounds one workload: the slowest, a PostgreSQL join of two 3M-row tables, takes
// about half a minute on two shared cores.
const maxRun = 5 * time.Minute

type result struct {
	*Scenario
	Fails      bool
	Rules      []string
	Probe      string
	Real       string
	ExitCode   int
	Line       string // the workload's telling log line
	Need       *int64
	Peak       *int64
	HostShm    bool
	Agrees     bool
	AsExpected bool
	Took       time.Duration
}

// TestLab builds the lab's images where they are missing, runs every stack of testdata/lab
// against the engine, prints the agreement table and writes docs/lab.md. It fails when the
// doctor's verdict disagrees with the real outcome, when a stack's real outcome is not the
// one it was built to show, or when the DataLoader estimate is below a real peak or more
// than 15% above it.
func TestLab(t *testing.T) {
	start, loadBefore := time.Now(), loadAverage()
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shmBefore := shmEntries(t)

	tags, builds := buildImages(t, root)
	doctor := buildDoctor(t, root)
	env := append(os.Environ(), "LAB_TORCH_IMAGE="+tags["torch"], "LAB_POSTGRES_IMAGE="+tags["postgres"])

	dirs, err := filepath.Glob(filepath.Join(root, "testdata", "lab", "*", "compose.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no lab stacks under testdata/lab: %v", err)
	}
	sort.Strings(dirs)
	// LAB_ONLY, a regular expression, runs only the stacks whose names it matches, and leaves
	// docs/lab.md alone: a partial run is no record of the lab.
	only := regexp.MustCompile(os.Getenv("LAB_ONLY"))
	run := strconv.Itoa(os.Getpid())
	var results []*result
	for _, f := range dirs {
		dir := filepath.Dir(f)
		if !only.MatchString(filepath.Base(dir)) {
			continue
		}
		s, err := ReadScenario(filepath.Base(dir), dir)
		if err != nil {
			t.Fatal(err)
		}
		r := &result{Scenario: s}
		results = append(results, r)
		t.Run(s.Name, func(t *testing.T) { runScenario(t, doctor, env, "shmlab"+run+strings.ReplaceAll(s.Name, "-", ""), r) })
	}

	if len(results) == 0 {
		t.Fatalf("LAB_ONLY %q matches no stack of testdata/lab", os.Getenv("LAB_ONLY"))
	}
	table := agreementTable(results)
	fmt.Println(table)
	if shmAfter := shmEntries(t); len(shmAfter) > 0 {
		for name := range shmAfter {
			if !shmBefore[name] && leftByLab.MatchString(name) {
				t.Errorf("left in /dev/shm: %s", name)
			}
		}
	}
	if os.Getenv("LAB_ONLY") == "" {
		doc := labDoc(t, root, tags, builds, results, table, time.Since(start), loadBefore+" when it began, "+loadAverage()+" when it ended")
		if err := os.WriteFile(filepath.Join(root, "docs", "lab.md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range results {
		if !r.Agrees {
			t.Errorf("%s: the doctor says %s, the workload %s", r.Name, verdictWord(r.Fails), r.Real)
		}
		if !r.AsExpected {
			t.Errorf("%s: the workload's outcome is %s, the stack is built to show %s", r.Name, r.Real, r.Expect)
		}
		if ratio, ok := needRatio(r); ok && (ratio < 1 || ratio > 1.15) {
			t.Errorf("%s: the DataLoader need is %.3f× the measured peak, want 1 to 1.15", r.Name, ratio)
		}
	}
}

// leftByLab matches what the lab's workloads would leave in the host's /dev/shm under
// ipc: host: PyTorch's torch_*, multiprocessing's semaphores, PostgreSQL's segments.
var leftByLab = regexp.MustCompile(`^(torch_|sem\.mp-|PostgreSQL\.)`)

func shmEntries(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// buildImages runs scripts/lab/build-image.sh for every image at once (it does nothing
// for an image whose tag exists) and returns the tags and what each build said.
func buildImages(t *testing.T, root string) (map[string]string, map[string]string) {
	t.Helper()
	tags, said := map[string]string{}, map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []string
	for name, pkgs := range images {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(root, "scripts", "lab", "build-image.sh"), append([]string{name}, pkgs...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			started := time.Now()
			err := cmd.Run()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("building the %s image: %v\n%s", name, err, stderr.String()))
				return
			}
			tags[name] = strings.TrimSpace(stdout.String())
			msg := "reused"
			if strings.Contains(stderr.String(), "built ") {
				msg = fmt.Sprintf("built in %s", time.Since(started).Round(time.Second))
			}
			said[name] = msg
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	return tags, said
}

func buildDoctor(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shmdoctor")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/shmdoctor")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the doctor: %v\n%s", err, out)
	}
	return bin
}

// runScenario runs the doctor (static rules and probe), then the real workload under
// shmdoctor watch, and fills r. The project is removed with its volumes on every path.
func runScenario(t *testing.T, doctor string, env []string, project string, r *result) {
	began := time.Now()
	defer func() { r.Took = time.Since(began) }()
	compose := filepath.Join(r.Dir, "compose.yaml")

	// The doctor: static verdict and probe outcome.
	out, code := command(t, env, doctor, "--format", "json", "--probe", "always", "--probe-timeout", "120s", r.Dir)
	if code > 1 {
		t.Fatalf("shmdoctor exited %d:\n%s", code, out)
	}
	var report struct {
		Projects []struct {
			Services []struct {
				Name string `json:"name"`
				Shm  struct {
					NeedBytes *int64 `json:"need_bytes"`
				} `json:"shm"`
				Probe *struct {
					Write struct {
						Outcome string `json:"outcome"`
					} `json:"write"`
				} `json:"probe"`
			} `json:"services"`
			Findings []Finding `json:"findings"`
		} `json:"projects"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Projects) != 1 {
		t.Fatalf("reading the doctor's JSON: %v\n%s", err, out)
	}
	p := report.Projects[0]
	r.Fails, r.Rules = Verdict(p.Findings, r.Service)
	for _, s := range p.Services {
		if s.Name == r.Service {
			r.Need = s.Shm.NeedBytes
			if s.Probe != nil {
				r.Probe = s.Probe.Write.Outcome
			}
		}
	}

	// The real workload, watched from before it starts.
	dc := func(args ...string) (string, int) {
		return command(t, env, "docker-compose", append([]string{"-p", project, "-f", compose}, args...)...)
	}
	t.Cleanup(func() {
		if out, code := dc("down", "-v", "--remove-orphans"); code != 0 {
			t.Errorf("docker-compose down: %s", out)
		}
	})
	if out, code := dc("up", "--no-start"); code != 0 {
		t.Fatalf("docker-compose up --no-start: %s", out)
	}
	watch := exec.Command(doctor, "watch", "-p", project, "-f", compose, "--format", "json", "--interval", "250ms")
	watch.Env = env
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var watchErr bytes.Buffer
	watch.Stderr = &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	stopWatch := func() string {
		_ = watch.Process.Signal(syscall.SIGINT)
		last := ""
		for l := range lines {
			last = l
		}
		_ = watch.Wait()
		return last
	}
	if _, ok := <-lines; !ok { // the first sample: watch is looking before the workload starts
		_ = watch.Wait()
		t.Fatalf("shmdoctor watch ended before its first sample: %s", watchErr.String())
	}
	if out, code := dc("start"); code != 0 {
		stopWatch()
		t.Fatalf("docker-compose start: %s", out)
	}
	id, _ := dc("ps", "-q", r.Service)
	id = strings.TrimSpace(id)
	ctx, cancel := context.WithTimeout(context.Background(), maxRun)
	defer cancel()
	waited, _ := exec.CommandContext(ctx, "docker", "wait", id).Output()
	timedOut := ctx.Err() != nil
	summary := stopWatch()

	state, _ := command(t, env, "docker", "inspect", "-f", "{{.State.ExitCode}} {{.State.OOMKilled}}", id)
	var exit int
	var oom bool
	fmt.Sscanf(strings.TrimSpace(state), "%d %t", &exit, &oom)
	if w, err := strconv.Atoi(strings.TrimSpace(string(waited))); err == nil {
		exit = w
	}
	logs, _ := command(t, env, "docker", "logs", id)
	r.ExitCode = exit
	r.Real = Classify(exit, oom, logs)
	if timedOut {
		r.Real = Timeout
	}
	r.Line = tellingLine(logs, r.Real)

	var sum struct {
		Type       string `json:"type"`
		Containers []struct {
			Service   string `json:"service"`
			PeakBytes *int64 `json:"peak_bytes"`
			Method    string `json:"method"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(summary), &sum); err != nil || sum.Type != "summary" {
		t.Fatalf("reading watch's summary: %v\n%s\n%s", err, summary, watchErr.String())
	}
	for _, c := range sum.Containers {
		if c.Service == r.Service {
			r.Peak = c.PeakBytes
		}
	}
	r.HostShm = strings.Contains(readFile(t, compose), "ipc: host")
	r.Agrees = r.Fails == Failed(r.Real)
	r.AsExpected = r.Real == r.Expect
	t.Logf("%s: doctor %s %v, probe %s, real %s (exit %d) %s", r.Name, verdictWord(r.Fails), r.Rules, r.Probe, r.Real, r.ExitCode, r.Line)
}

func command(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("%s: %v", name, err)
	}
	return string(out), 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tellingLine is the log line that shows the outcome: the error, or the workload's own
// first line (its versions and settings) when it passed.
func tellingLine(logs, outcome string) string {
	var first string
	for _, l := range strings.Split(logs, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if first == "" && (strings.HasPrefix(l, "torch ") || strings.HasPrefix(l, "postgres ")) {
			first = l
		}
		if outcome != Pass && (busError.MatchString(l) || noSpace.MatchString(l)) {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return l
		}
	}
	return first
}

func verdictWord(fails bool) string {
	if fails {
		return "fails"
	}
	return "passes"
}

// needRatio is the DataLoader need over the measured peak, for a loader that ran to its end
// on its own /dev/shm (a crashed run never reached its peak; the host's /dev/shm counts
// other processes too).
func needRatio(r *result) (float64, bool) {
	if r.Loader == nil || r.Need == nil || r.Peak == nil || *r.Peak == 0 || r.Real != Pass || r.HostShm {
		return 0, false
	}
	return float64(*r.Need) / float64(*r.Peak), true
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func agreementTable(results []*result) string {
	var b strings.Builder
	b.WriteString("| scenario | doctor | probe | real outcome | agrees | watch peak | need | need / peak (before → after) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		doctor := verdictWord(r.Fails)
		if len(r.Rules) > 0 {
			doctor += " (" + strings.Join(r.Rules, ", ") + ")"
		}
		probe := r.Probe
		if probe == "" {
			probe = "-"
		}
		peak, need, ratio := "-", "-", "-"
		if r.Peak != nil {
			peak = mib(*r.Peak)
			if r.HostShm {
				peak += " (host's)"
			}
		}
		if r.Need != nil {
			need = mib(*r.Need)
		}
		if after, ok := needRatio(r); ok {
			ratio = fmt.Sprintf("%.3f → %.3f", float64(r.Loader.OldNeed())/float64(*r.Peak), after)
		}
		agree := "yes"
		if !r.Agrees {
			agree = "**no**"
		}
		real := r.Real
		if r.Real != Pass {
			real += fmt.Sprintf(" (exit %d)", r.ExitCode)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, doctor, probe, real, agree, peak, need, ratio)
	}
	return b.String()
}

func labDoc(t *testing.T, root string, tags, builds map[string]string, results []*result, table string, took time.Duration, load string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The truth lab\n\n")
	b.WriteString("`make lab` runs real workloads in the compose stacks of [testdata/lab](../testdata/lab) on the " +
		"Docker Engine and sets the doctor's verdict beside what really happens. The images are built " +
		"locally from Debian packages (`scripts/lab/build-image.sh`: mmdebstrap from the machine's own apt " +
		"sources, then `docker import`, tagged by a hash of the package list and the script). For each " +
		"stack: the doctor's verdict (`shmdoctor --probe always --format json`: the rules that say `/dev/shm` " +
		"will not hold the workload), the probe's write outcome, the workload's real outcome (its exit " +
		"code, the engine's OOM flag and its logs), and `shmdoctor watch`'s measured peak (agent method, " +
		"50 ms samples) against the doctor's need estimate. `make lab` fails when a verdict disagrees with " +
		"the real outcome, when a stack does not show the outcome it is built for, or when a DataLoader " +
		"estimate is below the real peak or more than 15% above it. This page is written by the last run of every " +
		"stack (`LAB_ONLY=REGEXP make lab` runs only the stacks it matches and leaves this page alone).\n\n")

	agree, falseAlarms, missed := 0, 0, 0
	worstBefore, worstAfter := 0.0, 0.0
	lowBefore, lowAfter := 0.0, 0.0
	for _, r := range results {
		switch {
		case r.Agrees:
			agree++
		case r.Fails:
			falseAlarms++
		default:
			missed++
		}
		if after, ok := needRatio(r); ok {
			before := float64(r.Loader.OldNeed()) / float64(*r.Peak)
			if lowBefore == 0 || before < lowBefore {
				lowBefore = before
			}
			if lowAfter == 0 || after < lowAfter {
				lowAfter = after
			}
			worstBefore, worstAfter = max(worstBefore, before), max(worstAfter, after)
		}
	}
	fmt.Fprintf(&b, "## Result\n\n%d scenarios, %d agreements, %d false alarms, %d missed failures. "+
		"DataLoader need / measured peak over the stacks that ran to their end: %.3f to %.3f with the formula "+
		"before the lab, (workers × prefetch + 1) × batch; %.3f to %.3f with the calibrated one. Whole run: %s.\n\n",
		len(results), agree, falseAlarms, missed, lowBefore, worstBefore, lowAfter, worstAfter, took.Round(time.Second))
	b.WriteString(table)
	b.WriteString("\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- **%s**: %s", r.Name, r.Note)
		if r.Line != "" {
			fmt.Fprintf(&b, " — `%s`", strings.ReplaceAll(r.Line, "`", "'"))
		}
		fmt.Fprintf(&b, " (%s)\n", r.Took.Round(time.Second))
	}

	b.WriteString("\n## What the lab established\n\n" +
		"- **DataLoader** (`analyze/compose/intent.go`): the need is (workers × prefetch_factor + 2.5) × batch, one batch " +
		"less with `persistent_workers` or with workers started by `forkserver` or `spawn`. The batches in flight, plus " +
		"the batch the training loop holds while the next arrives, plus half of one being written while the loop " +
		"still holds the one before, plus, without persistent workers and with forked workers (`fork`, Linux's " +
		"default before Python 3.14), the last batch of an epoch: the next epoch's workers are forked while the " +
		"loop holds it, map it (their `/proc/PID/maps` show its deleted `/dev/shm/torch_*` file) and keep it in " +
		"`/dev/shm` until they end. Workers started by `forkserver` map none of the loop's batches: `dl-forkserver` " +
		"runs at 232m, where the same loader with forked workers dies, and the estimate without `start_method` " +
		"is one batch high for it. The lab's loader (`testdata/lab/loader.py`) holds the workers' pace: before " +
		"each step the training loop waits until every batch it has asked for is written, so the queues are full " +
		"at every step on a loaded machine as on a quiet one (a loop that only slept between steps left them " +
		"half empty on two cores at load 10: the stacks built to die below the peak passed). `pin_memory` does not enter it: without CUDA PyTorch " +
		"turns it off (`dl-pin-persistent` peaks as the same loader without it would); with CUDA the loop's batch " +
		"is a pinned copy outside `/dev/shm`, and the estimate is one batch high. The formula before the lab, " +
		"(workers × prefetch + 1) × batch, is below the real peak of every loader that runs two epochs.\n" +
		"- **PostgreSQL** (`analyze/workload.go`): a parallel hash join keeps its shared hash table in dynamic " +
		"shared memory in `/dev/shm`; it grows with the inner table (about 52 MiB per million rows of two " +
		"integers) and fails with `could not resize shared memory segment ... No space left on device` when it " +
		"does not fit. No setting gives its size, so the doctor claims none: the stacks declare the peak " +
		"`shmdoctor watch` measured (`x-shmdoctor.need: 160MiB`), as its finding tells a user to, and the " +
		"lab checks the verdicts on that need: the join of two 3M-row tables fails at the postgres image's own " +
		"128mb example and on the default, and passes at the 256m the doctor then advises. With a small work_mem " +
		"the join runs in batches and fits the default; a declared need that fits 64 MiB keeps SHM010 silent.\n" +
		"- **Chromium**: not in the lab, because its failure did not reproduce here. Tried once with Debian's " +
		"Chromium 156 on the 64 MiB default, headless, a 1920×20000 screenshot of a page with eight 4096² canvases " +
		"and twenty iframes holding 3000² canvases: Debian's `chromium` wrapper (which adds " +
		"`--disable-dev-shm-usage` when `/dev/shm` has less than 3.8 GB free, `/etc/chromium.d/dev-shm`) and the " +
		"bare `/usr/lib/chromium/chromium` both finished and wrote the screenshot, with no crash: Chromium 156 " +
		"keeps its shared memory in memfd, and the doctor claims no need for it (docs/needs.md).\n\n")

	b.WriteString("## Versions and machine\n\n")
	info, _ := command(t, os.Environ(), "docker", "info", "-f",
		"Docker Engine {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}} ({{.CgroupDriver}}), kernel {{.KernelVersion}}, {{.OperatingSystem}}, {{.NCPU}} CPUs, {{.MemTotal}} bytes of memory")
	fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(info))
	fmt.Fprintf(&b, "- host: %d CPUs (nproc), MemTotal %s, %s/%s; load average over a minute %s\n", runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, load)
	for _, r := range results {
		if r.Real == Pass && strings.HasPrefix(r.Line, "torch ") {
			fmt.Fprintf(&b, "- PyTorch: Debian's python3-torch, `%s`\n", strings.SplitN(r.Line, ":", 2)[0])
			break
		}
	}
	for _, r := range results {
		if strings.HasPrefix(r.Line, "postgres ") {
			fmt.Fprintf(&b, "- PostgreSQL: Debian's postgresql-15, `%s`\n", strings.SplitN(r.Line, ":", 2)[0])
			break
		}
	}
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		size, _ := command(t, os.Environ(), "docker", "image", "inspect", "-f", "{{.Size}}", tags[n])
		bytes, _ := strconv.ParseInt(strings.TrimSpace(size), 10, 64)
		fmt.Fprintf(&b, "- image `%s`: %s (%s this run), packages %s\n", tags[n], mib(bytes), builds[n], strings.Join(images[n], ", "))
	}
	return b.String()
}

// loadAverage is the host's load average over the last minute, as /proc/loadavg says it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, "MemTotal:")), " ")
		}
	}
	return "unknown"
}
