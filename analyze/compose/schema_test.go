package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestSchemaChecks loads every project twice, each time from a copy of its own: once with
// the schema checked by compose-go, which compiles it for each document, and once with the
// schema checked by the doctor (checkSchema). Everything the doctor then has must be the
// same: compose-go's errors, word for word and type for type, the located errors made from
// them, the notes in their order, the loaded model and the findings. The projects break
// the schema with a type, a key, an enum, a pattern, a name, a bound, in a second document
// or file or only once merged, or are valid, and take each way a load can go (extends,
// include, tags, standard input, no project name, strict variables); then come every
// fixture and the corpus.
func TestSchemaChecks(t *testing.T) {
	const svc = "services:\n  a:\n    image: busybox\n"
	var large strings.Builder
	large.WriteString("services:\n")
	for i := range nodesPerCompile / 4 {
		fmt.Fprintf(&large, "  s%d:\n    image: busybox\n", i)
	}
	cases := []struct {
		name   string
		folder string            // the project folder, proj when empty
		files  map[string]string // under the project folder
		paths  []string          // PATH arguments, in the project folder; the folder when none
		f      []string          // -f files, in the project folder
		strict,
		stdin bool
		fast bool // the doctor checks the schema itself and compose-go skips it
	}{
		{name: "valid", files: map[string]string{"compose.yaml": svc}, fast: true},
		{name: "valid with anchors and merge keys", files: map[string]string{"compose.yaml": "x-base: &base\n  image: busybox\n  shm_size: 1g\nservices:\n  a:\n    <<: *base\n  b:\n    <<: *base\n    ipc: host\n    x-shmdoctor: {need: 2g}\n"}, fast: true},
		{name: "wrong type", files: map[string]string{"compose.yaml": svc + "    shm_size: [1]\n"}},
		{name: "wrong type of a mapping", files: map[string]string{"compose.yaml": svc + "    deploy: big\n"}},
		{name: "services is a list", files: map[string]string{"compose.yaml": "services: [a, b]\n"}},
		{name: "unknown key", files: map[string]string{"compose.yaml": svc + "    shm_sizes: 1g\n"}},
		{name: "unknown top-level key", files: map[string]string{"compose.yaml": svc + "servics: {}\n"}},
		{name: "bad enum", files: map[string]string{"compose.yaml": svc + "    volumes:\n      - type: ramdisk\n        target: /dev/shm\n"}},
		{name: "bad pattern", files: map[string]string{"compose.yaml": svc + "    pull_policy: sometimes\n"}},
		{name: "bad service name", files: map[string]string{"compose.yaml": svc + "  \"bad name!\":\n    image: busybox\n"}},
		{name: "bad duration", files: map[string]string{"compose.yaml": svc + "    healthcheck:\n      test: [CMD, \"true\"]\n      interval: 10 parsecs\n"}},
		{name: "not unique", files: map[string]string{"compose.yaml": svc + "    dns: [1.1.1.1, 1.1.1.1]\n"}, fast: true},
		{name: "minimum", files: map[string]string{"compose.yaml": svc + "    deploy:\n      replicas: -1\n"}},
		{name: "extension under a service", files: map[string]string{"compose.yaml": svc + "    x-anything: [1, 2]\n"}, fast: true},
		{name: "extension key in services", files: map[string]string{"compose.yaml": svc + "  x-common:\n    image: busybox\n"}, fast: true},
		{name: "extension in memory limits", files: map[string]string{"compose.yaml": svc + "    deploy:\n      resources:\n        limits:\n          x-note: 1\n"}, fast: true},
		{name: "extension spelled with an underscore", files: map[string]string{"compose.yaml": svc + "    x_shmdoctor: {need: 1g}\n"}},
		{name: "extension not a mapping key", files: map[string]string{"compose.yaml": svc + "x-shmdoctor: [1]\n"}, fast: true},
		{name: "non-string key", files: map[string]string{"compose.yaml": svc + "    labels:\n      1: one\n"}},
		{name: "null service", files: map[string]string{"compose.yaml": svc + "  b:\n"}},
		{name: "second document invalid", files: map[string]string{"compose.yaml": svc + "---\nservices:\n  a:\n    shm_size: [1]\n"}},
		{name: "documents", files: map[string]string{"compose.yaml": svc + "---\nservices:\n  a:\n    shm_size: 1g\n  b:\n    image: busybox\n"}, fast: true},
		{name: "override invalid", files: map[string]string{"compose.yaml": svc, "compose.override.yaml": "services:\n  a:\n    ipc: [host]\n"}},
		{name: "override", files: map[string]string{"compose.yaml": svc, "compose.override.yaml": "services:\n  a:\n    ipc: host\n"}, fast: true},
		{name: "second -f file invalid", files: map[string]string{"a.yaml": svc, "b.yaml": "services:\n  a:\n    mem_limit: {a: 1}\n"}, f: []string{"a.yaml", "b.yaml"}},
		{name: "invalid only merged", files: map[string]string{"a.yaml": svc + "    volumes:\n      - type: tmpfs\n        target: /dev/shm\n", "b.yaml": "services:\n  a:\n    volumes:\n      - type: tmpfs\n        target: /dev/shm\n        tmpfs: {size: lots}\n"}, f: []string{"a.yaml", "b.yaml"}},
		{name: "version", files: map[string]string{"compose.yaml": "version: \"3.8\"\n" + svc}, fast: true},
		{name: "version in each file", files: map[string]string{"compose.yaml": "version: \"3.8\"\n" + svc, "compose.override.yaml": "version: \"3\"\nservices:\n  a:\n    shm_size: 1g\n"}, fast: true},
		{name: "version then invalid", files: map[string]string{"compose.yaml": "version: \"3.8\"\n" + svc, "compose.override.yaml": "services:\n  a:\n    shm_size: [1]\n"}},
		// compose-go logs before, while and after it checks a document: the notes keep
		// that order (one note of each kind a document, as compose-go logs those of a
		// kind in no fixed order).
		{name: "version among other notes", files: map[string]string{"compose.yaml": "version: \"3\"\n" + svc + "    privileged: \"yes\"\nnetworks:\n  n:\n    external:\n      name: real\n---\nversion: \"3\"\nservices:\n  a:\n    init: \"on\"\nvolumes:\n  v:\n    external:\n      name: real\n", "compose.override.yaml": "version: \"3\"\nservices:\n  a:\n    read_only: \"off\"\n"}, fast: true},
		{name: "checked after the merge", files: map[string]string{"compose.yaml": svc + "volumes:\n  v:\n    external: true\n    driver: local\n"}},
		{name: "bad address", files: map[string]string{"compose.yaml": svc + "    ports: [\"300.1.1.1:80:80\"]\n"}},
		{name: "extends", files: map[string]string{"compose.yaml": "services:\n  base:\n    image: busybox\n    shm_size: 1g\n  a:\n    extends: base\n"}},
		{name: "extends invalid", files: map[string]string{"compose.yaml": "services:\n  base:\n    image: busybox\n  a:\n    extends: base\n    shm_size: [1]\n"}},
		{name: "include", files: map[string]string{"compose.yaml": "include: [sub.yaml]\n" + svc, "sub.yaml": "services:\n  b:\n    image: busybox\n"}},
		{name: "include invalid", files: map[string]string{"compose.yaml": "include: [sub.yaml]\n" + svc, "sub.yaml": "services:\n  b:\n    image: [busybox]\n"}},
		{name: "reset", files: map[string]string{"compose.yaml": svc + "    shm_size: 1g\n", "compose.override.yaml": "services:\n  a:\n    shm_size: !reset null\n"}},
		{name: "override tag", files: map[string]string{"compose.yaml": svc + "    tmpfs: [/run]\n", "compose.override.yaml": "services:\n  a:\n    tmpfs: !override [/dev/shm]\n"}},
		{name: "project name from variables", files: map[string]string{"compose.yaml": "name: ${NAME_SHMDOCTOR_TEST:-named}\n" + svc}},
		{name: "COMPOSE_PROJECT_NAME", files: map[string]string{"compose.yaml": svc + "    container_name: ${COMPOSE_PROJECT_NAME}-a\n"}},
		{name: "unset variables", files: map[string]string{"compose.yaml": svc + "    extra_hosts: [\"${H1_SHMDOCTOR_TEST}\", \"${H2_SHMDOCTOR_TEST}\"]\n---\nservices:\n  a:\n    shm_size: ${SHM_SHMDOCTOR_TEST}\n"}, fast: true},
		{name: "unset variables strict", files: map[string]string{"compose.yaml": svc + "    shm_size: ${SHM_SHMDOCTOR_TEST}\n---\nservices:\n  a:\n    privileged: \"${P_SHMDOCTOR_TEST}\"\n"}, strict: true},
		{name: "unset required variable strict", files: map[string]string{"compose.yaml": svc + "    shm_size: ${SHM_SHMDOCTOR_TEST?must be set}\n"}, strict: true},
		{name: "partial file", files: map[string]string{"gpu.yaml": "version: \"3\"\nservices:\n  a:\n    shm_size: 1g\n"}, paths: []string{"gpu.yaml"}, fast: true},
		// A folder whose name has no letter or digit gives no project name, which
		// compose-go refuses once it has checked the files: it is told so again.
		{name: "no project name", folder: "___", files: map[string]string{"compose.yaml": svc}},
		{name: "no project name, with version", folder: "___", files: map[string]string{"compose.yaml": "version: \"3\"\n" + svc + "    privileged: \"yes\"\n"}},
		// Checking a large project would cost more than the compilation it saves.
		{name: "large", files: map[string]string{"compose.yaml": large.String()}},
		{name: "large, two documents", files: map[string]string{"compose.yaml": large.String() + "---\n" + svc}, fast: true},
		{name: "standard input", files: map[string]string{"compose.yaml": svc + "    ipc: host\n"}, stdin: true, fast: true},
		{name: "standard input invalid", files: map[string]string{"compose.yaml": svc + "    ipc: [host]\n"}, stdin: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			load := func(validates bool) (string, string) {
				folder := c.folder
				if folder == "" {
					folder = "proj"
				}
				files := map[string]string{}
				for name, content := range c.files {
					files[filepath.Join(folder, name)] = content
				}
				root := testutil.WriteFiles(t, files)
				dir := filepath.Join(root, folder)
				opts := Options{Paths: []string{dir}, StrictEnv: c.strict, composeValidates: validates}
				switch {
				case c.stdin:
					opts.Paths, opts.ProjectDir, opts.Stdin = []string{"-"}, dir, strings.NewReader(c.files["compose.yaml"])
				case c.f != nil:
					opts.Paths, opts.ProjectDir = nil, dir
					for _, f := range c.f {
						opts.Files = append(opts.Files, filepath.Join(dir, f))
					}
				case c.paths != nil:
					opts.Paths = nil
					for _, p := range c.paths {
						opts.Paths = append(opts.Paths, filepath.Join(dir, p))
					}
				}
				return loadOutcome(Load(context.Background(), opts)), root
			}
			before := schemaSkipped.Load()
			want, wantRoot := load(true)
			if schemaSkipped.Load() != before {
				t.Fatal("compose-go was told to skip the schema checks")
			}
			got, gotRoot := load(false)
			skipped := schemaSkipped.Load() - before
			compareOutcomes(t, want, wantRoot, got, gotRoot, true)
			if c.fast && skipped == 0 {
				t.Error("compose-go checked the schema itself: the doctor did not follow this load")
			}
			if !c.fast && skipped > 0 {
				t.Error("compose-go skipped the schema checks")
			}
		})
	}

	// The fixtures and the corpus, every project -r finds in them, variants included.
	trees := map[string]string{"fixtures": filepath.Join("..", "..", "testdata")}
	if dir := testutil.FindCorpus(t); dir != "" {
		trees["corpus"] = dir
	}
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			load := func(validates bool) (string, string) {
				root := testutil.CopyTree(t, tree)
				return loadOutcome(Load(context.Background(), Options{Paths: []string{root}, Recursive: true, composeValidates: validates})), root
			}
			want, wantRoot := load(true)
			before := schemaSkipped.Load()
			got, gotRoot := load(false)
			t.Logf("compose-go skipped the schema checks in %d loads", schemaSkipped.Load()-before)
			compareOutcomes(t, want, wantRoot, got, gotRoot, false)
		})
	}
}

// loadOutcome writes down everything a load gave: each project's name and files, its errors
// with compose-go's error each was made from and that error's types, its notes, its model and
// its findings.
func loadOutcome(ps []*analyze.Project) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "project %s %q\n", p.Name, p.Files)
		for _, e := range p.Errors {
			var types []string
			for c := e.Unwrap(); c != nil; c = errors.Unwrap(c) {
				types = append(types, fmt.Sprintf("%T", c))
			}
			if slices.Contains(types, "schema.validationError") {
				// Of the values the schema refuses at the same depth, compose-go reports the
				// one its map order gives first (so would docker compose): which one is not
				// compared, only that the file is refused by the schema.
				fmt.Fprintf(&b, "error %s: refused by the schema\n", e.File)
				continue
			}
			fmt.Fprintf(&b, "error %s\n", e)
			if cause := e.Unwrap(); cause != nil {
				fmt.Fprintf(&b, "  from %s: %s\n", strings.Join(types, " > "), cause)
			}
		}
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "note %s\n", n)
		}
		if p.Compose {
			m, err := json.Marshal(p.Doc.(*project).model)
			if err != nil {
				m = []byte(err.Error())
			}
			fmt.Fprintf(&b, "model %s\n", m)
		}
		if p.Loaded() {
			for _, f := range rules.Check(p, analyze.Config{}) {
				fmt.Fprintf(&b, "finding %s %s %s: %s\n", f.Pos, f.Rule, f.Service, f.Message)
			}
		}
	}
	return b.String()
}

// compareOutcomes reports where two outcomes of loads from two copies differ. Unless exact,
// the lines are compared in sorted order and without the service a consistency error names:
// compose-go logs the notes of one kind, and checks the services for consistency, in the
// order of a Go map, so that one load of a project written with many of them differs from
// the next.
func compareOutcomes(t *testing.T, want, wantRoot, got, gotRoot string, exact bool) {
	t.Helper()
	want = strings.ReplaceAll(want, wantRoot, "ROOT")
	got = strings.ReplaceAll(got, gotRoot, "ROOT")
	if !exact {
		want, got = unordered(want), unordered(got)
	}
	if got != want {
		t.Errorf("the loads differ:\n%s", fix.UnifiedDiff("compose-go checks", "the doctor checks", []byte(want), []byte(got)))
	}
	if !strings.Contains(want, "project") {
		t.Error("nothing loaded")
	}
}

var consistencyNote = regexp.MustCompile(`^(note docker compose would refuse this project as it stands:).*`)

// unordered sorts the lines of an outcome, and drops what a consistency error says.
func unordered(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = consistencyNote.ReplaceAllString(l, "$1 ...")
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
