//go:build linux

package probe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/internal/enginetest"
)

// The probe tests run against the real Docker daemon the environment names (DOCKER_HOST,
// contexts): here and in CI one answers (.ci/run starts one). They fail when none does.
var (
	testAgent  string // the agent binary built for the tests
	testClient *client.Client
	dockerErr  error
	// testPrefix starts the project of every test of this process, so that the final check
	// sees only this process's containers while other test runs share the daemon.
	testPrefix = "probe-test-" + engine.NewRunID()[:6]
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// Run locks go to a folder of this process's own, so that the doctors other test
	// processes run on this machine at the same time neither see nor are seen by these tests.
	scratch, err := enginetest.NewScratch("probe")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer scratch.Remove()
	testAgent = scratch.Agent

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, closeClient, err := engine.NewClient(ctx)
	if err == nil {
		defer closeClient()
		err = engine.Ping(ctx, c)
	}
	if err != nil {
		dockerErr = err
	} else {
		testClient = c.(*client.Client)
	}
	connectPodman(ctx)

	code := m.Run()

	for _, c := range []*client.Client{testClient, podmanClient} {
		if c == nil {
			continue
		}
		// Nothing the tests started may survive them: no container, no file in /dev/shm.
		f := make(client.Filters).Add("label", engine.LabelProbe)
		list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			fmt.Fprintln(os.Stderr, "listing probe containers:", err)
			code = 1
			continue
		}
		for _, s := range list.Items {
			if !strings.HasPrefix(s.Labels[engine.LabelProject], testPrefix) {
				continue // another process's
			}
			fmt.Fprintln(os.Stderr, "FAIL: probe container survived the tests:", c.DaemonHost(), s.ID[:12], s.Names, s.Labels)
			_, _ = c.ContainerRemove(context.Background(), s.ID, client.ContainerRemoveOptions{Force: true})
			code = 1
		}
	}
	if left := scratch.LocksLeft(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lock files left: %v\n", left)
		code = 1
	}
	if left, _ := filepath.Glob("/dev/shm/.shmdoctor-probe-*"); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: files left in /dev/shm: %v\n", left)
		code = 1
	}
	return code
}

// daemon returns the real client, failing without one.
func daemon(t *testing.T) *client.Client {
	t.Helper()
	if testClient == nil {
		t.Fatalf("these tests need a Docker daemon: %v", dockerErr)
	}
	return testClient
}

// testOptions gives each test its own project, so that its leftover check sees only its
// own containers while other tests run in parallel, and checks that check at cleanup.
func testOptions(t *testing.T) Options {
	t.Helper()
	return engineOptions(t, testEngine{name: "docker", c: daemon(t), engine: analyze.Docker})
}

// engineOptions is testOptions for the engine e.
func engineOptions(t *testing.T, e testEngine) Options {
	t.Helper()
	project := testPrefix + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	t.Cleanup(func() { assertNoContainers(t, e.c, project) })
	return Options{Project: project, Binary: testAgent, Timeout: 90 * time.Second}
}

func assertNoContainers(t *testing.T, c engine.Client, project string) {
	t.Helper()
	f := make(client.Filters).Add("label", engine.LabelProbe).Add("label", engine.LabelProject+"="+project)
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("listing containers: %v", err)
		return
	}
	for _, s := range list.Items {
		t.Errorf("probe container left behind: %s %v (state %s)", s.ID[:12], s.Names, s.State)
		_, _ = c.ContainerRemove(context.Background(), s.ID, client.ContainerRemoveOptions{Force: true})
	}
}

func run(t *testing.T, o Options, plans ...*analyze.ShmPlan) map[string]*analyze.Measurement {
	t.Helper()
	return runOn(t, testEngine{name: "docker", c: daemon(t), engine: analyze.Docker}, o, plans...)
}

// runOn is run against the engine e.
func runOn(t *testing.T, e testEngine, o Options, plans ...*analyze.ShmPlan) map[string]*analyze.Measurement {
	t.Helper()
	start := time.Now()
	ms, err := Run(context.Background(), e.c, plans, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("probed %d services in %v (%v per service)", len(plans), time.Since(start).Round(time.Millisecond),
		(time.Since(start) / time.Duration(len(plans))).Round(time.Millisecond))
	for name, m := range ms {
		t.Logf("%s: %s", name, describe(m))
	}
	return ms
}

func describe(m *analyze.Measurement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exists=%v", m.Exists)
	if m.MeasuredBytes != nil {
		fmt.Fprintf(&b, " size=%s free=%s", analyze.FormatSize(*m.MeasuredBytes), analyze.FormatSize(*m.FreeBytes))
	}
	fmt.Fprintf(&b, " fs=%s source=%s opts=%s memlock=%s stack=%s", m.FSType, m.MountSource, m.MountOptions, m.Memlock, m.Stack)
	if m.CgroupMemory != nil {
		fmt.Fprintf(&b, " cgroup=%s", analyze.FormatSize(*m.CgroupMemory))
	}
	if w := m.Write; w != nil {
		fmt.Fprintf(&b, " write={%s %s target=%s written=%s %.2fGB/s %q}", w.Mode, w.Outcome, analyze.FormatSize(w.TargetBytes), analyze.FormatSize(w.WrittenBytes), w.GBps, w.Reason)
	}
	if m.CreateError != "" {
		fmt.Fprintf(&b, " create_error=%q", m.CreateError)
	}
	if m.Error != "" {
		fmt.Fprintf(&b, " error=%q", m.Error)
	}
	if len(m.Omitted) > 0 {
		fmt.Fprintf(&b, " omitted=%q", m.Omitted)
	}
	return b.String()
}

func i64(v int64) *int64 { return &v }

const (
	mib int64 = 1 << 20
	gib int64 = 1 << 30
)
