package rules_test

import (
	"context"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// TestProbeRules feeds the probe rules measurements as the probe reports them (data, not a
// fake daemon: the real-engine tests live in package probe and cmd) and checks which
// findings appear, where.
func TestProbeRules(t *testing.T) {
	p := compose.Load(context.Background(), compose.Options{Paths: []string{"../../testdata/demo"}})[0]
	if len(p.Errors) > 0 {
		t.Fatal(p.Errors)
	}
	size := func(n int64) *int64 { return &n }
	ms := map[string]*analyze.Measurement{
		// the daemon's default is larger than Docker's 64 MiB
		"gateway": {Exists: true, MeasuredBytes: size(128 << 20)},
		// as predicted
		"embedder": {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 1 << 30, WrittenBytes: 1 << 30, Outcome: analyze.WriteOK}},
		// within 1%
		"trainer":   {Exists: true, MeasuredBytes: size(2<<30 - 1<<20), Write: &analyze.Write{TargetBytes: 2<<30 + 256<<20, WrittenBytes: 1536 << 20, Outcome: analyze.WriteOOMKilled}},
		"scraper":   {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 2 << 30, WrittenBytes: 64 << 20, Outcome: analyze.WriteENOSPC}},
		"pgvector":  {Exists: true, MeasuredBytes: size(12 << 30), Write: &analyze.Write{TargetBytes: 128 << 20, WrittenBytes: 64 << 20, Outcome: analyze.WriteSIGBUS}},
		"evaluator": {CreateError: "Error response from daemon: non-shareable IPC (hint: use IpcMode:shareable for the donor container)"},
	}
	got := map[string][]string{}
	for _, f := range rules.CheckMeasurements(p, analyze.Config{}, ms) {
		got[f.Service] = append(got[f.Service], f.Rule)
		if f.Line == 0 {
			t.Errorf("%s %s not located", f.Service, f.Rule)
		}
	}
	want := map[string][]string{
		"gateway":   {"SHM201"},
		"trainer":   {"SHM204"},
		"scraper":   {"SHM202"},
		"pgvector":  {"SHM203"},
		"evaluator": {"SHM205"},
	}
	for svc, rules := range want {
		if len(got[svc]) != len(rules) || got[svc][0] != rules[0] {
			t.Errorf("%s: got %v, want %v", svc, got[svc], rules)
		}
	}
	for svc := range got {
		if _, ok := want[svc]; !ok {
			t.Errorf("%s: unexpected %v", svc, got[svc])
		}
	}
	// A daemon default above what the stack would be told to set: the advice keeps it.
	for _, f := range rules.CheckMeasurements(p, analyze.Config{}, map[string]*analyze.Measurement{"gateway": {Exists: true, MeasuredBytes: size(4 << 30)}}) {
		for _, n := range advisedSizes(t, f.Remediation) {
			if n < 4<<30 {
				t.Errorf("%s %s: measured 4 GiB, remediation advises %s: %s", f.Service, f.Rule, analyze.FormatSize(n), f.Remediation)
			}
		}
	}
	if len(rules.Check(p, analyze.Config{})) == 0 || len(rules.CheckMeasurements(p, analyze.Config{}, map[string]*analyze.Measurement{})) != 0 {
		t.Error("static and probe rules are not kept apart")
	}
}
