//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/internal/enginetest"
	"github.com/shmdoctor/shmdoctor/watch"
)

// TestExporterPrometheus runs the real chain a fleet runs: the built doctor as an exporter
// (watch --listen) on a loopback port, Debian's prometheus scraping it every second and
// evaluating the shipped rules, and two workload containers of a project: fill writes
// 56 MiB into the default 64 MiB /dev/shm, tight has a 64 MiB memory limit. Prometheus must
// hold their series, fire ShmDefaultSizeOutgrown for fill and ShmSizeAtMemoryLimit for tight,
// and hold ShmNearlyFull pending for fill (87.5% full; it fires after its minute). When tight
// is removed its series leave /metrics. Every wait polls until its condition, within a
// deadline.
func TestExporterPrometheus(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	rules, err := filepath.Abs(filepath.Join("..", "..", "deploy", "prometheus", "shmdoctor-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // after the containers' removal, registered later
	ctx := context.Background()
	image := busyboxImage(t, c)
	project := "exptest-" + randomSuffix()
	run := func(service string, mem int64, script string) string {
		t.Helper()
		name := project + "-" + service + "-1"
		enginetest.Start(t, c, client.ContainerCreateOptions{Name: name,
			Config: &container.Config{Image: image, Cmd: []string{"sh", "-c", script},
				Labels: map[string]string{watch.ComposeProjectLabel: project, watch.ComposeServiceLabel: service, watch.ComposeOneoffLabel: "False"}},
			HostConfig: &container.HostConfig{NetworkMode: "none", Resources: container.Resources{Memory: mem}}})
		return name
	}
	fill := run("fill", 0, "dd if=/dev/zero of=/dev/shm/f bs=1M count=56 2>/dev/null; exec sleep 600")
	tight := run("tight", 64<<20, "exec sleep 600")

	// The exporter, on a port of its choosing: it says which on its first line.
	exp := exec.Command(buildDoctor(t), "watch", "--listen", "127.0.0.1:0", "-p", project, "--interval", "500ms")
	stderr, err := exp.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer exp.Process.Kill()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("the exporter said nothing: %v", err)
	}
	_, rest, _ := strings.Cut(line, "http://")
	target, _, _ := strings.Cut(rest, "/metrics")
	if target == "" {
		t.Fatalf("no address in %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	// Prometheus, scraping and evaluating every second.
	dir := t.TempDir()
	promAddr := freePort(t)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: shmdoctor
    static_configs:
      - targets: [%q]
`, rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = prom.Process.Signal(syscall.SIGTERM)
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", promLog.String())
		}
	}()
	api := func(path string, q url.Values, into any) error {
		resp, err := http.Get("http://" + promAddr + path + "?" + q.Encode())
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(into)
	}
	deadline := time.Now().Add(90 * time.Second)
	poll := func(what string, cond func() (bool, string)) {
		t.Helper()
		last := ""
		for time.Now().Before(deadline) {
			ok, state := cond()
			if ok {
				return
			}
			last = state
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatalf("waiting for %s: %s", what, last)
	}

	// The series, as Prometheus stored them.
	var peaks map[string]float64
	poll("fill's and tight's series in prometheus", func() (bool, string) {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		q := url.Values{"query": {fmt.Sprintf(`shmdoctor_shm_peak_bytes{project=%q}`, project)}}
		if err := api("/api/v1/query", q, &r); err != nil {
			return false, err.Error()
		}
		peaks = map[string]float64{}
		for _, s := range r.Data.Result {
			var v float64
			fmt.Sscan(fmt.Sprint(s.Value[1]), &v)
			peaks[s.Metric["container"]] = v
		}
		return peaks[fill] >= 56<<20 && len(peaks) == 2, fmt.Sprint(peaks)
	})

	// The alerts, as Prometheus evaluated the shipped rules.
	type alert struct {
		Labels   map[string]string `json:"labels"`
		State    string            `json:"state"`
		ActiveAt string            `json:"activeAt"`
		Value    string            `json:"value"`
	}
	var alerts []alert
	poll("the alerts", func() (bool, string) {
		var r struct {
			Data struct {
				Alerts []alert `json:"alerts"`
			} `json:"data"`
		}
		if err := api("/api/v1/alerts", nil, &r); err != nil {
			return false, err.Error()
		}
		alerts = r.Data.Alerts
		state := map[string]string{}
		for _, a := range alerts {
			state[a.Labels["alertname"]+" "+a.Labels["container"]] = a.State
		}
		return state["ShmDefaultSizeOutgrown "+fill] == "firing" && state["ShmSizeAtMemoryLimit "+tight] == "firing" &&
			state["ShmNearlyFull "+fill] == "pending" && len(state) == 3, fmt.Sprint(state)
	})
	for _, a := range alerts {
		b, _ := json.Marshal(a)
		t.Logf("alert: %s", b)
	}

	// One label set per container: tight's go when it goes.
	metrics := func() string {
		resp, err := http.Get("http://" + target + "/metrics")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := metrics(); !strings.Contains(m, `container="`+tight+`"`) || !strings.Contains(m, `source="private"`) || !strings.Contains(m, `size_from="default"`) {
		t.Errorf("tight is not in /metrics:\n%s", m)
	}
	if _, err := c.ContainerRemove(ctx, tight, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	poll("tight's series to leave /metrics", func() (bool, string) {
		m := metrics()
		return !strings.Contains(m, `container="`+tight+`"`) && strings.Contains(m, `container="`+fill+`"`), "still there"
	})
	for _, l := range strings.Split(metrics(), "\n") {
		if strings.HasPrefix(l, "shmdoctor_") {
			t.Log(l)
		}
	}

	// SIGTERM ends the exporter cleanly, its companions with it.
	_ = exp.Process.Signal(syscall.SIGTERM)
	if err := exp.Wait(); err != nil {
		t.Errorf("the exporter after SIGTERM: %v", err)
	}
	if left := watchCompanions(t, project); len(left) > 0 {
		t.Errorf("companions left behind: %v", left)
	}
}

// freePort is a loopback address no one listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestExporterUsage: --projects belongs to --listen, and --listen watches containers, not a
// compose file; both are usage errors that say so, before any daemon is asked.
func TestExporterUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--projects", "a"}, "--projects needs --listen"},
		{[]string{"watch", "--listen", "127.0.0.1:0", "testdata"}, "not a compose file"},
	} {
		code, _, stderr := shmdoctor(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}
