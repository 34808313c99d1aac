package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// allocated is what fn allocates, in bytes: a bound on the memory a bomb may take, whatever
// the machine's speed.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// doubling is an env file whose every line doubles the one before: 2^lines bytes.
func doubling(lines int) string {
	var b strings.Builder
	b.WriteString("A0=xx\n")
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "A%d=${A%d}${A%d}\n", i, i-1, i-1)
	}
	return b.String()
}

// TestExpansionBombs gives the bombs of issue 21 (at sizes the loader without bounds survives
// in seconds): each is refused at its line with the reason, in a bounded allocation, and the
// project beside it is analysed.
func TestExpansionBombs(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		at    string
		says  string
	}{
		// 40 lines are tried under a memory limit, by the command's tests: here a regression
		// would take the machine's memory
		{"doubling env file", map[string]string{".env": doubling(23), "compose.yaml": appService}, ".env:20", "more than 1 MiB"},
		{"many lines of a large value", map[string]string{".env": doubling(18) + strings.Repeat("B=${A18}\n", 40), "compose.yaml": appService}, ".env:33", "more than 8 MiB"},
		{"nested defaults", map[string]string{"compose.yaml": appService + "    shm_size: \"" + strings.Repeat("${A:-", 2000) + "1g" + strings.Repeat("}", 2000) + "\"\n"}, "compose.yaml:4:5", "nested 2000 deep"},
		{"nested defaults in an env file", map[string]string{".env": "A=" + strings.Repeat("${A:-", 2000) + "1g" + strings.Repeat("}", 2000) + "\n", "compose.yaml": appService}, ".env:1", "nested 2000 deep"},
		{"repeated defaults", map[string]string{"compose.yaml": appService + "    shm_size: \"" + strings.Repeat("${A:-x}", 3000) + "\"\n"}, "compose.yaml:4:5", "3000 references with a default"},
		{"many values each within the bounds", map[string]string{"compose.yaml": appService + "    labels:\n" + strings.Repeat("      - \""+strings.Repeat("${A:-x}", 700)+"\"\n", 200)}, "compose.yaml:4:5", "too long to expand in all"},
		{"doubling through the compose file", map[string]string{".env": doubling(16), "compose.yaml": appService + "    labels: [\"" + strings.Repeat("${A16}", 20) + "\"]\n"}, "compose.yaml:4:5", "more than 1 MiB"},
		{"included env file", map[string]string{"compose.yaml": "include:\n  - path: sub/compose.yaml\n    env_file: sub/bomb.env\n" + appService, "sub/compose.yaml": "services:\n  sub:\n    image: alpine\n", "sub/bomb.env": doubling(23)}, "sub/bomb.env:20", "more than 1 MiB"},
		{"included project's .env", map[string]string{"compose.yaml": "include:\n  - sub/compose.yaml\n" + appService, "sub/compose.yaml": "services:\n  sub:\n    image: alpine\n", "sub/.env": doubling(23)}, "sub/.env:20", "more than 1 MiB"},
	}
	// a chain of files extended from, by many services: each reads the whole chain
	chain := map[string]string{"compose.yaml": "services:\n"}
	for i := 0; i < 20; i++ {
		chain[fmt.Sprintf("e%d.yaml", i)] = fmt.Sprintf("services:\n  s:\n    image: alpine\n    extends: {file: e%d.yaml, service: s}\n", i+1)
	}
	chain["e20.yaml"] = "services:\n  s:\n    image: alpine\n"
	for i := 0; i < 100; i++ {
		chain["compose.yaml"] += fmt.Sprintf("  a%d:\n    extends: {file: e0.yaml, service: s}\n", i)
	}
	cases = append(cases, struct {
		name  string
		files map[string]string
		at    string
		says  string
	}{"extends chain, many times", chain, "compose.yaml", "more than 1000 files"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, map[string]string{"ok/compose.yaml": appService})
			files := map[string]string{}
			for k, v := range c.files {
				files[filepath.Join("p", k)] = v
			}
			writeTree(t, dir, files)
			var projects []*analyze.Project
			if n := allocated(func() {
				projects = Load(context.Background(), Options{Paths: []string{filepath.Join(dir, "p"), filepath.Join(dir, "ok")}})
			}); n > 128<<20 {
				t.Errorf("the load allocated %d MiB", n>>20)
			}
			if len(projects) != 2 || projects[1].Plan("app") == nil {
				t.Fatalf("the other project was not analysed")
			}
			var found *analyze.LoadError
			for _, e := range projects[0].Errors {
				if strings.HasSuffix(e.Pos.String(), "/"+c.at) {
					found = e
				}
			}
			if found == nil || !strings.Contains(found.Msg, c.says) || !strings.Contains(found.Msg, "bomb") {
				t.Fatalf("no error at %s saying %q: %v", c.at, c.says, projects[0].Errors)
			}
		})
	}
}

// diamond writes an include diamond: each file includes the next one twice.
func diamond(levels int) map[string]string {
	files := map[string]string{}
	for i := 0; i < levels; i++ {
		files[fmt.Sprintf("f%d.yaml", i)] = fmt.Sprintf("include:\n  - f%d.yaml\n  - f%d.yaml\nservices:\n  s%d:\n    image: alpine\n", i+1, i+1, i)
	}
	files[fmt.Sprintf("f%d.yaml", levels)] = fmt.Sprintf("services:\n  s%d:\n    image: alpine\n", levels)
	files["compose.yaml"] = files["f0.yaml"]
	return files
}

// TestIncludeDiamond loads a diamond of includes: each file is opened a bounded number of
// times (compose-go walking the tree opened the last one 2^levels times), and every service
// is there. With other env files on each side, the contexts of a file would double at each
// level: past two they are refused, at the entry.
func TestIncludeDiamond(t *testing.T) {
	const levels = 8
	withEnv := func(dir string) map[string]string {
		files := map[string]string{}
		for i := 0; i < levels; i++ {
			files[fmt.Sprintf("a%d.env", i)] = fmt.Sprintf("V%d=a\n", i)
			files[fmt.Sprintf("b%d.env", i)] = fmt.Sprintf("V%d=b\n", i)
			files[fmt.Sprintf("f%d.yaml", i)] = fmt.Sprintf("include:\n  - {path: f%d.yaml, env_file: %s/a%d.env}\n  - {path: f%d.yaml, env_file: %s/b%d.env}\nservices:\n  s%d:\n    image: alpine\n", i+1, dir, i, i+1, dir, i, i)
		}
		files[fmt.Sprintf("f%d.yaml", levels)] = fmt.Sprintf("services:\n  s%d:\n    image: alpine\n", levels)
		files["compose.yaml"] = files["f0.yaml"]
		return files
	}
	for _, c := range []struct {
		name    string
		files   func(dir string) map[string]string
		refused bool
	}{
		{"one context a file", func(string) map[string]string { return diamond(levels) }, false},
		{"contexts doubling", withEnv, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, c.files(dir))
			opened := watchOpens(t, dir)
			p := Load(context.Background(), Options{Paths: []string{dir}})[0]
			counts := map[string]int{}
			for _, f := range opened() {
				counts[filepath.Base(f)]++
			}
			for f, n := range counts {
				if n > 8 {
					t.Errorf("%s opened %d times", f, n)
				}
			}
			if len(p.Plans) != levels+1 {
				t.Errorf("%d services, errors %v", len(p.Plans), p.Errors)
			}
			if refused := slices.ContainsFunc(p.Errors, func(e *analyze.LoadError) bool { return strings.Contains(e.Msg, "refusing an include bomb") }); refused != c.refused || !c.refused && len(p.Errors) > 0 {
				t.Errorf("errors %v", p.Errors)
			}
		})
	}
}

// TestIncludeOnceIsComposes holds the model of projects that include a file more than once
// to the one compose-go makes walking every path: answering the repeats with an empty file
// imports nothing compose-go would not skip as equal.
func TestIncludeOnceIsComposes(t *testing.T) {
	svc := func(name string) string {
		return "services:\n  " + name + ":\n    image: alpine\n    volumes: [./data:/data]\n    env_file: [{path: ./x.env, required: false}]\n    build: .\n"
	}
	cases := map[string]map[string]string{
		"twice in a list": diamond(3),
		"through two folders": {
			"compose.yaml":        "include: [a/compose.yaml, b/compose.yaml]\n" + svc("top"),
			"a/compose.yaml":      "include: [../common/compose.yaml]\n" + svc("a"),
			"b/compose.yaml":      "include: [../common/compose.yaml]\n" + svc("b"),
			"common/compose.yaml": svc("common"),
		},
		"with and without env files": {
			"compose.yaml": "include:\n  - path: d.yaml\n    env_file: x.env\n  - d.yaml\n" + svc("top"),
			"x.env":        "V=1\n",
			"d.yaml":       svc("d"),
		},
		"one file with four env files": {
			"compose.yaml": "include:\n  - {path: d.yaml, env_file: x.env}\n  - {path: d.yaml, env_file: y.env}\n  - {path: d.yaml, env_file: z.env}\n  - {path: d.yaml, env_file: w.env}\n" + svc("top"),
			"x.env":        "V=1\n", "y.env": "V=2\n", "z.env": "V=3\n", "w.env": "V=4\n",
			"d.yaml": svc("d"),
		},
		"a variable that differs": {
			"compose.yaml": "include:\n  - path: d.yaml\n    env_file: x.env\n  - d.yaml\n" + svc("top"),
			"x.env":        "V=1\n",
			"d.yaml":       "services:\n  d:\n    image: alpine:${V:-2}\n",
		},
		"an override includes it too": {
			"compose.yaml":          "include: [d.yaml]\n" + svc("top"),
			"compose.override.yaml": "include: [d.yaml]\n",
			"d.yaml":                svc("d"),
		},
		"a project folder of its own": {
			"compose.yaml":   "include:\n  - path: d/compose.yaml\n    project_directory: .\n  - d/compose.yaml\n" + svc("top"),
			"d/compose.yaml": svc("d"),
		},
		"a cycle": {
			"compose.yaml": "include: [a.yaml]\n" + svc("top"),
			"a.yaml":       "include: [b.yaml]\n" + svc("a"),
			"b.yaml":       "include: [a.yaml]\n" + svc("b"),
		},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, files)
			want, wantErr := composeModel(t, dir)
			p := Load(context.Background(), Options{Paths: []string{dir}})[0]
			if wantErr != nil {
				if len(p.Errors) == 0 {
					t.Fatalf("compose-go refuses the project (%v), the doctor loads it", wantErr)
				}
				return
			}
			if len(p.Errors) > 0 {
				t.Fatalf("compose-go loads the project, the doctor says %v", p.Errors)
			}
			got := modelJSON(t, p.Doc.(*project).model)
			if got != want {
				t.Errorf("the doctor's model differs from compose-go's:\n%s\n%s", got, want)
			}
		})
	}
}

// composeModel loads dir with compose-go alone, as the doctor configures it.
func composeModel(t *testing.T, dir string) (string, error) {
	t.Helper()
	po, err := cli.NewProjectOptions(nil, cli.WithWorkingDirectory(dir), cli.WithOsEnv, cli.WithEnvFiles(), cli.WithDotEnv,
		cli.WithConfigFileEnv, cli.WithDefaultConfigPath, cli.WithProfiles([]string{"*"}), cli.WithResolvedPaths(true),
		cli.WithoutEnvironmentResolution)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := po.LoadProject(context.Background())
	if err != nil {
		return "", err
	}
	return modelJSON(t, proj), nil
}

func modelJSON(t *testing.T, p any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(map[string]any{"services": m["services"], "volumes": m["volumes"], "networks": m["networks"]}, "", " ")
	return string(out)
}
