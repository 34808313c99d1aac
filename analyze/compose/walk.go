package compose

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// maxInclusions bounds the files a project includes, each counted once per context (its
// project folder and variables), and maxContexts the contexts of one file beyond the entries
// that include it: each is a load of its own for compose-go, some 10 to 30 ms with its schema
// checks. Real projects include a few dozen files, each in one context or one per entry that
// includes it; an include graph that multiplies the contexts of a file (each level including
// the next twice with other env files) is refused where it does.
const (
	maxInclusions = 1000
	maxContexts   = 2
)

// walked is what the walk learned of a project's includes and extends, for the guard and the
// casts to answer compose-go with.
type walked struct {
	visited map[string]bool // file and context walked
	// inclusions counts the files walked in distinct contexts, contexts the contexts of each
	// file.
	inclusions int
	contexts   map[string]int
	// edges are the entries that include each file.
	edges    map[string][]string
	localWDs map[string][]string // file -> the folders its relative paths resolve from
	// includes are the include entries of each file, in the order compose-go loads them,
	// each as found in every context the file was walked in.
	includes map[string][][]*incEntry
	extends  map[[2]string][]*extEntry // (file compose-go loads it from, file: as it sees it)
	envFiles map[string]*valueState    // include env_file values, as compose-go sees them
	projDirs map[string]*valueState    // include project_directory values
	fifos    map[string]string         // stand-in -> the FIFO given with -f it holds
}

func newWalked() walked {
	return walked{visited: map[string]bool{}, contexts: map[string]int{}, edges: map[string][]string{}, localWDs: map[string][]string{}, includes: map[string][][]*incEntry{},
		extends: map[[2]string][]*extEntry{}, envFiles: map[string]*valueState{}, projDirs: map[string]*valueState{}, fifos: map[string]string{}}
}

// valueState is what the walk decided for every entry with one value.
type valueState struct{ allowed, refused bool }

// incEntry is one include entry in one context.
type incEntry struct {
	paths   []string // as compose-go sees them: interpolated
	targets []string // as it resolves them
	// key is the files, project folder and env files: compose-go importing an entry again
	// with the same key imports the same resources, which it skips.
	key     string
	refused bool
	pos     analyze.Pos // of its first path, as written
	// ctx is the context of the including file, child the context it loads its files in.
	ctx, child string
}

// extEntry is one extends file: in one context.
type extEntry struct {
	target  string
	refused bool
	pos     analyze.Pos // of the file:, as written
}

// walkCtx is the context compose-go loads a file in.
type walkCtx struct {
	localWD    string            // its loader's folder: relative include and extends paths resolve from it
	workingDir string            // the project's WorkingDir: relative include env files are joined to it
	env        map[string]string // the variables the file is interpolated with
	envChain   string            // the env files applied on the way, for the include key
}

// id names the context: what decides how a file loads in it.
func (wc walkCtx) id() string { return wc.localWD + "\x00" + wc.envChain }

// walk reads a file into the index and follows its includes and extends as compose-go will,
// each included file once per context (a set, not a tree: an include diamond is walked once
// per file). What resolves outside the root is refused at the entry that names it and not
// followed. An error that stops the project (a file that cannot be read) is returned.
func (c *confiner) walk(file string, content []byte, wc walkCtx, depth int) error {
	ix := c.ix
	if _, ok := ix.Docs[file]; !ok {
		if content == nil {
			b, err := source.ReadSource(ix.Input, file)
			if err != nil {
				return err
			}
			content = b
		}
		if err := ix.add(file, content); err != nil {
			return err
		}
	}
	if at := notCompose(ix.Docs[file]); at != nil {
		// compose-go would list its keys, which may be anything (a credentials file's)
		return &analyze.LoadError{Pos: ix.Pos(file, at), Msg: notComposeMsg}
	}
	key := file + "\x00" + wc.id()
	if c.visited[key] || depth > 32 {
		return nil
	}
	c.visited[key] = true
	c.inclusions++
	c.contexts[file]++
	if !slices.Contains(c.localWDs[file], wc.localWD) {
		c.localWDs[file] = append(c.localWDs[file], wc.localWD)
	}
	n := 0 // the entries of the file so far
	for _, doc := range ix.Docs[file] {
		if err := c.walkIncludes(file, doc, wc, depth, &n); err != nil {
			return err
		}
		if err := c.walkExtends(file, file, doc, wc, wc.localWD, depth); err != nil {
			return err
		}
	}
	return nil
}

// notComposeMsg says a file is no compose file, without its keys.
const notComposeMsg = "not a compose file: none of its top-level keys is one of compose's (services, include, volumes, networks, ...)"

// notCompose finds a document none of whose top-level keys is compose's (nor an extension):
// a file included by mistake or by malice (a credentials file), whose keys compose-go would
// print.
func notCompose(docs []*yaml.Node) *yaml.Node {
	for _, d := range docs {
		if d.Kind != yaml.MappingNode || len(d.Content) == 0 {
			continue
		}
		compose := false
		for i := 0; i < len(d.Content); i += 2 {
			k := d.Content[i].Value
			compose = compose || composeTopKeys[k] || strings.HasPrefix(k, "x-")
		}
		if !compose {
			return d.Content[0]
		}
	}
	return nil
}

// includeNodes is an include entry as written.
type includeNodes struct {
	paths    []*yaml.Node
	pathPath []string // the model path of its path values, for interpolation
	dir      *yaml.Node
	envFiles []*yaml.Node
	envPath  []string
}

func includeEntries(doc *yaml.Node) []includeNodes {
	seq := source.Deref(source.Get(doc, "include"))
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	var out []includeNodes
	for _, e := range seq.Content {
		e = source.Deref(e)
		var in includeNodes
		switch e.Kind {
		case yaml.ScalarNode:
			in.paths, in.pathPath = []*yaml.Node{e}, []string{"include", "[]"}
		case yaml.MappingNode:
			p := source.Deref(source.Get(e, "path"))
			switch {
			case p == nil:
				continue
			case p.Kind == yaml.SequenceNode:
				in.paths, in.pathPath = scalarItems(p), []string{"include", "[]", "path", "[]"}
			default:
				in.paths, in.pathPath = []*yaml.Node{p}, []string{"include", "[]", "path"}
			}
			if d := source.Deref(source.Get(e, "project_directory")); d != nil && d.Kind == yaml.ScalarNode && d.Value != "" {
				in.dir = d
			}
			switch f := source.Deref(source.Get(e, "env_file")); {
			case f == nil:
			case f.Kind == yaml.SequenceNode:
				in.envFiles, in.envPath = scalarItems(f), []string{"include", "[]", "env_file", "[]"}
			case f.Kind == yaml.ScalarNode:
				in.envFiles, in.envPath = []*yaml.Node{f}, []string{"include", "[]", "env_file"}
			}
		}
		if len(in.paths) > 0 {
			out = append(out, in)
		}
	}
	return out
}

func scalarItems(seq *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, c := range seq.Content {
		if c = source.Deref(c); c.Kind == yaml.ScalarNode {
			out = append(out, c)
		}
	}
	return out
}

// walkIncludes follows a document's include entries as compose-go's ApplyInclude resolves
// them: paths from the loader's folder, project_directory and env files from the project's
// WorkingDir, the included project's .env from its folder when it names no env file.
func (c *confiner) walkIncludes(file string, doc *yaml.Node, wc walkCtx, depth int, n *int) error {
	for _, in := range includeEntries(doc) {
		vals, ok := c.interpolate(in.paths, wc.env, in.pathPath)
		if !ok {
			continue // compose-go reports what does not interpolate
		}
		*n++
		ent := &incEntry{paths: vals, pos: c.ix.Pos(file, in.paths[0]), ctx: wc.id()}
		edge := fmt.Sprintf("%s\x00%d", file, *n)
		for i, v := range vals {
			t := v
			if !filepath.IsAbs(t) {
				t = filepath.Join(wc.localWD, v)
			}
			ent.targets = append(ent.targets, t)
			if !slices.Contains(c.edges[t], edge) {
				c.edges[t] = append(c.edges[t], edge)
			}
			if _, inside := c.root.Resolve(t); !inside {
				c.refuse(c.ix.Pos(file, in.paths[i]), "%s", c.outside("include", in.paths[i].Value))
				ent.refused = true
			}
		}
		switch {
		case ent.refused:
		case c.inclusions >= maxInclusions:
			c.refuse(c.ix.Pos(file, in.paths[0]), "the includes reach more than %d files or contexts: refusing an include bomb", maxInclusions)
			ent.refused = true
		case slices.ContainsFunc(ent.targets, func(t string) bool { return c.contexts[t] >= max(maxContexts, len(c.edges[t])) }):
			c.refuse(c.ix.Pos(file, in.paths[0]), "the includes load %s in more than %d folders or sets of variables: refusing an include bomb", in.paths[0].Value, maxContexts)
			ent.refused = true
		}
		// the project's folder, and its WorkingDir as compose-go writes it (worked out only
		// inside the root: compose-go's loader looks at what it names)
		projDir, dirOf := filepath.Dir(abs(ent.targets[0])), vals[0]
		if in.dir != nil {
			d, ok := c.interpolate([]*yaml.Node{in.dir}, wc.env, []string{"include", "[]", "project_directory"})
			if !ok {
				continue
			}
			pd := d[0]
			projDir, dirOf = pd, pd
			if !filepath.IsAbs(pd) {
				projDir = filepath.Join(wc.workingDir, pd)
			}
			st := c.state(c.projDirs, pd)
			if _, inside := c.root.Resolve(projDir); !inside {
				c.refuse(c.ix.Pos(file, in.dir), "%s", c.outside("project_directory", in.dir.Value))
				ent.refused, st.refused = true, true
			} else {
				st.allowed = true
			}
		}
		env, chain, ok := c.includeEnv(file, in, wc, projDir, ent)
		if !ok {
			continue
		}
		ent.key = strings.Join(ent.targets, "\x00") + "\x00" + abs(projDir) + "\x00" + chain
		c.addInclude(file, *n, ent)
		if ent.refused {
			continue
		}
		workDir := dirOf
		if !filepath.IsAbs(dirOf) || in.dir == nil {
			workDir = localDir(wc.localWD, dirOf)
		}
		child := walkCtx{localWD: projDir, workingDir: workDir, env: env, envChain: chain}
		ent.child = child.id()
		for _, t := range ent.targets {
			if _, err := os.Stat(t); err != nil {
				continue // compose-go says the file is missing
			}
			err := c.walk(t, nil, child, depth+1)
			var le *analyze.LoadError
			if errors.As(err, &le) && le.Msg == notComposeMsg {
				c.refuse(c.ix.Pos(file, in.paths[slices.Index(ent.targets, t)]), "include %s is %s", in.paths[slices.Index(ent.targets, t)].Value, notComposeMsg)
				ent.refused = true
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// includeEnv reads an include entry's env files, or the included project's .env, as
// compose-go will, and returns the variables the included files are interpolated with. A
// named env file refused (outside the root, unreadable, too large, not parsing, expanding
// past the bounds) is read by compose-go as an empty one; a refused .env refuses the include,
// which compose-go cannot be told to load without it. ok is false when compose-go will fail
// on the entry itself.
func (c *confiner) includeEnv(file string, in includeNodes, wc walkCtx, projDir string, ent *incEntry) (map[string]string, string, bool) {
	env, chain := wc.env, wc.envChain
	type envFile struct {
		path  string
		node  *yaml.Node // nil for the project's .env
		state *valueState
	}
	var files []envFile
	if len(in.envFiles) == 0 {
		if ent.refused {
			return env, chain, true
		}
		f := filepath.Join(projDir, ".env")
		if _, inside := c.root.Resolve(f); !inside {
			c.refuse(analyze.Pos{File: c.display(abs(f))}, "%s", c.outside("", ""))
			ent.refused = true
			return env, chain, true
		}
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			files = append(files, envFile{path: abs(f)})
		}
	} else {
		vals, ok := c.interpolate(in.envFiles, wc.env, in.envPath)
		if !ok {
			return nil, "", false
		}
		for i, v := range vals {
			f := v
			if !filepath.IsAbs(f) {
				f = filepath.Join(wc.workingDir, f)
			}
			st := c.state(c.envFiles, v)
			if _, inside := c.root.Resolve(f); !inside {
				c.refuse(c.ix.Pos(file, in.envFiles[i]), "%s", c.outside("env_file", in.envFiles[i].Value))
				st.refused = true
				continue
			}
			files = append(files, envFile{path: abs(f), node: in.envFiles[i], state: st})
		}
	}
	vars := map[string]string{}
	for _, f := range files {
		at := analyze.Pos{File: c.display(f.path)}
		if f.node != nil {
			at = c.ix.Pos(file, f.node)
		}
		fail := func(msg string) {
			c.refuse(at, "%s", msg)
			if f.state != nil {
				f.state.refused = true
			} else {
				ent.refused = true
			}
		}
		b, err := c.src.Read(f.path, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // compose-go says the file is missing
		case source.IsOutside(err) && f.node != nil:
			fail(c.outside("env_file", f.node.Value))
			continue
		case source.IsOutside(err):
			fail(c.outside("", ""))
			continue
		case err != nil:
			fail(source.CleanPathErr(err))
			continue
		}
		m, _, err := parseEnv(b, func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			v, ok := vars[k]
			return v, ok
		})
		if err != nil {
			le := envLoadError(c.display(f.path), err).(*analyze.LoadError)
			c.refuse(le.Pos, "%s", le.Msg)
			if f.state != nil {
				f.state.refused = true
			} else {
				ent.refused = true
			}
			continue
		}
		if f.state != nil {
			f.state.allowed = true
		}
		maps.Copy(vars, m)
		chain += ";" + f.path
	}
	if len(vars) > 0 {
		env = maps.Clone(env)
		maps.Copy(env, vars)
	}
	return env, chain, true
}

// walkExtends follows the extends files of a document's services. from is the file
// compose-go loads them from (the extending file, for a chain too: it keeps that file in its
// context), wd the folder relative paths resolve from: the loader's for the file's own
// services, the extended file's folder along a chain.
func (c *confiner) walkExtends(from, file string, doc *yaml.Node, wc walkCtx, wd string, depth int) error {
	services := source.Deref(source.Get(doc, "services"))
	if services == nil || services.Kind != yaml.MappingNode {
		return nil
	}
	for i := 1; i < len(services.Content); i += 2 {
		name := services.Content[i-1].Value
		ext := source.Deref(source.Get(source.Deref(services.Content[i]), "extends"))
		if ext == nil || ext.Kind != yaml.MappingNode {
			continue
		}
		f := source.Deref(source.Get(ext, "file"))
		if f == nil || f.Kind != yaml.ScalarNode || f.Value == "" {
			continue
		}
		vals, ok := c.interpolate([]*yaml.Node{f}, wc.env, []string{"services", name, "extends", "file"})
		if !ok {
			continue
		}
		v, t := vals[0], vals[0]
		if !filepath.IsAbs(t) {
			t = filepath.Join(wd, v)
		}
		ent := &extEntry{target: t, pos: c.ix.Pos(file, f)}
		k := [2]string{from, v}
		c.extends[k] = append(c.extends[k], ent)
		if _, inside := c.root.Resolve(t); !inside {
			c.refuse(c.ix.Pos(file, f), "%s", c.outside("extends file", f.Value))
			ent.refused = true
			continue
		}
		seen := "extends\x00" + from + "\x00" + t + "\x00" + wc.envChain
		if c.visited[seen] || depth > 32 {
			continue
		}
		c.visited[seen] = true
		if _, ok := c.ix.Docs[t]; !ok {
			b, err := source.ReadSource(c.ix.Input, t)
			if errors.Is(err, fs.ErrNotExist) {
				continue // compose-go says the file is missing
			}
			if err != nil {
				return err
			}
			if err := c.ix.add(t, b); err != nil {
				return err
			}
		}
		for _, d := range c.ix.Docs[t] {
			c.skippedIncludes(d, wc)
			if err := c.walkExtends(from, t, d, wc, filepath.Dir(t), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// skippedIncludes notes the env_file and project_directory values of the includes of a file
// extended from: compose-go interpolates them, and skips the includes. They are given a
// stand-in, unread, unless the same value is read elsewhere.
func (c *confiner) skippedIncludes(doc *yaml.Node, wc walkCtx) {
	for _, in := range includeEntries(doc) {
		if vals, ok := c.interpolate(in.envFiles, wc.env, in.envPath); ok {
			for _, v := range vals {
				c.state(c.envFiles, v)
			}
		}
		if in.dir != nil {
			if vals, ok := c.interpolate([]*yaml.Node{in.dir}, wc.env, []string{"include", "[]", "project_directory"}); ok {
				c.state(c.projDirs, vals[0])
			}
		}
	}
}

// interpolate gives the values of nodes as compose-go will see them, interpolated with env
// as the doctor interpolates (see envTracker.substitute). ok is false when one does not
// interpolate: compose-go reports it.
func (c *confiner) interpolate(nodes []*yaml.Node, env map[string]string, path []string) ([]string, bool) {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		if !strings.Contains(n.Value, "$") {
			out[i] = n.Value
			continue
		}
		t := newEnvTracker(false)
		t.budget = c.budget
		if u, ok := unsetValueAt(path); ok {
			t.values[n.Value] = u
		}
		v, err := t.substitute(n.Value, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// addInclude records the nth entry of file (from 1) in one context.
func (c *confiner) addInclude(file string, n int, ent *incEntry) {
	slots := c.includes[file]
	for len(slots) < n {
		slots = append(slots, nil)
	}
	slots[n-1] = append(slots[n-1], ent)
	c.includes[file] = slots
}

func (c *confiner) state(m map[string]*valueState, v string) *valueState {
	st, ok := m[v]
	if !ok {
		st = &valueState{}
		m[v] = st
	}
	return st
}

// localDir is compose-go's localResourceLoader.Dir: the folder of p, relative to the loader's
// folder wd where it can be.
func localDir(wd, p string) string {
	path := p
	if !filepath.IsAbs(p) {
		path = filepath.Join(wd, p)
	}
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		path = filepath.Dir(p)
		if !filepath.IsAbs(path) {
			path = filepath.Join(wd, path)
		}
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		return path
	}
	return rel
}

// uniqueLocalWD is the one folder a file's relative paths resolve from, if the walk saw it
// loaded from one only.
func (c *confiner) uniqueLocalWD(file string) (string, bool) {
	wds := c.localWDs[file]
	if len(wds) != 1 {
		return "", false
	}
	return wds[0], true
}
