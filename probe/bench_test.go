//go:build linux

package probe

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// The probe benchmarks of `make bench` (scripts/bench-probe.sh): the doctor's probe of one
// service against a bare run of the probe image doing the same measurement (target: at most
// 1.2 times as long), and eight services at once against one (target: at most twice as long).
// They need the real daemon, like the tests.

// benchOptions is testOptions for a benchmark: its own project, checked for leftovers.
func benchOptions(b *testing.B) Options {
	b.Helper()
	if testClient == nil {
		b.Fatalf("the probe benchmarks need a Docker daemon: %v", dockerErr)
	}
	project := testPrefix + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(b.Name()))
	b.Cleanup(func() {
		f := make(client.Filters).Add("label", engine.LabelProbe).Add("label", engine.LabelProject+"="+project)
		list, err := testClient.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			b.Errorf("listing containers: %v", err)
			return
		}
		for _, s := range list.Items {
			b.Errorf("container left behind: %s %v (state %s)", s.ID[:12], s.Names, s.State)
			_, _ = testClient.ContainerRemove(context.Background(), s.ID, client.ContainerRemoveOptions{Force: true})
		}
	})
	return Options{Project: project, Binary: testAgent, Timeout: 90 * time.Second, WriteProbe: "off"}
}

func benchPlans(n int) []*analyze.ShmPlan {
	plans := make([]*analyze.ShmPlan, n)
	for i := range plans {
		size := int64(64+16*i) * mib
		plans[i] = &analyze.ShmPlan{Service: fmt.Sprintf("svc%d", i), Source: analyze.SourcePrivate,
			Configured: i64(size), Predicted: i64(size)}
	}
	return plans
}

func benchProbe(b *testing.B, n int) {
	o := benchOptions(b)
	if n > DefaultParallel {
		o.Parallel = n // every service at once, as the benchmark's name says
	}
	plans := benchPlans(n)
	ctx := context.Background()
	// The image exists before the clock starts, as it does on every run but the first.
	if _, err := engine.Image(ctx, testClient, testAgent); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ms, err := Run(ctx, testClient, plans, o)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range plans {
			m := ms[p.Service]
			if m == nil || m.MeasuredBytes == nil || *m.MeasuredBytes != *p.Predicted {
				b.Fatalf("%s: %s", p.Service, describe(m))
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
}

// BenchmarkProbeOne is the doctor's probe of one service: Run on one plan, write probe off.
func BenchmarkProbeOne(b *testing.B) { benchProbe(b, 1) }

// BenchmarkProbeEight is eight services probed at once (Parallel 8).
func BenchmarkProbeEight(b *testing.B) { benchProbe(b, 8) }

// BenchmarkProbeCompare interleaves every variant in each iteration (a bare run, the bare run
// of the doctor's container, the probe of one service, of eight at once and of eight with the
// default parallelism), so that a machine whose load changes during the benchmark weighs on
// all of them alike; it reports the median of each, in milliseconds, and the two ratios the
// targets are about: one/bare (at most 1.2) and eight/one (at most 2).
func BenchmarkProbeCompare(b *testing.B) {
	o := benchOptions(b)
	no, err := o.normalized()
	if err != nil {
		b.Fatal(err)
	}
	image, err := engine.Image(context.Background(), testClient, testAgent)
	if err != nil {
		b.Fatal(err)
	}
	one, eight := benchPlans(1), benchPlans(8)
	o8 := o
	o8.Parallel = 8
	bareConfig := &container.Config{Image: image, Cmd: append(protocol.Args(), "--target", "0"),
		Labels: map[string]string{engine.LabelProbe: "bench", engine.LabelProject: o.Project}}
	bareHost := &container.HostConfig{NetworkMode: network.NetworkNone, ShmSize: 64 * mib}
	probe := func(plans []*analyze.ShmPlan, o Options) {
		if _, err := Run(context.Background(), testClient, plans, o); err != nil {
			b.Fatal(err)
		}
	}
	variants := []struct {
		name string
		run  func()
	}{
		{"bare", func() { bareRun(b, bareConfig, bareHost) }},
		{"spec", func() {
			s := buildSpec(one[0], no, engine.NewRunID(), image, time.Now(), false)
			bareRun(b, s.config, s.host)
		}},
		{"one", func() { probe(one, o) }},
		{"eight", func() { probe(eight, o8) }},
		{"eight-p4", func() { probe(eight, o) }},
	}
	times := map[string][]time.Duration{}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		for j := range variants {
			v := variants[(i+j)%len(variants)] // rotate, so that none always follows another
			start := time.Now()
			v.run()
			times[v.name] = append(times[v.name], time.Since(start))
		}
		i++
	}
	med := map[string]float64{}
	for _, v := range variants {
		med[v.name] = median(times[v.name])
		b.ReportMetric(med[v.name], v.name+"-ms")
	}
	b.ReportMetric(med["one"]/med["bare"], "one/bare")
	b.ReportMetric(med["eight"]/med["one"], "eight/one")
	b.ReportMetric(med["eight-p4"]/med["one"], "eight-p4/one")
}

// median in milliseconds.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// BenchmarkBareRun is the baseline of BenchmarkProbeOne: what `docker run --rm <probe image>
// --target 0` does through the same client, with nothing of the doctor's: create, start, wait,
// read the logs, remove.
func BenchmarkBareRun(b *testing.B) {
	o := benchOptions(b)
	image, err := engine.Image(context.Background(), testClient, testAgent)
	if err != nil {
		b.Fatal(err)
	}
	config := &container.Config{Image: image, Cmd: append(protocol.Args(), "--target", "0"),
		Labels: map[string]string{engine.LabelProbe: "bench", engine.LabelProject: o.Project}}
	host := &container.HostConfig{NetworkMode: network.NetworkNone, ShmSize: 64 * mib}
	b.ResetTimer()
	for b.Loop() {
		bareRun(b, config, host)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
}

// BenchmarkBareSpec is BenchmarkBareRun with the container the doctor creates for the plan of
// BenchmarkProbeOne (least privilege, labels, log options): the difference to BenchmarkBareRun
// is the cost of the container's settings, the difference to BenchmarkProbeOne the cost of
// Run's own calls (ping, info, leftovers, image check, inspect, sweep).
func BenchmarkBareSpec(b *testing.B) {
	o, err := benchOptions(b).normalized()
	if err != nil {
		b.Fatal(err)
	}
	image, err := engine.Image(context.Background(), testClient, testAgent)
	if err != nil {
		b.Fatal(err)
	}
	plan := benchPlans(1)[0]
	b.ResetTimer()
	for b.Loop() {
		s := buildSpec(plan, o, engine.NewRunID(), image, time.Now(), false)
		bareRun(b, s.config, s.host)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
}

// bareRun runs one agent container to its end and removes it, checking it reported.
func bareRun(b *testing.B, config *container.Config, host *container.HostConfig) {
	ctx := context.Background()
	res, err := testClient.ContainerCreate(ctx, client.ContainerCreateOptions{Config: config, HostConfig: host})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_, _ = testClient.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
	}()
	wait := testClient.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := testClient.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		b.Fatal(err)
	}
	rc, err := testClient.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, rc)
	rc.Close()
	if err != nil {
		b.Fatal(err)
	}
	parsed, _ := protocol.ParseOutput(&out)
	if !parsed.Complete || parsed.Report.SizeBytes == nil {
		b.Fatalf("no report: %q", out.String())
	}
}
