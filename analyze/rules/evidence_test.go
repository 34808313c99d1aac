package rules_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestReproductionsRegistry: a probe rule reproduces only static rules of the registry.
func TestReproductionsRegistry(t *testing.T) {
	for _, r := range rules.All {
		if len(r.Reproduces) > 0 && !r.Probe {
			t.Errorf("%s is no probe rule but reproduces %v", r.ID, r.Reproduces)
		}
		for _, rep := range r.Reproduces {
			if s := rules.ByID(rep.Rule); s == nil || s.Probe {
				t.Errorf("%s reproduces %s, which is no static rule", r.ID, rep.Rule)
			}
		}
	}
}

// TestWithEvidence feeds the demo's probe rules the measurements the probe reports on a
// real engine for it (data, as TestProbeRules does): each problem the static model predicted
// is reported once, by its static rule, with the measurement as evidence; the probe's
// findings stand alone where nothing predicted them.
func TestWithEvidence(t *testing.T) {
	p := compose.Load(context.Background(), compose.Options{Paths: []string{"../../testdata/demo"}})[0]
	if len(p.Errors) > 0 {
		t.Fatal(p.Errors)
	}
	size := func(n int64) *int64 { return &n }
	ms := map[string]*analyze.Measurement{
		"trainer":   {Exists: true, MeasuredBytes: size(2 << 30), Write: &analyze.Write{TargetBytes: 2<<30 + 256<<20, WrittenBytes: 1536 << 20, Outcome: analyze.WriteOOMKilled}},
		"scraper":   {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 2 << 30, WrittenBytes: 64 << 20, Outcome: analyze.WriteENOSPC}},
		"evaluator": {CreateError: "Error response from daemon: can't join IPC of container trainer: non-shareable IPC (hint: use IpcMode:shareable for the donor container)"},
		// no rule predicts a daemon default above 64 MiB, nor a refusal for the gateway
		"gateway":  {Exists: true, MeasuredBytes: size(128 << 20)},
		"pgvector": {CreateError: "Error response from daemon: some other refusal"},
	}
	static := rules.Check(p, analyze.Config{})
	probed := rules.CheckMeasurements(p, analyze.Config{}, ms)
	got := analyze.WithEvidence(rules.All, p, static, probed, ms)

	type key struct{ service, rule, evidence string }
	var have []key
	for _, f := range got {
		k := key{f.Service, f.Rule, ""}
		if f.Evidence != nil {
			k.evidence = f.Evidence.Rule
		}
		have = append(have, k)
	}
	for _, want := range []key{
		{"trainer", "SHM012", "SHM204"}, {"scraper", "SHM010", "SHM202"}, {"evaluator", "SHM006", "SHM205"},
		{"gateway", "SHM201", ""}, {"pgvector", "SHM205", ""},
	} {
		if !slices.Contains(have, want) {
			t.Errorf("no %+v in %+v", want, have)
		}
	}
	for _, k := range have {
		if k.rule == "SHM204" || k.rule == "SHM202" || k.rule == "SHM205" && k.service == "evaluator" {
			t.Errorf("%s %s is reported beside the static finding it reproduces", k.service, k.rule)
		}
	}
	if len(got) != len(static)+2 {
		t.Errorf("%d findings, want the %d static ones and 2 the model did not predict", len(got), len(static))
	}
	for _, f := range got {
		switch f.Service + " " + f.Rule {
		case "scraper SHM010":
			// The probe wrote 2 GiB, a target the doctor chose for Chromium, whose parameters
			// give no size: the ENOSPC measures the prediction, and the info stays an info.
			if f.Severity != analyze.Info || f.Evidence.Write == nil || f.Evidence.Write.Outcome != analyze.WriteENOSPC || !strings.Contains(f.Evidence.Message, "ENOSPC") {
				t.Errorf("scraper: %v %+v", f.Severity, f.Evidence)
			}
		case "evaluator SHM006":
			if !strings.Contains(f.Evidence.CreateError, "non-shareable IPC") {
				t.Errorf("evaluator: %+v", f.Evidence)
			}
		}
	}

	// An ignored shm_size is what makes the joiner's write fail: SHM002 predicted it.
	q := compose.Load(context.Background(), compose.Options{Paths: []string{"../../testdata/rules/SHM002"}})[0]
	if len(q.Errors) > 0 {
		t.Fatal(q.Errors)
	}
	jms := map[string]*analyze.Measurement{"joiner": {Exists: true, MeasuredBytes: size(1 << 30), Write: &analyze.Write{TargetBytes: 4 << 30, WrittenBytes: 1 << 30, Outcome: analyze.WriteENOSPC}}}
	joined := analyze.WithEvidence(rules.All, q, rules.Check(q, analyze.Config{}), rules.CheckMeasurements(q, analyze.Config{}, jms), jms)
	if !slices.ContainsFunc(joined, func(f analyze.Finding) bool {
		return f.Service == "joiner" && f.Rule == "SHM002" && f.Evidence != nil && f.Evidence.Rule == "SHM202"
	}) || slices.ContainsFunc(joined, func(f analyze.Finding) bool { return f.Rule == "SHM202" }) {
		t.Errorf("joiner: the ENOSPC of the ignored shm_size is not SHM002's evidence: %+v", joined)
	}

	// A suppressed prediction does not swallow the measurement the user did not silence.
	for i := range static {
		if static[i].Rule == "SHM012" {
			static[i].Suppressed = &analyze.Suppression{Kind: analyze.SuppressComment}
		}
	}
	got = analyze.WithEvidence(rules.All, p, static, probed, ms)
	if !slices.ContainsFunc(got, func(f analyze.Finding) bool { return f.Rule == "SHM204" && f.Suppressed == nil }) {
		t.Error("SHM204 merged into a suppressed SHM012")
	}
}

// TestEvidenceSeverity: one problem has one severity whether the probe ran or not. The
// write probe's ENOSPC or OOM kill, reached while filling a target the doctor chose, is the
// prediction measured and keeps the static finding's severity; a refused container, and a
// failure short of a need the service declares, are the service's own failure and raise it.
func TestEvidenceSeverity(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": `services:
  small:
    image: nginx:1.27
    mem_limit: 32m
  hosted:
    image: nginx:1.27
    ipc: host
    shm_size: 1g
  chrome:
    image: selenium/standalone-chrome:126.0
  declared:
    image: selenium/standalone-chrome:126.0
    x-shmdoctor: {need: 1g}
`})
	p := compose.Load(context.Background(), compose.Options{Paths: []string{dir}})[0]
	if len(p.Errors) > 0 {
		t.Fatal(p.Errors)
	}
	size := func(n int64) *int64 { return &n }
	ms := map[string]*analyze.Measurement{
		// filling the 64 MiB default: nothing is known to write there
		"small": {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 64 << 20, WrittenBytes: 30 << 20, Outcome: analyze.WriteOOMKilled}},
		// docker refused the settings: compose up fails the same way
		"hosted": {CreateError: "Error response from daemon: cannot set ShmSize when IpcMode is host"},
		// the write target is the doctor's; the declared need is the service's own
		"chrome":   {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 2 << 30, WrittenBytes: 64 << 20, Outcome: analyze.WriteENOSPC}},
		"declared": {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 1 << 30, WrittenBytes: 64 << 20, Outcome: analyze.WriteSIGBUS}},
	}
	static := rules.Check(p, analyze.Config{})
	probed := rules.CheckMeasurements(p, analyze.Config{}, ms)
	got := analyze.WithEvidence(rules.All, p, static, probed, ms)
	severity := map[string]analyze.Severity{}
	for _, f := range static {
		severity[f.Service+" "+f.Rule] = f.Severity
	}
	for _, c := range []struct {
		key    string
		static analyze.Severity // what the static finding must be, for the case to test anything
		want   analyze.Severity
	}{
		{"small SHM012", analyze.Info, analyze.Info},
		{"hosted SHM001", analyze.Warning, analyze.Error},
		{"chrome SHM010", analyze.Info, analyze.Info},
		{"declared SHM010", analyze.Warning, analyze.Error},
	} {
		if severity[c.key] != c.static {
			t.Errorf("%s: static severity %v, want %v (the fixture no longer tests this case)", c.key, severity[c.key], c.static)
		}
		i := slices.IndexFunc(got, func(f analyze.Finding) bool { return f.Service+" "+f.Rule == c.key })
		if i < 0 || got[i].Evidence == nil {
			t.Errorf("%s: no finding with the probe's evidence in %+v", c.key, got)
			continue
		}
		if got[i].Severity != c.want {
			t.Errorf("%s reproduced by %s: severity %v, want %v", c.key, got[i].Evidence.Rule, got[i].Severity, c.want)
		}
	}
	if len(got) != len(static) {
		t.Errorf("%d findings, want the %d static ones: each measurement is a static finding's evidence", len(got), len(static))
	}

	// The raises themselves, on the plans' facts.
	plan := func(service string) *analyze.ShmPlan { return p.Plan(service) }
	if analyze.BelowDeclaredNeed.Test(ms["chrome"], plan("chrome")) || !analyze.BelowDeclaredNeed.Test(ms["declared"], plan("declared")) {
		t.Error("BelowDeclaredNeed: a write short of the doctor's target raised, or one short of a declared need did not")
	}
	needy := &analyze.ShmPlan{MemLimit: size(32 << 20), Need: size(48 << 20)}
	if analyze.LimitBelowNeed.Test(ms["small"], plan("small")) || !analyze.LimitBelowNeed.Test(ms["small"], needy) {
		t.Error("LimitBelowNeed: an OOM kill filling the default raised, or one at a limit below the need did not")
	}
}
