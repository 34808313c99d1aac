package suppress

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

func TestReadConfigFile(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{ConfigFileName: `# shmdoctor settings for this repository
policy: isolation
target: swarm
fail-on: error
need: 2g
severity:
  SHM020: warning
  shm030: error
ignore:
  - SHM040 no stack here is deployed with docker stack deploy
  - SHM010,SHM030
ignore-paths:
  - legacy/** frozen until the migration
  - "**/compose.ci.yaml"
`})
	t.Chdir(dir)
	c, err := ReadConfigFile(ConfigFileName)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != ConfigFileName || c.Policy != analyze.PolicyIsolation || c.Target != analyze.TargetSwarm || c.FailOn != "error" || c.Need != "2g" {
		t.Errorf("settings: %+v", c)
	}
	if c.Severity["SHM020"] != analyze.Warning || c.Severity["SHM030"] != analyze.Error || len(c.Severity) != 2 {
		t.Errorf("severity: %v", c.Severity)
	}
	if len(c.Ignore) != 4 {
		t.Fatalf("ignore: %+v", c.Ignore)
	}
	abs, _ := filepath.Abs(".")
	first, paths := c.Ignore[0], c.Ignore[2]
	if strings.Join(first.Rules, ",") != "SHM040" || first.Reason != "no stack here is deployed with docker stack deploy" || first.Pos != (analyze.Pos{File: ConfigFileName, Line: 10, Column: 5}) {
		t.Errorf("ignore entry: %+v", first)
	}
	if strings.Join(c.Ignore[1].Rules, ",") != "SHM010,SHM030" {
		t.Errorf("two rules: %+v", c.Ignore[1])
	}
	if paths.Glob != "legacy/**" || paths.Reason != "frozen until the migration" || paths.Dir != abs || paths.Rules != nil || paths.Pos.Line != 13 {
		t.Errorf("ignore-paths entry: %+v", paths)
	}
	if c.Ignore[3].Glob != "**/compose.ci.yaml" || c.Ignore[3].Reason != "" {
		t.Errorf("quoted glob: %+v", c.Ignore[3])
	}

	// a config written on Windows: backslashes separate folders on every system
	win := testutil.WriteFiles(t, map[string]string{ConfigFileName: "ignore-paths:\n  - legacy\\old\\*.yaml frozen\n"})
	if c, err := ReadConfigFile(filepath.Join(win, ConfigFileName)); err != nil || c.Ignore[0].Glob != "legacy/old/*.yaml" {
		t.Errorf("backslashes: %+v, %v", c, err)
	}

	for _, empty := range []string{"", "# nothing yet\n", "---\n"} {
		dir := testutil.WriteFiles(t, map[string]string{ConfigFileName: empty})
		if c, err := ReadConfigFile(filepath.Join(dir, ConfigFileName)); err != nil || c.Policy != "" || c.Ignore != nil {
			t.Errorf("%q: %+v, %v", empty, c, err)
		}
	}
}

// TestReadConfigFileErrors: every mistake is one located line, file:line:col first.
func TestReadConfigFileErrors(t *testing.T) {
	for _, c := range []struct {
		name, content string
		line, col     int
		msg           string
	}{
		{"unknown key", "policy: stability\nfial-on: error\n", 2, 1, `unknown key "fial-on": use policy, target`},
		{"bad policy", "policy: safe\n", 1, 9, `policy "safe": use stability or isolation`},
		{"bad target", "target: k8s\n", 1, 9, "use compose, swarm or podman"},
		{"bad fail-on", "fail-on: loud\n", 1, 10, "use error, warning, info or never"},
		{"bad need", "need: lots\n", 1, 7, "need:"},
		{"list for a value", "policy: [stability]\n", 1, 9, "policy must be a single value"},
		{"severity of an unknown rule", "severity:\n  SHM999: error\n", 2, 3, "SHM999 is not a rule ID"},
		{"severity off", "severity:\n  SHM040: off\n", 2, 11, "ignore: [SHM040] silences a rule"},
		{"severity not a mapping", "severity: [SHM040]\n", 1, 11, "severity must be a mapping"},
		{"ignore not a list", "ignore: SHM040\n", 1, 9, "ignore must be a list"},
		{"ignore an unknown rule", "ignore:\n  - SHM040\n  - SHM04 typo\n", 3, 5, "SHM04 is not a rule ID"},
		{"ignore without a rule", "ignore:\n  - because\n", 2, 5, "because is not a rule ID"},
		{"ignore entry not a string", "ignore:\n  - {rule: SHM040}\n", 2, 5, "ignore entries are strings"},
		{"absolute ignore-paths", "ignore-paths:\n  - /srv/legacy\n", 2, 5, "relative to the config file's folder"},
		{"bad glob", "ignore-paths:\n  - legacy/[a\n", 2, 5, "bad glob"},
		{"windows absolute ignore-paths", "ignore-paths:\n  - 'C:\\srv\\legacy'\n", 2, 5, "relative to the config file's folder"},
		{"twice", "policy: stability\npolicy: isolation\n", 2, 1, "policy is given twice"},
		{"not a mapping", "- SHM040\n", 1, 1, "a config file is a mapping"},
		{"two documents", "policy: stability\n---\ntarget: swarm\n", 2, 1, "one YAML document"},
		{"bad yaml", "policy: [stability\n", 1, 0, "invalid YAML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, map[string]string{ConfigFileName: c.content})
			t.Chdir(dir)
			_, err := ReadConfigFile(ConfigFileName)
			var le *analyze.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not located", err)
			}
			if le.File != ConfigFileName || le.Line != c.line || (c.col != 0 && le.Column != c.col) {
				t.Errorf("error at %s, want %s:%d:%d", le.Pos, ConfigFileName, c.line, c.col)
			}
			if !strings.Contains(le.Msg, c.msg) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), le.Pos.String()+": ") {
				t.Errorf("error %q does not say %q on one located line", err, c.msg)
			}
		})
	}
	if _, err := ReadConfigFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestFindConfigFile(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{
		ConfigFileName:                    "policy: isolation\n",
		"a/b/c/README":                    "no config here\n",
		"a/b/" + ConfigFileName + "/keep": "a folder of that name is not a config file\n",
		"x/" + ConfigFileName:             "target: swarm\n",
		"y/.shmdoctor.yml":                "target: swarm\n",
		"z/.shmdoctor.yml":                "target: swarm\n",
		"z/" + ConfigFileName:             "target: swarm\n",
	})
	for from, want := range map[string]string{
		"a/b/c": ConfigFileName, // upward, past a folder named like the file
		"a":     ConfigFileName,
		".":     ConfigFileName,
		"x":     "x/" + ConfigFileName, // the nearest wins
		"y":     "y/.shmdoctor.yml",    // .yml as well as .yaml
	} {
		got, err := FindConfigFile(filepath.Join(dir, from))
		if err != nil || got != filepath.Join(dir, want) {
			t.Errorf("from %s: %q, %v; want %s", from, got, err, want)
		}
	}
	if _, err := FindConfigFile(filepath.Join(dir, "z")); err == nil || !strings.Contains(err.Error(), "both there") {
		t.Errorf("a folder with .shmdoctor.yaml and .shmdoctor.yml: %v, want an error", err)
	}
	// Above a folder without one, the search goes on to the root: whatever it finds is
	// not below that folder.
	none := t.TempDir()
	if got, err := FindConfigFile(none); err != nil || strings.HasPrefix(got, none) {
		t.Errorf("no config under %s: %q, %v", none, got, err)
	}
}
