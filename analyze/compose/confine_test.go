package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// outsideFiles are files beside the project that a hostile pull request would like to read:
// each holds a line with SECRET in it.
var outsideFiles = map[string]string{
	"outside/shadow":      "root_SECRET_hash: x\nbin_SECRET_two: y\n",
	"outside/creds.json":  `{"type": "service_account", "private_key": "SECRET-KEY"}` + "\n",
	"outside/creds.env":   "TOKEN=SECRET-ENV\n",
	"outside/.env":        "TOKEN=SECRET-DOTENV\n",
	"outside/shared.yaml": "services:\n  shared:\n    image: alpine\n",
}

const appService = "services:\n  app:\n    image: alpine\n"

// TestOutsideIsNotRead gives projects that name files outside their root in every way
// compose allows: each is refused with an error at the entry that names it, as written,
// nothing outside is opened, no line of it is printed, and the rest of the project is
// analysed.
func TestOutsideIsNotRead(t *testing.T) {
	cases := []struct {
		name     string
		files    map[string]string // the project, in p/; $OUT is the outside folder
		opts     func(o *Options, dir string)
		at       string   // file:line:col (or file) of the error
		says     []string // parts of its message
		services []string // the services still analysed
		note     string   // a note instead of an error
	}{
		{name: "include", files: map[string]string{"compose.yaml": "include:\n  - ../outside/shadow\n" + appService},
			at: "compose.yaml:2:5", says: []string{"include ../outside/shadow", "outside the project root"}, services: []string{"app"}},
		{name: "include deep", files: map[string]string{"compose.yaml": "include:\n  - ../../../../../../../../../../$OUT/shadow\n" + appService},
			at: "compose.yaml:2:5", says: []string{"outside the project root"}, services: []string{"app"}},
		{name: "include absolute", files: map[string]string{"compose.yaml": "include:\n  - path: $OUT/shadow\n" + appService},
			at: "compose.yaml:2:11", says: []string{"$OUT/shadow", "outside the project root"}, services: []string{"app"}},
		{name: "include through a link", files: map[string]string{"compose.yaml": "include: [inc.yaml]\n" + appService, "inc.yaml": "->../outside/shadow"},
			at: "compose.yaml:1:11", says: []string{"include inc.yaml", "outside the project root"}, services: []string{"app"}},
		{name: "include interpolated", files: map[string]string{"compose.yaml": "include:\n  - ${INC}\n" + appService, ".env": "INC=../outside/shadow\n"},
			at: "compose.yaml:2:5", says: []string{"include ${INC}", "outside the project root"}, services: []string{"app"}},
		{name: "include through a variable compose-go sets", files: map[string]string{"compose.yaml": "include:\n  - sub${COMPOSE_PROJECT_NAME}/shadow\n" + appService, "subp": "->../outside"},
			at: "compose.yaml:2:5", says: []string{"an include resolves outside the project root"}, services: []string{"app"}},
		{name: "strict env_file", files: map[string]string{"compose.yaml": appService + "    env_file: ../outside/creds.env\n"},
			opts: func(o *Options, dir string) { o.StrictEnv = true }, at: "compose.yaml:4:15", says: []string{"env_file ../outside/creds.env resolves outside the project root"}, services: []string{"app"}},
		{name: "extends", files: map[string]string{"compose.yaml": appService + "    extends:\n      file: ../outside/shadow\n      service: root\n"},
			at: "compose.yaml:5:13", says: []string{"extends file ../outside/shadow", "outside the project root"}, services: []string{"app"}},
		{name: "dotenv link", files: map[string]string{"compose.yaml": appService, ".env": "->../outside/creds.json"},
			at: ".env", says: []string{"outside the project root"}, services: []string{"app"}},
		{name: "compose file in dotenv", files: map[string]string{"compose.yaml": appService, ".env": "COMPOSE_FILE=$P/compose.yaml:$OUT/shadow\n"},
			opts: func(o *Options, dir string) { o.Recursive = true }, at: ".env:1", says: []string{"COMPOSE_FILE", "$OUT/shadow", "outside the project root"}, services: []string{"app"}},
		{name: "override link", files: map[string]string{"compose.yaml": appService, "compose.override.yaml": "->../outside/shadow"},
			at: "compose.override.yaml", says: []string{"outside the project root"}, services: []string{"app"}},
		{name: "env-file flag", files: map[string]string{"compose.yaml": appService},
			opts: func(o *Options, dir string) { o.EnvFiles = []string{filepath.Join(dir, "outside/creds.env")} }, at: "creds.env", says: []string{"outside the project root"}, services: []string{"app"}},
		{name: "include env_file", files: map[string]string{"compose.yaml": "include:\n  - path: sub/compose.yaml\n    env_file: ../outside/creds.env\n" + appService, "sub/compose.yaml": "services:\n  sub:\n    image: alpine\n"},
			at: "compose.yaml:3:15", says: []string{"env_file ../outside/creds.env", "outside the project root"}, services: []string{"app", "sub"}},
		{name: "included dotenv", files: map[string]string{"compose.yaml": "include:\n  - sub/compose.yaml\n" + appService, "sub/compose.yaml": "services:\n  sub:\n    image: alpine\n", "sub/.env": "->../../outside/creds.env"},
			at: "sub/.env", says: []string{"outside the project root"}, services: []string{"app"}},
		{name: "include project_directory", files: map[string]string{"compose.yaml": "include:\n  - path: sub/compose.yaml\n    project_directory: ../outside\n" + appService, "sub/compose.yaml": "services:\n  sub:\n    image: alpine\n"},
			at: "compose.yaml:3:24", says: []string{"project_directory ../outside", "outside the project root"}, services: []string{"app"}},
		{name: "service env_file", files: map[string]string{"compose.yaml": appService + "    env_file: ../outside/creds.env\n"},
			note: "outside the project root, not read", services: []string{"app"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.WriteFiles(t, outsideFiles)
			out := filepath.Join(dir, "outside")
			files := map[string]string{}
			for k, v := range c.files {
				files[filepath.Join("p", k)] = strings.NewReplacer("$OUT", out, "$P", filepath.Join(dir, "p")).Replace(v)
			}
			writeTree(t, dir, files)
			opened := watchOpens(t, out)
			opts := Options{Paths: []string{filepath.Join(dir, "p")}}
			if c.opts != nil {
				c.opts(&opts, dir)
			}
			projects := Load(context.Background(), opts)
			if got := opened(); len(got) > 0 {
				t.Errorf("opened outside the root: %v", got)
			}
			if len(projects) != 1 {
				t.Fatalf("%d projects", len(projects))
			}
			p := projects[0]
			if all := printed(p); strings.Contains(all, "SECRET") {
				t.Errorf("a line of an outside file is printed:\n%s", all)
			}
			if c.note != "" {
				if len(p.Errors) > 0 || !strings.Contains(strings.Join(p.Notes, "\n"), c.note) {
					t.Errorf("want a note %q, got errors %v notes %v", c.note, p.Errors, p.Notes)
				}
			} else {
				at := strings.ReplaceAll(c.at, "$OUT", out)
				var found *analyze.LoadError
				for _, e := range p.Errors {
					if strings.HasSuffix(e.Pos.String(), "/"+at) || e.Pos.String() == at {
						found = e
					}
				}
				if found == nil {
					t.Fatalf("no error at %s: %v", at, p.Errors)
				}
				for _, s := range c.says {
					if s = strings.ReplaceAll(s, "$OUT", out); !strings.Contains(found.Msg, s) {
						t.Errorf("error %q does not say %q", found.Msg, s)
					}
				}
			}
			if !p.Compose && c.services != nil {
				t.Fatalf("the project was not analysed: %v", p.Errors)
			}
			var names []string
			for _, plan := range p.Plans {
				names = append(names, plan.Service)
			}
			if fmt.Sprint(names) != fmt.Sprint(c.services) {
				t.Errorf("services %v, want %v", names, c.services)
			}
		})
	}
}

// TestAllowOutside widens the root on purpose: what is allowed is read as docker compose
// would read it.
func TestAllowOutside(t *testing.T) {
	dir := testutil.WriteFiles(t, outsideFiles)
	writeTree(t, dir, map[string]string{"p/compose.yaml": "include: [../outside/shared.yaml]\n" + appService})
	p := Load(context.Background(), Options{Paths: []string{filepath.Join(dir, "p")}, AllowOutside: []string{filepath.Join(dir, "outside")}})[0]
	if len(p.Errors) > 0 || p.Plan("shared") == nil {
		t.Errorf("--allow-outside did not read the include: %v", p.Errors)
	}
}

// writeTree writes files under dir: content, or "->target" for a link.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// printed is every text of a project a report may print: its name, errors and notes.
func printed(p *analyze.Project) string {
	var b strings.Builder
	b.WriteString(p.Name + "\n")
	for _, e := range p.Errors {
		b.WriteString(e.Error() + "\n")
	}
	for _, n := range p.Notes {
		b.WriteString(n + "\n")
	}
	return b.String()
}
