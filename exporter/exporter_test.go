package exporter

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/watch"
)

// TestRules runs Prometheus's own promtool on the shipped rules: they load, and each alert
// fires on the series this package exports and stays silent where it must
// (deploy/prometheus/rules_test.yml). Debian's prometheus package brings promtool.
func TestRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus)")
	}
	dir := filepath.Join("..", "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "shmdoctor-rules.yml"}, {"test", "rules", "rules_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func ptr(n int64) *int64 { return &n }

// TestCollect: the metrics pass client_golang's linter, and a container that is gone from
// the sample is gone from the metrics: one label set per running container.
func TestCollect(t *testing.T) {
	c := func(name string, limit *int64) watch.SampledContainer {
		return watch.SampledContainer{WatchedContainer: analyze.WatchedContainer{ID: "0123456789abcdef" + name, Name: name, Service: "app", Running: true,
			Method: analyze.WatchAgent, SizeBytes: ptr(64 << 20), UsedBytes: ptr(1 << 20), PeakBytes: ptr(2 << 20), MemLimitBytes: limit},
			Project: "p", Source: "private", SizeFrom: "default"}
	}
	e := &Exporter{engine: "unix:///var/run/docker.sock", version: "28.0.0", cgroup: "2", o: Options{Version: "v1"}}
	e.last = []watch.SampledContainer{c("p-app-1", ptr(1<<30)), c("p-app-2", nil)}
	problems, err := testutil.CollectAndLint(e)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	count := func() map[string]int {
		n := map[string]int{}
		for _, name := range []string{"shmdoctor_shm_size_bytes", "shmdoctor_shm_used_bytes", "shmdoctor_shm_peak_bytes", "shmdoctor_memory_limit_bytes", "shmdoctor_container_info"} {
			n[name] = testutil.CollectAndCount(e, name)
		}
		return n
	}
	if n := count(); n["shmdoctor_shm_size_bytes"] != 2 || n["shmdoctor_container_info"] != 2 || n["shmdoctor_memory_limit_bytes"] != 1 {
		t.Errorf("two containers, one with a limit: %v", n)
	}
	e.last = e.last[1:]
	if n := count(); n["shmdoctor_shm_size_bytes"] != 1 || n["shmdoctor_shm_peak_bytes"] != 1 || n["shmdoctor_container_info"] != 1 || n["shmdoctor_memory_limit_bytes"] != 0 {
		t.Errorf("after one container went: %v", n)
	}
}
