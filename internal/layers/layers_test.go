package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

const module = "github.com/shmdoctor/shmdoctor"

// layers is what each room of the probe may import of the module, lowest first: no package
// imports one above it, probe and watch share the engine and the agent protocol but not each
// other, and the agent, which runs inside the probe container as its own process, holds no
// Docker client. dir is relative to the module's root.
var layers = []struct {
	dir     string
	imports []string // packages of the module, relative to its root
	docker  bool     // may import the Docker client and its types
}{
	{dir: "agent/protocol", imports: []string{"analyze"}},
	{dir: "agent", imports: []string{"agent/protocol", "analyze", "internal/tail"}},
	{dir: "agent/internal/agentcmd", imports: []string{"agent"}},
	{dir: "engine", imports: []string{"agent/protocol", "analyze", "internal/tail"}, docker: true},
	{dir: "probe", imports: []string{"agent/protocol", "analyze", "engine"}, docker: true},
	{dir: "watch", imports: []string{"agent/protocol", "analyze", "engine"}, docker: true},
}

// rooms are the folders the table covers: every folder under them that holds Go files must
// have a row. Folders without Go files (engine/agents, where release builds put the agents
// they embed; testdata) are not packages and need none.
var rooms = []string{"agent", "engine", "probe", "watch"}

// dockerPrefixes are the import paths of the Docker client, its API types and its errors.
var dockerPrefixes = []string{"github.com/moby/", "github.com/docker/", "github.com/containerd/"}

// TestLayers reads the imports of every package of the probe's rooms and fails on one that
// reaches a package its row does not list (an upward or sideways arrow), on the Docker client
// where the row keeps it out, and on a folder of Go files that has no row.
func TestLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	rows := map[string]bool{}
	for _, l := range layers {
		rows[l.dir] = true
		imports := testutil.ImportsOf(t, filepath.Join(root, l.dir))
		if len(imports) == 0 {
			t.Errorf("%s: no imports read: the table names a folder that holds no package", l.dir)
		}
		for _, imp := range imports {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				if !slices.Contains(l.imports, rel) {
					t.Errorf("%s imports %s, which its layer may not: allowed %v", l.dir, imp, l.imports)
				}
			case !l.docker && slices.ContainsFunc(dockerPrefixes, func(p string) bool { return strings.HasPrefix(imp, p) }):
				t.Errorf("%s imports %s: it holds no Docker client", l.dir, imp)
			}
		}
	}
	for _, room := range rooms {
		err := filepath.WalkDir(filepath.Join(root, room), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if !rows[rel] && hasGo(t, path) {
				t.Errorf("%s is not in the layer table", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hasGo reports whether a folder holds Go files.
func hasGo(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files) > 0
}

// TestRoomsExist fails when a room of the table has no folder: the walk above would pass
// over it in silence.
func TestRoomsExist(t *testing.T) {
	for _, room := range rooms {
		if fi, err := os.Stat(filepath.Join("..", "..", room)); err != nil || !fi.IsDir() {
			t.Errorf("room %s: %v", room, err)
		}
	}
}
