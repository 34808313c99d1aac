//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

var (
	// bin is the doctor under test: SHMDOCTOR_BIN, else bin/shmdoctor (make build).
	bin string
	// runs is how many times each fault is injected: FAULTS_N, default 3.
	runs = 3
	// grace is what the doctor may take past --probe-timeout to remove its containers and
	// report (FAULTS_GRACE overrides it).
	grace = 10 * time.Second
	// d is the private daemon every row runs against.
	d *daemon
	// shmBefore are the names in the host's /dev/shm when the suite started.
	shmBefore map[string]bool
)

func TestMain(m *testing.M) {
	os.Exit(mainCode(m))
}

func mainCode(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "faults: the fault suite starts its own dockerd: run it as root (make faults)")
		return 1
	}
	if v := os.Getenv("FAULTS_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "faults: FAULTS_N=%q: want a number of runs, 1 or more\n", v)
			return 1
		}
		runs = n
	}
	if v := os.Getenv("FAULTS_GRACE"); v != "" {
		g, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "faults: FAULTS_GRACE=%q: %v\n", v, err)
			return 1
		}
		grace = g
	}
	bin = os.Getenv("SHMDOCTOR_BIN")
	if bin == "" {
		root, err := testutil.ModuleRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			return 1
		}
		bin = filepath.Join(root, "bin", "shmdoctor")
	}
	if _, err := os.Stat(bin); err != nil {
		fmt.Fprintf(os.Stderr, "faults: the doctor to test is missing (make build): %v\n", err)
		return 1
	}
	for _, tool := range []string{"unshare", "nsenter", "ip", "dockerd", "containerd", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "faults: %s is needed (apt-get install util-linux iproute2 docker.io): %v\n", tool, err)
			return 1
		}
	}
	shmBefore = shmNames()
	// The machine's engine must not notice the suite: its bridge is the first thing a
	// private dockerd in the host's network namespace would take away.
	_, bridgeErr := net.InterfaceByName("docker0")

	var err error
	d, err = newDaemon()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults: starting the private dockerd:", err)
		if d != nil {
			if rerr := d.remove(); rerr != nil {
				fmt.Fprintln(os.Stderr, "faults: removing the private dockerd:", rerr)
			}
		}
		return 1
	}
	// Ctrl-C of make faults: the private daemon goes with the suite, not later.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "faults: interrupted: removing the private dockerd")
		if err := d.remove(); err != nil {
			fmt.Fprintln(os.Stderr, "faults: removing the private dockerd:", err)
		}
		os.Exit(130)
	}()
	code := m.Run()
	signal.Stop(sigs)
	printMatrix(os.Stdout)
	if path := os.Getenv("FAULTS_MATRIX"); path != "" {
		var b bytes.Buffer
		printMatrix(&b)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "faults: writing the matrix:", err)
			code = 1
		}
	}
	if err := d.remove(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: removing the private dockerd:", err)
		code = 1
	}
	if _, err := net.InterfaceByName("docker0"); bridgeErr == nil && err != nil {
		fmt.Fprintln(os.Stderr, "faults: the machine's docker0 bridge is gone:", err)
		code = 1
	}
	return code
}

// ---- the matrix ----

// row is one line of the fault matrix.
type row struct {
	fault, expected string
	observed        []string
	left            leftovers
	longest         time.Duration // the longest a doctor took, for the rows that bound it
	figure          float64       // a row's own figure (the worst run's), shown with figureFormat
	figureFormat    string
	figureSet       bool
	busy            float64 // the least busy the CPUs were in a run, for the rows that load them
	busySet         bool
	failed          bool
}

var (
	matrixMu sync.Mutex
	matrix   []*row
)

// newRow adds a row to the matrix; it is marked failed when t fails.
func newRow(t *testing.T, fault, expected string) *row {
	r := &row{fault: fault, expected: expected}
	matrixMu.Lock()
	matrix = append(matrix, r)
	matrixMu.Unlock()
	t.Cleanup(func() {
		matrixMu.Lock()
		r.failed = t.Failed()
		matrixMu.Unlock()
	})
	return r
}

// observe records what one run showed.
func (r *row) observe(format string, args ...any) {
	matrixMu.Lock()
	r.observed = append(r.observed, fmt.Sprintf(format, args...))
	matrixMu.Unlock()
}

// printMatrix prints a summary table, then every row in full: identical observations are
// counted, not repeated.
func printMatrix(w io.Writer) {
	matrixMu.Lock()
	defer matrixMu.Unlock()
	pass := 0
	for _, r := range matrix {
		if !r.failed {
			pass++
		}
	}
	fmt.Fprintf(w, "\nfault matrix: %d of %d faults pass; %d run(s) per fault; bounds are --probe-timeout plus a %s grace; probe containers run under a %s memory cgroup\n\n",
		pass, len(matrix), runs, grace, analyze.FormatSize(memoryLimit))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RESULT\tFAULT\tLEFTOVERS AFTER %d RUN(S)\n", runs)
	for _, r := range matrix {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.result(), r.fault, r.left)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range matrix {
		obs := summarize(r.observed)
		if r.longest > 0 {
			obs += fmt.Sprintf(" (longest %s)", r.longest.Round(100*time.Millisecond))
		}
		if r.figureSet {
			obs += " (" + fmt.Sprintf(r.figureFormat, r.figure) + ")"
		}
		if r.busySet {
			obs += fmt.Sprintf(" (CPUs at least %.0f%% busy from the doctor's start to the signal)", 100*r.busy)
		}
		fmt.Fprintf(w, "%s %s\n  expected:  %s\n  observed:  %s\n  leftovers: %s\n\n", r.result(), r.fault, r.expected, obs, r.left)
	}
}

func (r *row) result() string {
	if r.failed {
		return "FAIL"
	}
	return "PASS"
}

// summarize joins observations, counting repeats, in the order first seen.
func summarize(obs []string) string {
	if len(obs) == 0 {
		return "(not run)"
	}
	count := map[string]int{}
	var order []string
	for _, o := range obs {
		if count[o] == 0 {
			order = append(order, o)
		}
		count[o]++
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%d× %s", count[o], o)
	}
	return strings.Join(parts, "; ")
}

// ---- leftovers ----

// leftovers is what a run left behind in the private daemon and the host's /dev/shm.
type leftovers struct {
	containers int // probe containers (io.shmdoctor.probe)
	companions int // watch companions (io.shmdoctor.watch)
	volumes    int
	shmFiles   int // new files in the host's /dev/shm owned by the probe user or named for it
	untagged   int // untagged images
	running    int // of the containers and companions, how many still run
}

func (l leftovers) zero() bool { return l == leftovers{} }

func (l *leftovers) add(o leftovers) {
	l.containers += o.containers
	l.companions += o.companions
	l.volumes += o.volumes
	l.shmFiles += o.shmFiles
	l.untagged += o.untagged
	l.running += o.running
}

func (l leftovers) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{
		{l.containers, "probe container(s)"}, {l.companions, "watch companion(s)"}, {l.running, "of them running"},
		{l.volumes, "volume(s)"}, {l.shmFiles, "file(s) in /dev/shm"}, {l.untagged, "untagged image(s)"},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// probeUID is the user the agent runs as (nobody): a file it left in the host's /dev/shm
// (ipc: host) is owned by it.
const probeUID = 65534

var shmSeen = map[string]bool{}

// shmNames lists the host's /dev/shm.
func shmNames() map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names
}

// newShmFiles counts the files in the host's /dev/shm that were not there when the suite
// started, that no earlier count saw, and that the probe made: owned by its user or named
// after the doctor. Other processes of the machine use /dev/shm too; their files are not ours.
func newShmFiles() int {
	n := 0
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		name := e.Name()
		if shmBefore[name] || shmSeen[name] {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if (ok && st.Uid == probeUID) || strings.Contains(name, "shmdoctor") {
			shmSeen[name] = true
			n++
		}
	}
	return n
}

// leftovers counts what is left now.
func (d *daemon) leftovers(ctx context.Context) (leftovers, error) {
	var l leftovers
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		label string
		n     *int
	}{{engine.LabelProbe, &l.containers}, {engine.LabelWatch, &l.companions}} {
		list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", c.label)})
		if err != nil {
			return l, fmt.Errorf("listing containers: %w", err)
		}
		*c.n = len(list.Items)
		for _, s := range list.Items {
			if s.State == "running" {
				l.running++
			}
		}
	}
	vols, err := d.api.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return l, fmt.Errorf("listing volumes: %w", err)
	}
	l.volumes = len(vols.Items)
	imgs, err := d.api.ImageList(ctx, client.ImageListOptions{All: true})
	if err != nil {
		return l, fmt.Errorf("listing images: %w", err)
	}
	for _, img := range imgs.Items {
		if !tagged(img.RepoTags) {
			l.untagged++
		}
	}
	l.shmFiles = newShmFiles()
	return l, nil
}

// wipe removes every container, volume and untagged image of the private daemon, and with
// images every image but the suite's own workload image, so that each run starts clean.
func (d *daemon) wipe(ctx context.Context, images bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var errs []error
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	for _, s := range list.Items {
		if _, err := d.api.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing container %.12s: %w", s.ID, err))
		}
	}
	vols, err := d.api.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vols.Items {
		if _, err := d.api.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
		}
	}
	imgs, err := d.api.ImageList(ctx, client.ImageListOptions{All: true})
	if err != nil {
		return fmt.Errorf("listing images: %w", err)
	}
	for _, img := range imgs.Items {
		// Untagged images were counted as leftovers already; the cache goes only when cold.
		if slicesHas(img.RepoTags, workloadImage) || (!images && tagged(img.RepoTags)) {
			continue
		}
		if _, err := d.api.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing image %.19s: %w", img.ID, err))
		}
	}
	return errors.Join(errs...)
}

// tagged reports whether an image has a tag.
func tagged(tags []string) bool {
	for _, tag := range tags {
		if tag != "<none>:<none>" {
			return true
		}
	}
	return false
}

func isGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No such") || strings.Contains(s, "not found") || strings.Contains(s, "is already in progress")
}

func slicesHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- the doctor ----

// proc is one doctor process.
type proc struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	started  time.Time
	done     chan struct{}
	elapsed  time.Duration
	code     int            // exit status; -1 when a signal ended it
	signaled syscall.Signal // the signal that ended it
	killed   bool           // the suite killed it for running past its bound
}

// doctorEnv is the environment of the doctor: the private daemon, no docker CLI config of
// the machine, no colour.
func doctorEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DOCKER_") || strings.HasPrefix(kv, "NO_COLOR=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DOCKER_HOST="+d.host(), "DOCKER_CONFIG="+filepath.Join(d.dir, "dockercfg"), "NO_COLOR=1")
}

// doctor starts the doctor in dir with args.
func doctor(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = doctorEnv()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the doctor: %v", err)
	}
	go func() {
		err := p.cmd.Wait()
		p.elapsed = time.Since(p.started)
		p.code = p.cmd.ProcessState.ExitCode()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.signaled = ws.Signal()
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.code = -2
		}
		close(p.done)
	}()
	return p
}

// signal sends sig to the doctor.
func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// wait waits for the doctor's end, at most until bound after its start; past it the suite
// kills it (killed is then set), so that a hung doctor never hangs the suite.
func (p *proc) wait(bound time.Duration) {
	select {
	case <-p.done:
		return
	case <-time.After(time.Until(p.started.Add(bound))):
	}
	p.killed = true
	_ = p.cmd.Process.Kill()
	<-p.done
}

// end says how the doctor ended, for observations.
func (p *proc) end() string {
	switch {
	case p.killed:
		return fmt.Sprintf("still running after %s, killed", p.elapsed.Round(time.Second))
	case p.signaled != 0:
		return "killed by " + p.signaled.String()
	}
	return fmt.Sprintf("exit %d", p.code)
}

// output is the doctor's stderr, trimmed, for messages.
func (p *proc) output() string {
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// jsonReport is the part of the doctor's JSON report the suite reads.
type jsonReport struct {
	ProbeNote string `json:"probe_note"`
	Projects  []struct {
		Services []struct {
			Name  string `json:"name"`
			Probe *struct {
				MeasuredBytes *int64        `json:"measured_bytes"`
				Write         analyze.Write `json:"write"`
				Error         *string       `json:"error"`
			} `json:"probe"`
		} `json:"services"`
		Findings []struct {
			Rule    string `json:"rule"`
			Service string `json:"service"`
			Message string `json:"message"`
		} `json:"findings"`
	} `json:"projects"`
}

func (p *proc) report() (*jsonReport, error) {
	var r jsonReport
	if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("reading the doctor's JSON report: %w (stderr: %s)", err, p.output())
	}
	return &r, nil
}

// verdict is what a doctor concluded, to compare doctors: the exit status, the findings by
// rule and service, and per service the measured size and the write probe's outcome.
func (r *jsonReport) verdict(code int) string {
	var parts []string
	for _, pr := range r.Projects {
		for _, f := range pr.Findings {
			parts = append(parts, f.Rule+"@"+f.Service)
		}
		for _, s := range pr.Services {
			if s.Probe == nil {
				parts = append(parts, s.Name+":unprobed")
				continue
			}
			size := "-"
			if s.Probe.MeasuredBytes != nil {
				size = analyze.FormatSize(*s.Probe.MeasuredBytes)
			}
			parts = append(parts, fmt.Sprintf("%s:%s/%s", s.Name, size, s.Probe.Write.Outcome))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("exit %d %s", code, strings.Join(parts, " "))
}

// ---- stacks ----

// stack writes a compose file into its own folder under the daemon's and returns the folder.
func stack(t *testing.T, name, compose string) string {
	t.Helper()
	dir := filepath.Join(d.dir, "stacks", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// healthy makes sure the daemon runs and answers before a row, restarting it when an earlier
// row left it dead.
func healthy(t *testing.T) {
	t.Helper()
	if !d.alive() {
		if err := d.restart(); err != nil {
			t.Fatalf("restarting the private dockerd: %v", err)
		}
	}
	_ = d.signal(syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.api.Ping(ctx, client.PingOptions{}); err != nil {
		t.Fatalf("the private dockerd does not answer: %v", err)
	}
}

// clean wipes the daemon between runs (images too when cold) and fails the test on error.
func clean(t *testing.T, cold bool) {
	t.Helper()
	healthy(t)
	if err := d.wipe(context.Background(), cold); err != nil {
		t.Fatalf("wiping the private dockerd: %v", err)
	}
}

// count adds what is left now to the row, and says it.
func count(t *testing.T, r *row) leftovers {
	t.Helper()
	l, err := d.leftovers(context.Background())
	if err != nil {
		t.Fatalf("counting leftovers: %v", err)
	}
	r.left.add(l)
	return l
}
