package suppress_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/analyze/suppress"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

func TestParseIgnore(t *testing.T) {
	for _, c := range []struct {
		in, ids, reason, err string
	}{
		{in: "SHM020", ids: "SHM020"},
		{in: "shm020,SHM012 the reason, with commas", ids: "SHM020 SHM012", reason: "the reason, with commas"},
		{in: "SHM020, SHM012", ids: "SHM020 SHM012"},
		{in: "SHM020 SHM012\tbuilt elsewhere", ids: "SHM020 SHM012", reason: "built elsewhere"},
		{in: "SHM020 SHM020", ids: "SHM020"},
		{in: "SHM020 see #12 # want SHM090", ids: "SHM020", reason: "see #12"},
		{in: "SHM020 shm is fine", ids: "SHM020", reason: "shm is fine"},
		{in: "", err: "name the rules"},
		{in: "  ", err: "name the rules"},
		{in: "SHM999", err: "SHM999 is not a rule ID"},
		{in: "SHM020,SHM999 typo", err: "SHM999 is not a rule ID"},
		{in: "everything", err: "everything is not a rule ID"},
		// a rule's name stands for its ID
		{in: "shm-size-ignored-ipc-host,ipc-host kept for podman", ids: "SHM001 SHM020", reason: "kept for podman"},
		{in: "ipc-host SHM020", ids: "SHM020"},
	} {
		ids, reason, err := suppress.ParseIgnore(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseIgnore(%q) error %v, want %q", c.in, err, c.err)
			}
		case err != nil || strings.Join(ids, " ") != c.ids || reason != c.reason:
			t.Errorf("parseIgnore(%q) = %v, %q, %v; want %s, %q", c.in, ids, reason, err, c.ids, c.reason)
		}
	}
}

func loadDir(t *testing.T, files map[string]string, opts compose.Options) *analyze.Project {
	t.Helper()
	opts.Paths = []string{testutil.WriteFiles(t, files)}
	ps := compose.Load(context.Background(), opts)
	if len(ps) != 1 || len(ps[0].Errors) > 0 {
		t.Fatalf("load: %+v", ps[0].Errors)
	}
	return ps[0]
}

// rulesAt lists "RULE@line" for findings, "RULE@line!" for suppressed ones.
func rulesAt(fs []analyze.Finding) []string {
	var out []string
	for _, f := range fs {
		s := f.Rule + "@" + strconv.Itoa(f.Line)
		if f.Suppressed != nil {
			s += "!"
		}
		out = append(out, s)
	}
	return out
}

// TestDirectivesAreComments: the text of a directive inside a string or a block scalar
// silences nothing and is not judged stale.
func TestDirectivesAreComments(t *testing.T) {
	p := loadDir(t, map[string]string{"compose.yaml": `services:
  a:
    image: alpine
    ipc: host
    command: "echo # shmdoctor-ignore SHM020 not a comment"
    entrypoint: |
      sh -c 'x'
      # shmdoctor-ignore SHM999 inside a block scalar
    labels:
      note: '# shmdoctor-ignore SHM020'
`}, compose.Options{})
	if got := rulesAt(rules.Check(p, analyze.Config{})); !slices.Equal(got, []string{"SHM020@4"}) {
		t.Errorf("findings %v, want SHM020@4 alone", got)
	}
}

// TestDirectiveAtEnd: a comment line that no line follows covers nothing, and SHM090 says
// so at the comment rather than pointing past the end of the file.
func TestDirectiveAtEnd(t *testing.T) {
	for _, tail := range []string{"", "\n", "\n# a comment\n"} {
		p := loadDir(t, map[string]string{"compose.yaml": "services:\n  a:\n    image: alpine\n# shmdoctor-ignore SHM010 nothing below" + tail}, compose.Options{})
		fs := rules.Check(p, analyze.Config{})
		if len(fs) != 1 || fs[0].Rule != "SHM090" || fs[0].Line != 4 || !strings.HasSuffix(fs[0].Message, "matches no finding below it: the file ends there") {
			t.Errorf("tail %q: findings %+v", tail, fs)
		}
	}
}

// TestSuppressProfiles: a comment in a service that --profile leaves out is not judged.
func TestSuppressProfiles(t *testing.T) {
	files := map[string]string{"compose.yaml": `services:
  web:
    image: alpine
  debug:
    profiles: [debug]
    image: alpine # shmdoctor-ignore SHM014 stale
`}
	if got := rulesAt(rules.Check(loadDir(t, files, compose.Options{}), analyze.Config{})); !slices.Equal(got, []string{"SHM090@6"}) {
		t.Errorf("every service analysed: %v, want SHM090@6", got)
	}
	if got := rulesAt(rules.Check(loadDir(t, files, compose.Options{Profiles: []string{"web"}}), analyze.Config{})); len(got) != 0 {
		t.Errorf("debug left out: %v, want nothing", got)
	}
}

// TestSuppressProbeRules: a suppression of a probe rule is judged in the probe's pass, and
// only for the services the probe measured.
func TestSuppressProbeRules(t *testing.T) {
	p := loadDir(t, map[string]string{"compose.yaml": `services:
  a: # shmdoctor-ignore SHM201 the daemon's default-shm-size is 128m
    image: alpine
  b: # shmdoctor-ignore SHM202 the probe's target is not this job's
    image: alpine
`}, compose.Options{})
	if got := rulesAt(rules.Check(p, analyze.Config{})); len(got) != 0 {
		t.Errorf("static pass: %v, want nothing", got)
	}
	size := func(n int64) *int64 { return &n }
	only := map[string]*analyze.Measurement{"a": {Exists: true, MeasuredBytes: size(128 << 20)}}
	if got := rulesAt(rules.CheckMeasurements(p, analyze.Config{}, only)); !slices.Equal(got, []string{"SHM201@2!"}) {
		t.Errorf("a measured: %v, want SHM201 suppressed", got)
	}
	both := map[string]*analyze.Measurement{"a": only["a"], "b": {Exists: true, MeasuredBytes: size(64 << 20), Write: &analyze.Write{TargetBytes: 1 << 20, WrittenBytes: 1 << 20, Outcome: analyze.WriteOK}}}
	got := rules.CheckMeasurements(p, analyze.Config{}, both)
	if !slices.Equal(rulesAt(got), []string{"SHM201@2!", "SHM090@4"}) || got[1].Service != "b" {
		t.Errorf("both measured: %v, want b's SHM202 stale", rulesAt(got))
	}
}

// TestConfigSuppressions: the config file's severities, rule and path ignores, below
// what the source says.
func TestConfigSuppressions(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		"stacks/app/compose.yaml": "services:\n  a:\n    image: alpine\n    ipc: host\n    shm_size: 1g # shmdoctor-ignore SHM001 from the comment\n",
		"legacy/old/compose.yaml": "services:\n  b:\n    image: alpine\n    build: {context: ., shm_size: 1g}\n",
	})
	cfgPos := analyze.Pos{File: ".shmdoctor.yaml", Line: 2, Column: 5}
	cfg := analyze.Config{
		Severity: map[string]analyze.Severity{"SHM020": analyze.Error, "SHM004": analyze.Info},
		Ignore: []analyze.ConfigIgnore{
			{Rules: []string{"SHM001", "SHM020"}, Dir: dir, Reason: "from the config", Pos: cfgPos},
			{Glob: "legacy/**", Dir: dir, Reason: "frozen", Pos: cfgPos},
		},
	}
	var got []analyze.Finding
	for _, p := range compose.Load(context.Background(), compose.Options{Paths: []string{filepath.Join(dir, "stacks/app"), filepath.Join(dir, "legacy/old")}}) {
		got = append(got, rules.Check(p, cfg)...)
	}
	want := map[string]struct {
		sev    analyze.Severity
		kind   analyze.SuppressionKind
		reason string
	}{
		"SHM001": {analyze.Warning, analyze.SuppressComment, "from the comment"},
		"SHM020": {analyze.Error, analyze.SuppressConfig, "from the config"},
		"SHM004": {analyze.Info, analyze.SuppressConfig, "frozen"},
	}
	if len(got) != len(want) {
		t.Fatalf("findings %v", rulesAt(got))
	}
	for _, f := range got {
		w := want[f.Rule]
		if f.Severity != w.sev || f.Suppressed == nil || f.Suppressed.Kind != w.kind || f.Suppressed.Reason != w.reason {
			t.Errorf("%s: severity %s, suppressed %+v; want %s by %s", f.Rule, f.Severity, f.Suppressed, w.sev, w.kind)
		}
		if f.Suppressed != nil && f.Suppressed.Kind == analyze.SuppressConfig && f.Suppressed.Pos != cfgPos {
			t.Errorf("%s: config suppression at %s", f.Rule, f.Suppressed.Pos)
		}
	}
	// ignore: [SHM090] silences the stale reports too.
	p := loadDir(t, map[string]string{"compose.yaml": "services:\n  a: # shmdoctor-ignore SHM001\n    image: alpine\n"}, compose.Options{})
	got = rules.Check(p, analyze.Config{Ignore: []analyze.ConfigIgnore{{Rules: []string{"SHM090"}}}})
	if len(got) != 1 || got[0].Rule != "SHM090" || got[0].Suppressed == nil {
		t.Errorf("SHM090 under ignore: %+v", got)
	}
}

func TestGlobMatch(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		glob, file string
		want       bool
	}{
		{"legacy", "legacy/compose.yaml", true},
		{"legacy/", "legacy/a/compose.yaml", true},
		{"legacy/**", "legacy/a/b/compose.yaml", true},
		{"**/compose.gpu.yaml", "a/b/compose.gpu.yaml", true},
		{"**/compose.gpu.yaml", "compose.gpu.yaml", true},
		{"*/compose.yaml", "a/compose.yaml", true},
		{"*/compose.yaml", "a/b/compose.yaml", false},
		{"leg*", "legacy/compose.yaml", true},
		{"legacy", "legacyx/compose.yaml", false},
		{"deploy/*.yaml", "deploy/k8s/a.yaml", false},
		{"**", "anything/at/all.yaml", true},
	} {
		if got := analyze.PathIgnored(c.glob, dir, filepath.Join(dir, c.file)); got != c.want {
			t.Errorf("%s matches %s: %v, want %v", c.glob, c.file, got, c.want)
		}
	}
	if analyze.PathIgnored("**", dir, filepath.Join(filepath.Dir(dir), "outside.yaml")) || analyze.PathIgnored("**", dir, analyze.StdinName) {
		t.Error("a file outside the config's folder, or standard input, matched")
	}
}
