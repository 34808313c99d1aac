//go:build linux

package main

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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// These tests run the doctor's real binary against the real Docker Engine: here and in CI one
// answers (.ci/run starts it). The binary must be static to serve as the probe's agent.
var doctorBin string

// TestMain removes the doctor the tests built, once they end.
func TestMain(m *testing.M) {
	code := m.Run()
	if doctorBin != "" {
		os.RemoveAll(filepath.Dir(doctorBin))
	}
	os.Exit(code)
}

func buildDoctor(t *testing.T) string {
	t.Helper()
	if doctorBin != "" {
		return doctorBin
	}
	dir, err := os.MkdirTemp("", "shmdoctor-cmd-test")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "shmdoctor")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the doctor: %v\n%s", err, out)
	}
	doctorBin = bin
	return bin
}

// probeContainers lists the probe containers of a compose project on the daemon.
func probeContainers(t *testing.T, project string) []string {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := make(client.Filters).Add("label", "io.shmdoctor.probe").Add("label", "io.shmdoctor.project="+project)
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, strings.Join(s.Names, ","))
	}
	return names
}

func doctor(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(buildDoctor(t), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

type probeDoc struct {
	Projects []struct {
		Services []struct {
			Name string
			Shm  struct {
				Source         string
				PredictedBytes *int64 `json:"predicted_bytes"`
			}
			Probe *struct {
				Exists        bool
				MeasuredBytes *int64 `json:"measured_bytes"`
				FSType        string `json:"fs_type"`
				Write         *struct {
					TargetBytes  int64  `json:"target_bytes"`
					WrittenBytes int64  `json:"written_bytes"`
					Outcome      string `json:"outcome"`
				}
				CreateError string `json:"create_error"`
			}
		}
		Findings []struct {
			Rule, Service, Severity string
			Evidence                *struct{ Rule, Message string }
		}
	}
}

// TestProbeFixture probes every IPC mode and mount kind: the predicted size equals the
// measured one, and ENOSPC, OOM kill and a refused donor are reproduced and reported once,
// by the static rule that predicted them, with the measurement as evidence.
func TestProbeFixture(t *testing.T) {
	code, out, errs := doctor(t, nil, "--format", "json", "--probe", "always", "--fail-on", "never", "testdata/probe")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "\x1b") || strings.Contains(errs, "waiting") {
		t.Errorf("progress drawn on a pipe: %q", errs)
	}
	var doc probeDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, staticOut, _ := doctor(t, nil, "--format", "json", "--probe", "never", "--fail-on", "never", "testdata/probe")
	var staticDoc probeDoc
	if err := json.Unmarshal([]byte(staticOut), &staticDoc); err != nil {
		t.Fatalf("%v: %s", err, staticOut)
	}
	staticSeverity := map[string]string{}
	for _, f := range staticDoc.Projects[0].Findings {
		staticSeverity[f.Service+" "+f.Rule] = f.Severity
	}
	// The service's own failures raise a reproduced finding to an error: the refused
	// donor, the ENOSPC short of enospc's declared need, the OOM kill at oom's limit below
	// its declared need. Any other reproduction (tmpfs's ENOSPC at the shm_size the mount
	// overrides) measures the prediction and keeps its severity.
	raised := map[string]bool{"refused SHM006": true, "enospc SHM010": true, "enospc SHM011": true, "oom SHM012": true}
	rules := map[string][]string{}
	for _, f := range doc.Projects[0].Findings {
		rule := f.Rule
		if f.Evidence != nil {
			rule += "+" + f.Evidence.Rule
			key := f.Service + " " + f.Rule
			want := staticSeverity[key]
			if raised[key] {
				want = "error"
			}
			if f.Severity != want || f.Evidence.Message == "" {
				t.Errorf("%s reproduced by %+v is a %s, want a %s (without the probe: %s)", key, f.Evidence, f.Severity, want, staticSeverity[key])
			}
		}
		rules[f.Service] = append(rules[f.Service], rule)
	}
	if staticSeverity["enospc SHM010"] != "warning" {
		t.Errorf("enospc's SHM010 is a %q without the probe: the fixture no longer shows the raise", staticSeverity["enospc SHM010"])
	}
	for _, s := range doc.Projects[0].Services {
		m := s.Probe
		if m == nil {
			t.Errorf("%s: not probed", s.Name)
			continue
		}
		switch s.Name {
		case "refused":
			if !strings.Contains(m.CreateError, "non-shareable IPC") || !contains(rules[s.Name], "SHM006+SHM205") || contains(rules[s.Name], "SHM205") {
				t.Errorf("refused: create error %q, findings %v", m.CreateError, rules[s.Name])
			}
			continue
		case "none":
			if m.Exists {
				t.Errorf("none: /dev/shm exists")
			}
			continue
		case "host":
			if m.MeasuredBytes == nil || *m.MeasuredBytes <= 64<<20 {
				t.Errorf("host: measured %v, want the host's /dev/shm", deref(m.MeasuredBytes))
			}
			continue
		case "host-need":
			// the host's /dev/shm is written at most 256 MiB, whatever the need
			if m.Write == nil || m.Write.TargetBytes != 256<<20 || m.Write.Outcome != "ok" {
				t.Errorf("host-need: write %+v, want 256 MiB written", m.Write)
			}
			continue
		}
		if s.Shm.PredictedBytes == nil || m.MeasuredBytes == nil || *s.Shm.PredictedBytes != *m.MeasuredBytes {
			t.Errorf("%s (%s): predicted %v, measured %v", s.Name, s.Shm.Source, deref(s.Shm.PredictedBytes), deref(m.MeasuredBytes))
		}
		if contains(rules[s.Name], "SHM201") {
			t.Errorf("%s: SHM201 although prediction and measurement agree", s.Name)
		}
		want := map[string]string{"enospc": "enospc", "oom": "oom_killed", "default": "ok", "sized": "ok", "joiner": "ok"}[s.Name]
		if want != "" && (m.Write == nil || m.Write.Outcome != want) {
			t.Errorf("%s: write %+v, want %s", s.Name, m.Write, want)
		}
	}
	if !contains(rules["enospc"], "SHM010+SHM202") || !contains(rules["oom"], "SHM012+SHM204") || contains(rules["enospc"], "SHM202") || contains(rules["oom"], "SHM204") {
		t.Errorf("findings: enospc %v, oom %v", rules["enospc"], rules["oom"])
	}
	if left := probeContainers(t, "probe-fixture"); len(left) > 0 {
		t.Errorf("containers left behind: %v", left)
	}
}

// TestProbeInterrupt sends SIGINT to the doctor's real binary when the daemon reports its
// first probe container started: the doctor still prints the static report, with a line
// saying the probe was interrupted, exits 130, and no container of the run is left behind.
func TestProbeInterrupt(t *testing.T) {
	c := dockerClient(t)
	project := "probe-interrupt-" + randomHex(3)
	t.Cleanup(func() { removeProjectContainers(t, c, project) })
	// ignored has a static finding (SHM001); slow writes 2 GiB, which takes a while.
	dir := writeStack(t, project, "  slow:\n    image: alpine\n    shm_size: 2g\n    x-shmdoctor: {need: 2g}\n"+
		"  ignored:\n    image: alpine\n    ipc: host\n    shm_size: 1g\n  donor:\n    image: alpine\n    ipc: shareable\n"+
		"  joiner:\n    image: alpine\n    ipc: service:donor\n")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := make(client.Filters).Add("type", "container").Add("event", "start").Add("label", "io.shmdoctor.project="+project)
	events := c.Events(ctx, client.EventsListOptions{Filters: f})

	cmd := exec.Command(buildDoctor(t), "--probe", "always", "--write-probe", "2g", "--color", "never", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-events.Messages:
	case err := <-events.Err:
		_ = cmd.Process.Kill()
		t.Fatalf("following the daemon's events: %v; doctor: %s", err, errb.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Errorf("exit %v, want 130: %s", err, errb.String())
	}
	for _, want := range []string{"project " + project, "SHM001 ", "probe: interrupted (Ctrl-C)", "1 warning"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the report:\n%s\nstderr: %s", want, out.String(), errb.String())
		}
	}
	if left := probeContainers(t, project); len(left) > 0 {
		t.Errorf("containers left behind after Ctrl-C: %v", left)
	}
}

// TestProbeProgress runs the doctor on a real terminal (util-linux script gives it one): a
// line per service is drawn while the probe runs, and once it ends only the report is on
// screen.
func TestProbeProgress(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script (util-linux) is needed to give the doctor a terminal: %v", err)
	}
	dir := t.TempDir()
	// big writes 1 GiB (write(2), then mmap): long enough for its progress to be drawn.
	stack := "name: probe-progress\nservices:\n  small:\n    image: alpine\n  sized:\n    image: alpine\n    shm_size: 96m\n" +
		"  big:\n    image: alpine\n    shm_size: 1g\n    x-shmdoctor: {need: 1g}\n"
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	onTerminal := func(args string) []byte {
		typescript := filepath.Join(t.TempDir(), "typescript")
		cmd := exec.Command(script, "-qfec", buildDoctor(t)+" --probe always --color never "+args+" "+dir, typescript)
		cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		raw, err := os.ReadFile(typescript)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if raw := onTerminal("--quiet --write-probe off"); bytes.Contains(raw, []byte("probing")) || bytes.Contains(raw, []byte("\x1b[")) {
		t.Errorf("--quiet drew progress on the terminal:\n%q", raw)
	}
	raw := onTerminal("")
	for _, want := range []string{"probing probe-progress", "small", "sized", "waiting", "measuring", "96 MiB  write ok", " of 1 GiB (write) ", " of 1 GiB (mmap) "} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the terminal never showed %q:\n%q", want, raw)
		}
	}
	screen := strings.Join(testutil.Screen(string(raw)), "\n")
	if strings.Contains(screen, "probing") || strings.Contains(screen, "measuring") || strings.Contains(screen, "writing") || strings.Contains(screen, "write ok") {
		t.Errorf("progress left on screen:\n%s", screen)
	}
	if !strings.Contains(screen, "no findings in 1 project, 3 services") {
		t.Errorf("no report on screen:\n%s", screen)
	}
	if left := probeContainers(t, "probe-progress"); len(left) > 0 {
		t.Errorf("containers left behind: %v\n%s\nthe last run's terminal:\n%q", left, containerStates(t, left), raw)
	}
}

// containerStates describes the named containers as the daemon sees them, for a test that
// finds some left behind.
func containerStates(t *testing.T, names []string) string {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	var b strings.Builder
	for _, name := range names {
		res, err := c.ContainerInspect(context.Background(), strings.TrimPrefix(name, "/"), client.ContainerInspectOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", name, err)
			continue
		}
		st := res.Container.State
		fmt.Fprintf(&b, "%s: created %s, %s (exit %d, dead %v, error %q, finished %s)\n",
			name, res.Container.Created, st.Status, st.ExitCode, st.Dead, st.Error, st.FinishedAt)
	}
	return b.String()
}

// TestUnreachableDaemon: with --probe always a daemon that does not answer is a one-line
// error and exit 2; with auto the analysis goes on and one line says why the probe was skipped.
func TestUnreachableDaemon(t *testing.T) {
	env := []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}
	code, _, errs := doctor(t, env, "--probe", "always", "testdata/rules/silent")
	if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "unix:///nonexistent/docker.sock") {
		t.Errorf("always: exit %d, stderr %q", code, errs)
	}
	code, out, errs := doctor(t, env, "testdata/rules/silent")
	if code != exitClean || !strings.Contains(out, "probe: skipped: ") || errs != "" {
		t.Errorf("auto: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestHostCommand(t *testing.T) {
	code, out, errs := doctor(t, nil, "host", "--format", "json", "--need", "64m")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"server_version", "api_version", "os", "arch", "cgroup_version", "mem_total_bytes", "default_shm_bytes", "default_ipc_mode", "host_shm_bytes", "nvidia_runtime"} {
		if _, ok := h[k]; !ok {
			t.Errorf("host report has no %s", k)
		}
	}
	if h["default_shm_bytes"] != float64(64<<20) || h["can_give"] != true {
		t.Errorf("default /dev/shm %v, can give %v", h["default_shm_bytes"], h["can_give"])
	}
	if code, out, _ := doctor(t, nil, "host", "--need", "100t"); code != exitFindings || !strings.Contains(out, "need 100 TiB: NO") {
		t.Errorf("--need 100t: exit %d\n%s", code, out)
	}
}

// TestProbeClean runs the real `shmdoctor probe --clean` while a real watch holds its run
// lock: the command exits 0 and removes no probe image, since a live doctor may be about to
// use one. Other doctors share the daemon (other packages' tests among them), and an
// unscoped clean with no run alive would take their images away; so the test never runs one.
// To show the images were kept, not absent, the test imports a probe image of its own (from
// privateDoctor's copy of the binary), which no container uses and must still be there
// afterwards. The watch and the clean share a lock directory of the test's own
// (XDG_RUNTIME_DIR); the watch's project has no container, so it makes neither a companion
// nor an image.
func TestProbeClean(t *testing.T) {
	c := dockerClient(t)
	bin, images := privateDoctor(t, c)
	if _, err := engine.Image(context.Background(), c, bin); err != nil {
		t.Fatalf("importing the test's probe image: %v", err)
	}
	if n := len(images(false)); n != 1 {
		t.Fatalf("%d probe images of the test's binary, want 1", n)
	}

	xdg := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + xdg}
	locks := func() []string {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(xdg, "shmdoctor", "*.lock"))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	project := "probe-clean-" + randomHex(3)
	dir := writeStack(t, project, "  idle:\n    image: alpine\n")
	watch := exec.Command(buildDoctor(t), "watch", "--format", "json", "--interval", "1h", "--duration", "10m", "-p", project, dir)
	watch.Env = append(os.Environ(), env...)
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	watch.Stderr = &errb
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = watch.Process.Kill()
		_ = watch.Wait()
	}()
	// A safety net for a watch that never writes its first sample: killed, it closes stdout.
	safety := time.AfterFunc(watchBudget(t), func() { _ = watch.Process.Kill() })
	defer safety.Stop()
	// The watch takes its run lock before its first sample: once that line is out, the lock
	// is held until the watch ends.
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	var first analyze.WatchSample
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &first) != nil || first.Type != "sample" {
		t.Fatalf("the watch wrote no sample: %q %v\n%s", sc.Text(), sc.Err(), errb.String())
	}
	if held := locks(); len(held) != 1 {
		t.Fatalf("lock files while the watch runs: %v, want its one", held)
	}

	code, out, errs := doctor(t, env, "probe", "--clean")
	if code != exitClean || !regexp.MustCompile(`^removed \d+ probe container\(s\) and 0 probe image\(s\)\n$`).MatchString(out) {
		t.Errorf("probe --clean while a watch runs: exit %d, %q, want 0 and no image removed; stderr %s", code, out, errs)
	}
	if n := len(images(false)); n != 1 {
		t.Errorf("probe --clean removed the test's unused probe image while a watch held its run lock")
	}

	if err := watch.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var last analyze.WatchSummary
	for sc.Scan() {
		_ = json.Unmarshal(sc.Bytes(), &last)
	}
	err = watch.Wait()
	// No container of the project ran: the watch ends with exit 1, interrupted by Ctrl-C.
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFindings || last.Type != "summary" || !last.Interrupted {
		t.Errorf("watch: %v, summary %q interrupted %v, want exit 1 after Ctrl-C\n%s", err, last.Type, last.Interrupted, errb.String())
	}
	if held := locks(); len(held) != 0 {
		t.Errorf("lock files left after the watch: %v", held)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func deref(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

// TestDockerPlugin installs the binary as a docker CLI plugin in a private config folder and
// runs it through the real docker CLI: the metadata call, then `docker shmdoctor ...`.
func TestDockerPlugin(t *testing.T) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Fatalf("the docker CLI is needed: %v", err)
	}
	config := t.TempDir()
	plugins := filepath.Join(config, "cli-plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(buildDoctor(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "docker-shmdoctor"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(docker, "shmdoctor", "--probe", "never", "--format", "json", "testdata/rules/SHM001")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+config)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFindings {
		t.Fatalf("docker shmdoctor: %v: %s %s", err, out, errOutput(err))
	}
	if !strings.Contains(string(out), `"rule": "SHM001"`) {
		t.Errorf("docker shmdoctor did not analyse the stack: %s", out)
	}
	help := exec.Command(docker, "--help")
	help.Env = cmd.Env
	if h, _ := help.CombinedOutput(); !strings.Contains(string(h), "shmdoctor") {
		t.Errorf("docker --help does not list the plugin:\n%s", h)
	}
}

func errOutput(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestHostFitsColumns: host wraps each value under the values' column, and its verdict,
// within COLUMNS (80 when unset).
func TestHostFitsColumns(t *testing.T) {
	for _, columns := range []string{"", "80", "50"} {
		env := []string{"NO_COLOR=1", "COLUMNS=" + columns}
		width := 80
		if columns != "" {
			width, _ = strconv.Atoi(columns)
		}
		code, out, errs := doctor(t, env, "host", "--need", "100t")
		if code != exitFindings || !strings.Contains(out, "NO, ") {
			t.Fatalf("COLUMNS=%s: exit %d, stdout %q, stderr %q", columns, code, out, errs)
		}
		for _, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("COLUMNS=%s host: a line of %d columns: %q", columns, n, l)
			}
		}
	}
}
