package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"go.yaml.in/yaml/v3"
)

// TestBadInput gives the loader broken projects: each must give one located, one-line error
// naming the file (and the line where there is one), and never stop the other projects.
func TestBadInput(t *testing.T) {
	// The bomb starts below the services: it is reported at its first alias, line 5.
	bomb := "services:\n  a:\n    image: x\nx-a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += "x-" + n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	cases := []struct {
		name  string
		files map[string]string
		file  string // the file the error must name
		line  int    // 0: no line to check
		msg   string // a part of the message
	}{
		{"yaml syntax", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    shm_size: [1\n"}, "compose.yaml", 4, "invalid YAML"},
		{"bad unit", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    shm_size: 16 gigs\n"}, "compose.yaml", 4, "gigs"},
		{"wrong type", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    mem_limit: true\n"}, "compose.yaml", 4, "mem_limit"},
		{"missing extends file", map[string]string{"compose.yaml": "services:\n  a:\n    extends:\n      file: base.yaml\n      service: b\n"}, "compose.yaml", 4, "base.yaml"},
		{"missing include", map[string]string{"compose.yaml": "include:\n  - sub/compose.yaml\nservices:\n  a:\n    image: x\n"}, "compose.yaml", 2, "sub/compose.yaml"},
		{"include cycle", map[string]string{"compose.yaml": "include:\n  - b.yaml\nservices:\n  a:\n    image: x\n", "b.yaml": "include:\n  - compose.yaml\nservices:\n  b:\n    image: x\n"}, "compose.yaml", 0, "include cycle"},
		{"binary", map[string]string{"compose.yaml": "services:\x00\x01\x02\xff"}, "compose.yaml", 0, "binary"},
		{"huge", map[string]string{"compose.yaml": "services: {}\n" + strings.Repeat("#", source.MaxFileSize)}, "compose.yaml", 0, "MiB"},
		{"alias bomb", map[string]string{"compose.yaml": bomb}, "compose.yaml", 5, "alias"},
		{"alias bomb in a manifest", map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + strings.TrimPrefix(bomb, "services:\n  a:\n    image: x\n")}, "pod.yaml", 6, "alias"},
		{"ipc to a missing service", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    ipc: service:ghost\n"}, "compose.yaml", 4, "ghost"},
		{"ipc cycle", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    ipc: service:b\n  b:\n    image: x\n    ipc: service:a\n"}, "compose.yaml", 4, "cycle"},
		{"bad x-shmdoctor", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    x-shmdoctor:\n      need: lots\n"}, "compose.yaml", 5, "need"},
		{"bad dataloader", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    x-shmdoctor:\n      dataloader: {workers: many, batch_bytes: 1m}\n"}, "compose.yaml", 5, "workers"},
		{"unknown ignore", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    x-shmdoctor:\n      ignore: [SHM999]\n"}, "compose.yaml", 5, "SHM999"},
		{"unknown ignore in a comment", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    ipc: host # shmdoctor-ignore SHM999 typo\n"}, "compose.yaml", 4, "SHM999 is not a rule ID"},
		{"comment ignore without a rule", map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    # shmdoctor-ignore\n    ipc: host\n"}, "compose.yaml", 4, "name the rules"},
		{"comment ignore with a reason only", map[string]string{"compose.yaml": "services:\n  a: # shmdoctor-ignore it is fine\n    image: x\n"}, "compose.yaml", 2, "it is not a rule ID"},
		{"bad comment in an included file", map[string]string{"compose.yaml": "include: [sub.yaml]\nservices:\n  a:\n    image: x\n", "sub.yaml": "services:\n  b:\n    image: x\n    ipc: host # shmdoctor-ignore shm20\n"}, "sub.yaml", 4, "shm20 is not a rule ID"},
		{"empty file", map[string]string{"compose.yaml": ""}, "compose.yaml", 0, "empty"},
		{"not a mapping", map[string]string{"compose.yaml": "- a\n- b\n"}, "compose.yaml", 0, "mapping"},
	}
	good := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  ok:\n    image: alpine\n"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, c.files)
			projects := Load(context.Background(), Options{Paths: []string{dir, good}})
			if len(projects) != 2 {
				t.Fatalf("%d projects", len(projects))
			}
			if !projects[1].Compose || len(projects[1].Errors) > 0 {
				t.Fatalf("the good project was not analysed: %v", projects[1].Errors)
			}
			errs := projects[0].Errors
			if len(errs) == 0 {
				t.Fatalf("no error")
			}
			e := errs[0]
			if filepath.Base(e.File) != c.file || (c.line != 0 && e.Line != c.line) {
				t.Errorf("error at %s, want %s:%d: %s", e.Pos, c.file, c.line, e.Msg)
			}
			if !strings.Contains(e.Msg, c.msg) || strings.Contains(e.Msg, "\n") {
				t.Errorf("message %q does not say %q in one line", e.Msg, c.msg)
			}
		})
	}
}

// TestPartialFile analyses an override file alone, as CI jobs check them, with a note.
func TestPartialFile(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"gpu.yaml": "services:\n  app:\n    shm_size: 64m\n    command: torchrun --nproc_per_node 4 train.py\n    deploy:\n      resources:\n        reservations:\n          devices: [{driver: nvidia, count: 4, capabilities: [gpu]}]\n"})
	p := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, "gpu.yaml")}})[0]
	if len(p.Errors) > 0 || !p.Compose {
		t.Fatalf("errors: %v", p.Errors)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "neither an image nor a build context") {
		t.Errorf("no note about the partial file: %q", p.Notes)
	}
	if f := rules.Check(p, analyze.Config{}); !testutil.HasFinding(f, "SHM011", "app") {
		t.Errorf("the partial file was not analysed: %+v", f)
	}
	strict := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, "gpu.yaml")}, StrictEnv: true})[0]
	if len(strict.Errors) == 0 {
		t.Error("--strict-env accepted a project docker compose refuses")
	}
}

// TestUnsetVariables checks that missing secrets do not stop the analysis and that the keys
// depending on them are marked, not guessed.
func TestUnsetVariables(t *testing.T) {
	t.Setenv("SHMDOCTOR_TEST_SET", "1g")
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": `services:
  nim:
    image: nvcr.io/nim/meta/llama3-8b-instruct:latest
    shm_size: ${NIM_SHM}
    mem_limit: ${MEM_LIMIT}
    env_file: secrets.env
    ports: ["${PORT}:${PORT}", "8080:${HTTP_PORT}", "${BIND_IP}:8000:8000"]
    extra_hosts: ["db:${DB_IP}", "cache:${CACHE_IP}"]
    healthcheck:
      test: ${HEALTHCHECK}
    volumes:
      - ${MODEL_DIRECTORY}:/opt/nim/.cache
    environment:
      NGC_API_KEY: ${NGC_API_KEY:?NGC_API_KEY is required}
  ok:
    image: alpine
    shm_size: ${SHMDOCTOR_TEST_SET}
    mem_limit: ${UNSET_WITH_DEFAULT:-4g}
    env_file:
      - path: optional.env
        required: false
      - ${ENV_DIR}/app.env
`})
	p := Load(context.Background(), Options{Paths: []string{dir}})[0]
	if len(p.Errors) > 0 {
		t.Fatalf("errors: %v", p.Errors)
	}
	nim, ok := p.Plan("nim"), p.Plan("ok")
	if nim.Configured != nil || nim.MemLimit != nil || nim.Predicted != nil {
		t.Errorf("values of unset variables were guessed: %+v", nim)
	}
	if got := nim.DependsOn("shm_size"); len(got) != 1 || got[0] != "NIM_SHM" {
		t.Errorf("shm_size depends on %v", got)
	}
	if got := nim.DependsOn("mem_limit"); len(got) != 1 || got[0] != "MEM_LIMIT" {
		t.Errorf("mem_limit depends on %v", got)
	}
	if *ok.Configured != 1<<30 || *ok.MemLimit != 4<<30 || ok.Unresolved != nil {
		t.Errorf("set and defaulted variables: %+v", ok)
	}
	notes := strings.Join(p.Notes, "\n")
	for _, v := range []string{"NIM_SHM", "MEM_LIMIT", "MODEL_DIRECTORY", "NGC_API_KEY", "PORT", "HTTP_PORT", "ENV_DIR", "BIND_IP", "DB_IP", "CACHE_IP", "HEALTHCHECK"} {
		if !strings.Contains(notes, v) {
			t.Errorf("notes do not name %s: %q", v, notes)
		}
	}
	if !strings.Contains(notes, "secrets.env (nim);") || !strings.Contains(notes, "env_file not found: ") || strings.Contains(notes, "optional.env") || strings.Contains(notes, "app.env") {
		t.Errorf("notes about env files: %q", notes)
	}
	if strings.Contains(notes, "UNSET_WITH_DEFAULT") || strings.Contains(notes, "SHMDOCTOR_TEST_SET") {
		t.Errorf("notes name variables that resolved: %q", notes)
	}
	if f := rules.Check(p, analyze.Config{}); testutil.HasFinding(f, "SHM010", "nim") {
		t.Errorf("SHM010 on a shm_size that only depends on an unset variable")
	}
	strict := Load(context.Background(), Options{Paths: []string{dir}, StrictEnv: true})[0]
	if len(strict.Errors) == 0 || !strings.Contains(strict.Errors[0].Msg, "NGC_API_KEY") {
		t.Errorf("--strict-env: %v", strict.Errors)
	}
}

// TestUnsetEverywhere writes an unset variable in place of every value of a compose file
// that uses every kind of field compose-go parses strictly (ports, sizes, durations, numbers,
// booleans, mounts, devices...), in turn: the whole value, then each part between colons. The
// project must load, note the variable and analyse its services, as for any unset value.
func TestUnsetEverywhere(t *testing.T) {
	const unset = "SHMDOCTOR_UNSET_EVERYWHERE"
	src, err := os.ReadFile("../../testdata/load/every-field/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	var values []*yaml.Node
	source.Scalars(&doc, "", func(key string, v *yaml.Node) {
		if key != "name" { // a blank project name is docker compose's own error
			values = append(values, v)
		}
	})
	if len(values) < 140 {
		t.Fatalf("only %d values in the fixture", len(values))
	}
	for _, v := range values {
		orig, style, tag := v.Value, v.Style, v.Tag
		parts := strings.Split(orig, ":")
		variants := map[string]string{"${" + unset + "}": orig} // variant -> the variable's value
		for i := range parts {
			if len(parts) > 1 {
				p := slices.Clone(parts)
				p[i] = "${" + unset + "}"
				variants[strings.Join(p, ":")] = parts[i]
			}
		}
		for variant, value := range variants {
			v.Value, v.Style, v.Tag = variant, yaml.DoubleQuotedStyle, "!!str"
			b, err := yaml.Marshal(&doc)
			v.Value, v.Style, v.Tag = orig, style, tag
			if err != nil {
				t.Fatal(err)
			}
			dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": string(b)})
			p := Load(context.Background(), Options{Paths: []string{dir}})[0]
			where := fmt.Sprintf("line %d %q", v.Line, variant)
			if len(p.Errors) > 0 {
				// Where compose-go refuses the value even with the variable set, docker compose
				// cannot run the file either: the error must then say where and which variable.
				t.Setenv(unset, value)
				set := Load(context.Background(), Options{Paths: []string{dir}})[0]
				os.Unsetenv(unset)
				if len(set.Errors) == 0 {
					t.Errorf("%s: %v", where, p.Errors)
				} else if e := p.Errors[0]; e.Line == 0 || !strings.Contains(e.Msg, unset) {
					t.Errorf("%s: the error does not name the line and the variable: %v", where, e)
				}
				continue
			}
			if !p.Compose {
				t.Errorf("%s: not loaded", where)
				continue
			}
			if len(p.Doc.(*project).model.Services) != 2 {
				t.Errorf("%s: %d services analysed", where, len(p.Doc.(*project).model.Services))
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), unset) {
				t.Errorf("%s: no note names the variable: %q", where, p.Notes)
			}
		}
	}
}

// TestYAMLSyntaxPosition checks that a YAML syntax error is reported at the offending token,
// for each class of error yaml.v3 produces, not where the enclosing construct starts.
func TestYAMLSyntaxPosition(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"bad indentation", "services:\n  a:\n    image: x\n   shm_size: 1g\n", 4, 4, "did not find expected key"},
		{"bad indentation deeper", "services:\n  a:\n    image: x\n    environment:\n      A: 1\n     B: 2\n", 6, 6, "did not find expected key"},
		{"over-indented key", "services:\n  a:\n    image: x\n     shm_size: 1g\n", 4, 14, "mapping values are not allowed"},
		{"value after a value", "services:\n  a:\n    image: x\n    command: a: b\n", 4, 15, "mapping values are not allowed"},
		{"list item in a mapping", "services:\n  a:\n    image: x\n    - y\n", 4, 5, "did not find expected key"},
		{"unclosed flow sequence", "services:\n  a:\n    image: x\n    ports: [8080, 80\n  b:\n    image: y\n", 4, 12, "',' or ']'"},
		{"unclosed flow mapping", "services:\n  a:\n    image: x\n    labels: {a: b\n  b:\n    image: y\n", 4, 13, "',' or '}'"},
		{"unclosed flow at the end", "services:\n  a:\n    image: x\n    shm_size: [1\n", 4, 15, "',' or ']'"},
		{"unclosed nested flow", "services:\n  a:\n    image: x\n    command: [sh, -c,\n      [a, b]\n  b:\n    image: y\n", 4, 14, ""},
		{"tab indentation", "services:\n  a:\n    image: x\n\tshm_size: 1g\n", 4, 1, "tab"},
		{"unclosed double quote", "services:\n  a:\n    image: x\n    shm_size: \"1g\n    ipc: host\n", 4, 15, "end of stream"},
		{"unclosed single quote", "services:\n  a:\n    image: 'x\n    ipc: host\n", 3, 12, "end of stream"},
		{"duplicate key", "services:\n  a:\n    image: x\n    shm_size: 1g\n    image: y\n", 5, 5, `mapping key "image" already defined at line 3`},
		{"duplicate service", "services:\n  a:\n    image: x\n  a:\n    image: y\n", 4, 3, `mapping key "a" already defined at line 2`},
		{"error in a second document", "services:\n  a:\n    image: x\n---\nservices:\n  b:\n   image: y\n  shm_size: [\n", 8, 13, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": c.src})
			p := Load(context.Background(), Options{Paths: []string{dir}})[0]
			if len(p.Errors) != 1 {
				t.Fatalf("errors: %v", p.Errors)
			}
			e := p.Errors[0]
			if e.Line != c.line || e.Column != c.col || !strings.Contains(e.Msg, "invalid YAML") || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %d:%d %q, want %d:%d %q", e.Line, e.Column, e.Msg, c.line, c.col, c.msg)
			}
		})
	}
}

// TestSomeOf keeps a note about a large stack short: four names in full, five as three and a
// count.
func TestSomeOf(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c", "d"}, "a, b, c, d"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	} {
		if got := someOf(c.names, 3); got != c.want {
			t.Errorf("someOf(%v) = %q, want %q", c.names, got, c.want)
		}
	}
}
