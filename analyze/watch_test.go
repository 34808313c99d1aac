package analyze_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

func TestRecommendSize(t *testing.T) {
	const mib, gib = int64(1 << 20), int64(1 << 30)
	cases := []struct {
		name        string
		peak        int64
		headroom    float64
		floor, want int64
	}{
		{"nothing used: the default", 0, 1.5, 0, 64 * mib},
		{"60 MiB fits the default", 40 * mib, 1.5, 0, 64 * mib},
		{"72 MiB rounds to 128m", 48 * mib, 1.5, 0, 128 * mib},
		{"150 MiB rounds to 256m", 100 * mib, 1.5, 0, 256 * mib},
		{"exactly a power of two stays", 256 * mib, 1, 0, 256 * mib},
		{"just over 1 GiB rounds to 2g", 700 * mib, 1.5, 0, 2 * gib},
		{"whole GiB above 1 GiB", 3*gib + gib/5, 1.5, 0, 5 * gib},
		{"headroom 2", 300 * mib, 2, 0, 1 * gib},
		{"never below the need the parameters give", 10 * mib, 1.5, 1 * gib, 1 * gib},
		{"the peak wins over a smaller floor", 1 * gib, 1.5, 1 * gib, 2 * gib},
		{"a floor that is no friendly size is rounded", 10 * mib, 1.5, 100 * mib, 128 * mib},
	}
	for _, c := range cases {
		if got := analyze.RecommendSize(c.peak, c.headroom, c.floor); got != c.want {
			t.Errorf("%s: RecommendSize(%s, %g, %s) = %s, want %s", c.name, analyze.FormatSize(c.peak), c.headroom, analyze.FormatSize(c.floor), analyze.FormatSize(got), analyze.FormatSize(c.want))
		}
	}
}

const recommendStack = `services:
  trainer:
    image: pytorch/pytorch
    shm_size: 2g
    mem_limit: 4g
  small:
    image: vllm/vllm-openai
    command: --model m --tensor-parallel-size 4
    deploy: {resources: {reservations: {devices: [{capabilities: [gpu], count: 4}]}}}
  web:
    image: nginx
    deploy:
      resources:
        limits:
          memory: 1g
  mounted:
    image: nginx
    tmpfs:
      - /dev/shm:size=64m
  hostipc:
    image: nginx
    ipc: host
`

func TestRecommend(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": recommendStack})
	t.Chdir(dir)
	ps := compose.Load(context.Background(), compose.Options{})
	if len(ps) != 1 || !ps[0].Compose {
		t.Fatalf("loading: %+v", ps[0].Errors)
	}
	p := ps[0]
	const mib, gib = int64(1 << 20), int64(1 << 30)
	agent := []analyze.WatchMethod{analyze.WatchAgent}

	// 3 GiB × 1.5 = 4.5 GiB → 5g, which the 4g memory limit cannot hold.
	r := analyze.Recommend(p, "trainer", 3*gib, analyze.Ptr(2*gib), nil, 1.5, agent)
	if r.ShmSize != "5g" || r.Fits || r.MemLimitKey != "mem_limit" || !r.Set || r.Pos.Line != 4 || r.Pos.Column != 5 || !r.Change {
		t.Errorf("trainer: %+v", r)
	}
	if !strings.Contains(r.Verdict, "cannot hold") || !strings.Contains(r.Verdict, "raise mem_limit above 5 GiB") {
		t.Errorf("trainer verdict: %s", r.Verdict)
	}

	// 10 MiB used, but vLLM's four ranks need 712.7 MiB; shm_size is not written: the
	// service's line.
	r = analyze.Recommend(p, "small", 10*mib, analyze.Ptr(64*mib), nil, 1.5, agent)
	if r.ShmSize != "1g" || r.FloorBytes != 747298976 || !strings.Contains(r.FloorFrom, "vLLM") || r.Set || r.Pos.Line != 6 || !r.Fits {
		t.Errorf("small: %+v", r)
	}
	if r.Snippet != "services:\n  small:\n    shm_size: 1g\n" {
		t.Errorf("small snippet: %q", r.Snippet)
	}

	// The compose limit is deploy's; the engine's observed one is not used over it.
	r = analyze.Recommend(p, "web", 100*mib, analyze.Ptr(64*mib), analyze.Ptr(8*gib), 1.5, agent)
	if r.ShmSize != "256m" || !r.Fits || r.MemLimitKey != "deploy.resources.limits.memory" || *r.MemLimitBytes != gib || !strings.Contains(r.Verdict, "leaving 768 MiB") {
		t.Errorf("web: %+v", r)
	}

	r = analyze.Recommend(p, "mounted", 50*mib, analyze.Ptr(64*mib), nil, 1.5, agent)
	if r.Key != "tmpfs" || !r.Set || r.Pos.Line != 19 || !strings.Contains(r.Snippet, "/dev/shm:size=128m") {
		t.Errorf("mounted: %+v", r)
	}

	r = analyze.Recommend(p, "hostipc", 50*mib, analyze.Ptr(12*gib), nil, 1.5, agent)
	if !strings.Contains(r.Note, "ipc: host") || r.Set {
		t.Errorf("hostipc: %+v", r)
	}

	// A project watched by its labels alone: no floor, no position, the engine's limit.
	r = analyze.Recommend(nil, "app", 48*mib, analyze.Ptr(64*mib), analyze.Ptr(96*mib), 1.5, agent)
	if r.ShmSize != "128m" || r.Pos != (analyze.Pos{}) || r.Fits || r.FloorBytes != 0 {
		t.Errorf("labels alone: %+v", r)
	}
	// Already the right size: nothing to change.
	if r := analyze.Recommend(nil, "app", 10*mib, analyze.Ptr(64*mib), nil, 1.5, agent); r.Change {
		t.Errorf("the default holds 15 MiB: %+v", r)
	}
}

func TestSummarizeServices(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	cs := []analyze.WatchedContainer{
		{Name: "p-app-1", Service: "app", Number: 1, Running: true, Method: analyze.WatchAgent, SizeBytes: n(64), UsedBytes: n(10), PeakBytes: n(30)},
		{Name: "p-app-2", Service: "app", Number: 2, Running: true, Method: analyze.WatchDf, SizeBytes: n(64), UsedBytes: n(20), PeakBytes: n(25)},
		{Name: "p-app-3", Service: "app", Number: 3, Running: false, SizeBytes: n(64), PeakBytes: n(50), Error: "gone"},
		{Name: "p-side-1", Service: "side", Running: true, SharesWith: "p-app-1", SharesService: "app", UsedBytes: n(10), PeakBytes: n(30)},
	}
	us := analyze.SummarizeServices(cs)
	if len(us) != 2 {
		t.Fatalf("%d services, want 2", len(us))
	}
	app := us[0]
	if app.Seen != 3 || app.Running != 2 || *app.UsedBytes != 20 || *app.PeakBytes != 50 || len(app.Methods) != 2 || len(app.Errors) != 0 {
		t.Errorf("app: %+v (the exited replica's peak counts, its error does not)", app)
	}
	if us[1].SharesService != "app" {
		t.Errorf("side: %+v", us[1])
	}
}

// TestRecommendKeepsUnseenPeaks: a method that reads once per interval (stats, df) never
// leads to a size below the current one, since a spike between two readings may be what the
// current size is for: a 96 MiB spike held 0.3s every 1.8s reads as 0 with a 1s interval.
// The agent keeps its peaks and may advise less; so may anything when the current size is
// at or above the memory limit.
func TestRecommendKeepsUnseenPeaks(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: app\n    shm_size: 256m\n  capped:\n    image: app\n    shm_size: 256m\n    mem_limit: 256m\n"})
	p := compose.Load(context.Background(), compose.Options{Paths: []string{dir}})[0]
	if !p.Compose {
		t.Fatalf("loading: %v", p.Errors)
	}
	const mib = int64(1 << 20)
	for _, c := range []struct {
		name    string
		service string
		methods []analyze.WatchMethod
		want    int64
		held    string
	}{
		{"df", "app", []analyze.WatchMethod{analyze.WatchDf}, 256 * mib, "df reads /dev/shm once per --interval"},
		{"stats", "app", []analyze.WatchMethod{analyze.WatchStats}, 256 * mib, "stats reads /dev/shm once per --interval"},
		{"agent and df", "app", []analyze.WatchMethod{analyze.WatchAgent, analyze.WatchDf}, 256 * mib, "df reads"},
		{"no method known", "app", nil, 256 * mib, "no reading is known"},
		{"agent", "app", []analyze.WatchMethod{analyze.WatchAgent}, 64 * mib, ""},
		{"at the memory limit", "capped", []analyze.WatchMethod{analyze.WatchDf}, 64 * mib, ""},
	} {
		r := analyze.Recommend(p, c.service, 0, analyze.Ptr(256*mib), nil, 1.5, c.methods)
		switch {
		case r.RecommendedBytes != c.want || r.ShmSize != analyze.ComposeSize(c.want):
			t.Errorf("%s: recommends %s, want %s", c.name, r.ShmSize, analyze.ComposeSize(c.want))
		case c.held == "" && (r.NoReduction != "" || !r.Change):
			t.Errorf("%s: held (%q), change %v; want the reduction", c.name, r.NoReduction, r.Change)
		case c.held != "" && (!strings.Contains(r.NoReduction, c.held) || !strings.Contains(r.NoReduction, "the peak read gives 64m") || r.Change):
			t.Errorf("%s: no_reduction %q, change %v; want it held, saying %q", c.name, r.NoReduction, r.Change, c.held)
		}
	}
	// A peak that asks for more is advised whatever the method.
	if r := analyze.Recommend(p, "app", 300*mib, analyze.Ptr(256*mib), nil, 1.5, []analyze.WatchMethod{analyze.WatchDf}); r.ShmSize != "512m" || r.NoReduction != "" || !r.Change {
		t.Errorf("a larger peak read by df: %+v", r)
	}
}
