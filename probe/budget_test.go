//go:build linux

package probe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// hundredG is four services that ask for shm_size: 100g each.
func hundredG() []*analyze.ShmPlan {
	var plans []*analyze.ShmPlan
	for _, name := range []string{"a", "b", "c", "d"} {
		plans = append(plans, &analyze.ShmPlan{Service: name, Source: analyze.SourcePrivate, Configured: i64(100 * gib), Predicted: i64(100 * gib)})
	}
	return plans
}

// TestWriteBudget: four services with shm_size 100g share one write budget: their targets add
// up to the budget at most, and the services it capped say so.
func TestWriteBudget(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testWriteBudget)
}

func testWriteBudget(t *testing.T, e testEngine) {
	o := engineOptions(t, e)
	o.WriteBudget = 96 * mib
	o.WriteMode = "write"
	ms := runOn(t, e, o, hundredG()...)
	var total int64
	capped := 0
	for name, m := range ms {
		if m.Write == nil {
			t.Fatalf("%s: no write probe: %s", name, describe(m))
		}
		total += m.Write.TargetBytes
		if m.Write.TargetBytes < 100*gib {
			capped++
			if !m.Write.BudgetCapped || !strings.Contains(m.Write.Reason, "run's memory budget") {
				t.Errorf("%s: target %s without the budget's reason: %q", name, analyze.FormatSize(m.Write.TargetBytes), m.Write.Reason)
			}
		}
	}
	if total > o.WriteBudget {
		t.Errorf("targets add up to %s, over the budget of %s", analyze.FormatSize(total), analyze.FormatSize(o.WriteBudget))
	}
	if capped != 4 {
		t.Errorf("%d services capped by the budget, want 4", capped)
	}
}

// TestMeasuredBudget: without WriteBudget the budget is half of the MemAvailable the first
// agent measured. The writers are stopped by a floor above any host's memory (--mem-floor), so
// that this test plans the write without making it.
func TestMeasuredBudget(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	o.WriteMode = "write"
	o.agentArgs = []string{"--mem-floor", "1000000g"}
	ms := run(t, o, hundredG()...)
	var total, memTotal int64
	for name, m := range ms {
		if m.Write == nil {
			t.Fatalf("%s: no write probe: %s", name, describe(m))
		}
		total += m.Write.TargetBytes
		if m.KernelMemory != nil {
			memTotal = *m.KernelMemory
		}
		if m.Write.TargetBytes > 0 && (m.Write.WrittenBytes != 0 || !strings.Contains(m.Write.Reason, "below the floor")) {
			t.Errorf("%s: %+v, want nothing written, stopped by the memory floor", name, *m.Write)
		}
	}
	t.Logf("4 services of shm_size 100g plan %s in all; MemTotal %s", analyze.FormatSize(total), analyze.FormatSize(memTotal))
	// Half of MemAvailable is at most half of MemTotal.
	if memTotal == 0 || total > memTotal/2 {
		t.Errorf("targets add up to %s, over half of the host's memory (%s)", analyze.FormatSize(total), analyze.FormatSize(memTotal))
	}
}

// agentContainer creates a container of the probe image running the agent with args, with
// its standard input open for one attach, and removes it at the end of the test.
func agentContainer(t *testing.T, args ...string) string {
	t.Helper()
	c := daemon(t)
	ctx := context.Background()
	image, err := engine.Image(ctx, c, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	project := testPrefix + "-" + strings.ToLower(t.Name())
	res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: append(protocol.Args(), args...), User: probeUser, OpenStdin: true, StdinOnce: true,
			AttachStdin: true, AttachStdout: true, AttachStderr: true,
			Labels: map[string]string{engine.LabelProbe: "test", engine.LabelProject: project}},
		HostConfig: &container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"}, ReadonlyRootfs: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
		assertNoContainers(t, c, project)
	})
	return res.ID
}

// agentExit waits for the container to exit and returns its exit code and output.
func agentExit(t *testing.T, id string, wait client.ContainerWaitResult) (int64, string) {
	t.Helper()
	c := daemon(t)
	select {
	case res := <-wait.Result:
		logs, err := c.ContainerLogs(context.Background(), id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			t.Fatal(err)
		}
		defer logs.Close()
		var out bytes.Buffer
		_, _ = stdcopy.StdCopy(&out, &out, logs)
		return res.StatusCode, out.String()
	case err := <-wait.Error:
		t.Fatalf("waiting for the agent: %v", err)
	}
	return 0, ""
}

// TestAgentStopsWithAttach: the agent ends as soon as the doctor's attach stream closes, as
// when the doctor is killed with SIGKILL. The agent is held in --delay, where nothing else
// would end it for ten minutes.
func TestAgentStopsWithAttach(t *testing.T) {
	t.Parallel()
	c := daemon(t)
	ctx := context.Background()
	id := agentContainer(t, "--attached", "--delay", "10m", "--target", "64m")
	att, err := c.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	if _, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	att.Close() // the doctor goes away
	code, out := agentExit(t, id, wait)
	if code != 1 || !strings.Contains(out, "attach stream ended") {
		t.Errorf("agent exited %d: %q, want 1 and a line saying its attach stream ended", code, out)
	}
}

// TestAgentDeadline: past --deadline the agent exits 124 by itself, whatever it is doing.
func TestAgentDeadline(t *testing.T) {
	t.Parallel()
	c := daemon(t)
	ctx := context.Background()
	id := agentContainer(t, "--deadline", "1s", "--delay", "10m")
	wait := c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out := agentExit(t, id, wait)
	if code != 124 || !strings.Contains(out, "deadline (1s) passed") {
		t.Errorf("agent exited %d: %q, want 124 and a line saying its deadline passed", code, out)
	}
}
