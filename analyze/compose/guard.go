package compose

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/compose-spec/compose-go/v2/consts"
	interp "github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/shmdoctor/shmdoctor/analyze"
)

// guard is the resource loader compose-go asks before its own for every include and extends
// file. compose-go keeps it in nested includes and extends (it is not compose-go's local
// loader), and passes it the file being loaded in the context. It answers with the file the
// walk resolved, which compose-go then reads, or with a stand-in: an empty file for an include
// refused or already loaded with the same folder and variables (importing it again imports
// resources compose-go skips as equal: a diamond of includes is loaded once a file, not once a
// path), a file defining the extended service as nothing for a refused extends file. A path
// the walk did not see (one written with a variable compose-go interpolates otherwise) is
// resolved here and refused if it leaves the root.
type guard struct {
	c  *confiner
	mu sync.Mutex
	// top are the compose files, which compose-go's own loader reads.
	top map[string]bool
	// event is the last thing compose-go said it does: "include" or "extends", for service.
	event, service string
	// entry is the include entry being loaded, decided at its first path (ents, the entry in
	// every context the walk saw); dup marks it loaded before.
	entry *incEntry
	ents  []*incEntry
	dup   bool
	// count is how many entries of each file were loaded, in each context; current is the
	// context each file is being loaded in (compose-go says the file, not how it got there).
	count   map[string]int
	current map[string]string
	// loaded are the include keys loaded in this load; parent the file that first included
	// each file, to tell a cycle (which compose-go must see) from a repeat.
	loaded map[string]bool
	parent map[string]string
	// wd and target are the folder and the file of the last extends load, for Dir.
	wd, target string
	// loads counts the files compose-go loaded for includes and extends in this load.
	loads int
}

// maxLoads bounds the include and extends files one load of a project reads: a service
// extending a chain of files, written ten thousand times, would read the chain ten thousand
// times (some 0.5 ms a file). Real projects read a few dozen. Past the bound the load stops.
const maxLoads = 1000

var _ loader.ResourceLoader = (*guard)(nil)

// reset starts a load: compose-go may load a project more than once.
func (g *guard) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loaded, g.parent, g.count, g.entry, g.event, g.loads = map[string]bool{}, map[string]string{}, map[string]int{}, nil, "", 0
	for f := range g.current {
		if !g.top[f] {
			delete(g.current, f)
		}
	}
}

// setTop names the compose files, and the context they load in.
func (g *guard) setTop(files []string, ctx string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.top, g.current = map[string]bool{}, map[string]string{}
	for _, f := range files {
		g.top[f], g.current[f] = true, ctx
	}
}

// Accept takes every path but the compose files.
func (g *guard) Accept(p string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.top[p]
}

// listen follows compose-go's events: they say whether the loads that follow are an
// include's or an extends'.
func (g *guard) listen(event string, meta map[string]any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.event = event
	switch event {
	case "include":
		g.entry = nil
	case "extends":
		g.service, _ = meta["service"].(string)
	}
}

func (g *guard) Load(ctx context.Context, p string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	file, _ := ctx.Value(consts.ComposeFileKey{}).(string)
	if g.loads++; g.loads > maxLoads {
		return "", fmt.Errorf("includes and extends read more than %d files: refusing an include or extends bomb", maxLoads)
	}
	if g.event == "extends" {
		return g.loadExtends(file, p)
	}
	return g.loadInclude(file, p)
}

func (g *guard) loadInclude(file, p string) (string, error) {
	c := g.c
	if g.loaded == nil {
		g.loaded, g.parent, g.count = map[string]bool{}, map[string]string{}, map[string]int{}
	}
	if g.entry == nil {
		// compose-go loads a file's entries in order, each once per load of the file
		cur, known := g.current[file]
		g.ents = nil
		if slots := c.includes[file]; len(slots) > 0 {
			g.ents = slots[g.count[file+"\x00"+cur]%len(slots)]
			g.count[file+"\x00"+cur]++
		}
		g.entry, g.dup = &incEntry{}, false
		var e *incEntry
		switch {
		case len(g.ents) > 0 && agree(g.ents):
			e = g.ents[0]
		case known:
			if i := slices.IndexFunc(g.ents, func(e *incEntry) bool { return e.ctx == cur }); i >= 0 {
				e = g.ents[i]
			}
		}
		if e != nil && slices.Contains(e.paths, p) {
			g.entry = e
			g.dup = !e.refused && g.loaded[e.key] && !g.cycle(e, file)
			g.loaded[e.key] = true
		}
	}
	e := g.entry
	i := slices.Index(e.paths, p)
	var target string
	ok := true
	switch {
	case i < 0: // not seen by the walk, or seen otherwise in the contexts of the file
		at := analyze.Pos{File: c.display(file)}
		if len(g.ents) > 0 {
			at = g.ents[0].pos
		}
		target, ok = g.resolve(at, file, p, "include")
	case e.refused:
		ok = false
	default:
		target = e.targets[i]
	}
	if !ok || g.dup {
		return c.stand.path("")
	}
	if _, ok := g.parent[target]; !ok {
		g.parent[target] = file
	}
	if g.entry.child != "" {
		g.current[target] = g.entry.child
	}
	return target, nil
}

func (g *guard) loadExtends(file, p string) (string, error) {
	c := g.c
	ents := c.extends[[2]string{file, p}]
	var target string
	ok := true
	switch {
	case len(ents) == 0 || slices.ContainsFunc(ents, func(e *extEntry) bool { return e.target != ents[0].target || e.refused != ents[0].refused }):
		at := analyze.Pos{File: c.display(file)}
		if len(ents) > 0 {
			at = ents[0].pos
		}
		target, ok = g.resolve(at, file, p, "extends file")
	case ents[0].refused:
		ok = false
	default:
		target = ents[0].target
	}
	if !ok {
		target, err := c.stand.path("services:\n  " + strconv.Quote(g.service) + ": {}\n")
		g.wd, g.target = filepath.Dir(target), target
		return target, err
	}
	g.wd, g.target = "", target
	if wd, ok := c.uniqueLocalWD(file); ok {
		g.wd = wd
	}
	return target, nil
}

// resolve places a path the walk did not see (or saw resolve otherwise in the contexts of
// the file), as compose-go's own loader would, and says whether it may be read. Its value
// may come from a variable: it is not printed.
func (g *guard) resolve(at analyze.Pos, file, p, what string) (string, bool) {
	c := g.c
	t := p
	if !filepath.IsAbs(p) {
		wd, ok := c.uniqueLocalWD(file)
		if !ok {
			c.refuse(at, "an %s is relative to a folder the doctor cannot tell (the file is loaded from several): not read", what)
			return "", false
		}
		t = filepath.Join(wd, p)
	}
	if _, inside := c.root.Resolve(t); !inside {
		c.refuse(at, "an %s resolves outside the project root (%s): not read (--allow-outside widens the root)", what, c.root)
		return "", false
	}
	return t, true
}

// agree reports entries, one entry in the contexts its file is loaded in, that say the same.
func agree(ents []*incEntry) bool {
	for _, e := range ents[1:] {
		if e.refused != ents[0].refused || e.key != ents[0].key || !slices.Equal(e.paths, ents[0].paths) {
			return false
		}
	}
	return true
}

// cycle reports an entry that includes a file on the way to file: compose-go must load it to
// say so.
func (g *guard) cycle(e *incEntry, file string) bool {
	for f, n := file, 0; f != "" && n < 64; f, n = g.parent[f], n+1 {
		if slices.Contains(e.targets, f) {
			return true
		}
	}
	return false
}

// Dir is compose-go's local loader's Dir for the file the last extends load answered with:
// its folder, relative to the loader's where it can be. (For an include compose-go's own
// loader answers last.)
func (g *guard) Dir(string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	dir := filepath.Dir(g.target)
	if g.wd == "" {
		return dir
	}
	if rel, err := filepath.Rel(g.wd, dir); err == nil {
		return rel
	}
	return dir
}

// casts adds to compose-go's casts the include values it reads files from without asking a
// loader: env_file and project_directory.
func (c *confiner) casts(m map[tree.Path]interp.Cast) map[tree.Path]interp.Cast {
	out := maps.Clone(m)
	if out == nil {
		out = map[tree.Path]interp.Cast{}
	}
	out[tree.NewPath("include", tree.PathMatchList, "env_file")] = c.castEnvFile
	out[tree.NewPath("include", tree.PathMatchList, "env_file", tree.PathMatchList)] = c.castEnvFile
	out[tree.NewPath("include", tree.PathMatchList, "project_directory")] = c.castProjectDir
	return out
}

// castEnvFile gives compose-go an empty stand-in for an include env file the walk refused.
func (c *confiner) castEnvFile(v string) (any, error) {
	return c.castPath(v, c.envFiles, "include env_file")
}

// castProjectDir gives compose-go a stand-in for an include project_directory the walk
// refused: a file, in which no .env can be found. The include itself is refused by the guard.
func (c *confiner) castProjectDir(v string) (any, error) {
	return c.castPath(v, c.projDirs, "include project_directory")
}

func (c *confiner) castPath(v string, states map[string]*valueState, what string) (any, error) {
	st := states[v]
	switch {
	case st != nil && st.allowed && !st.refused:
		return v, nil
	case st != nil:
		// refused, or only written in a file extended from, whose includes compose-go skips
	case st == nil && filepath.IsAbs(v):
		if _, inside := c.root.Resolve(v); inside {
			return v, nil
		}
		c.refuse(analyze.Pos{File: c.display(c.dir)}, "an %s written with a variable resolves outside the project root (%s): not read (--allow-outside widens the root)", what, c.root)
	case st == nil:
		c.refuse(analyze.Pos{File: c.display(c.dir)}, "an %s written with a variable is relative to a folder the doctor cannot tell: not read", what)
	}
	return c.stand.path("")
}
