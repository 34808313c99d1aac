package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	interp "github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/override"
	"github.com/compose-spec/compose-go/v2/schema"
	"github.com/compose-spec/compose-go/v2/transform"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/compose-spec/compose-go/v2/validation"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v3"
)

// compose-go checks each document of each compose file against the compose-spec JSON schema
// as it merges them in, and compiles the schema anew for each check: some 7 ms a document,
// most of the time a small project takes to load. The doctor runs the same checks on the same
// values, with the schema compiled once a process (checkSchema), and has compose-go skip them
// (loader.Options.SkipValidation) when they pass. Doing so repeats what compose-go does to the
// files before each check (interpolation, merge, canonical form), some 10 to 20 µs a node of
// the documents: it is done only where it costs less than the compilations it saves, in a
// process that compiles the schema more than once and for documents of up to nodesPerCompile
// nodes a compilation. Every project the checks refuse is loaded again
// with compose-go's own checks, so that what it is told is compose-go's error, word for word
// and of compose-go's types; so is a project whose load takes a way the doctor does not follow
// here (include, extends, !reset and !override tags, a project name written with variables)
// and one that compose-go then fails to load for any reason.

// nodesPerCompile is the size of the documents (YAML nodes, aliases expanded) whose checks
// by checkSchema cost about what compose-go spends compiling the schema once (a third less:
// the cost of a node varies with what it holds).
const nodesPerCompile = 800

// composeChecked counts the loads compose-go checked itself: each compiled the schema. After
// the first, a process is taken to load more, and the doctor's own compilation to pay off.
var composeChecked atomic.Int64

// composeSchema is the schema compose-go embeds, compiled as schema.Validate compiles it.
var composeSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	schemaCompiled.Store(true)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema.Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("compose-spec.json", doc); err != nil {
		return nil, err
	}
	c.RegisterFormat(&jsonschema.Format{Name: "duration", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("expected string")
		}
		_, err := time.ParseDuration(s)
		return err
	}})
	return c.Compile("compose-spec.json")
})

// schemaSkipped counts the loads whose schema checks compose-go skipped: the tests hold the
// projects the doctor can check itself to it.
var schemaSkipped atomic.Int64

// schemaCompiled is set once composeSchema has compiled the schema.
var schemaCompiled atomic.Bool

// versionWarned are the files whose obsolete version key was noted: compose-go notes it once a
// file and a process, and the doctor, checking files itself, keeps the list compose-go would
// have. logMu guards it.
var versionWarned = map[string]bool{}

// versionWarning is compose-go's note about a version key (loader.Options.warnObsoleteVersion).
var versionWarning = regexp.MustCompile("^(.*): the attribute `version` is obsolete, it will be ignored, please remove it to avoid potential confusion$")

// loadProject is po.LoadProject with the schema checked by checkSchema where that pays, by
// compose-go otherwise. skip is what the load options of po, and of every po again makes, set
// SkipValidation to.
func (p *project) loadProject(ctx context.Context, po *cli.ProjectOptions, skip *bool, again func() (*cli.ProjectOptions, error), stdin []byte, opts Options) (*types.Project, error) {
	run := func(po *cli.ProjectOptions) (*types.Project, error) {
		if p.guard != nil {
			p.guard.reset()
		}
		p.env.budget.reset()
		if stdin != nil {
			restore := swapStdin(stdin)
			defer restore()
		}
		return po.LoadProject(ctx)
	}
	if opts.composeValidates {
		composeChecked.Add(1)
		return run(po)
	}
	files := configFiles(po)
	mark := len(p.logs.lines)
	var warned []string
	if p.worthChecking(files) {
		saved := p.env.clone()
		var ok bool
		ok, warned = p.checkSchema(files, po.Environment)
		if ok {
			checked := len(p.logs.lines)
			*skip = true
			proj, err := run(po)
			*skip = false
			if err == nil && proj.Name != "" {
				p.logs.place(mark, checked, len(warned))
				schemaSkipped.Add(1)
				return proj, nil
			}
			// compose-go fails, or stops at the name it has not, once it has checked the
			// files: its own checks say what is wrong, as they would have.
			p.env.restore(saved)
			if po, err = again(); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range warned {
		delete(versionWarned, f)
	}
	p.logs.lines = p.logs.lines[:mark]
	composeChecked.Add(1)
	proj, err := run(po)
	p.logs.dedupVersion(mark)
	return proj, err
}

// configFiles are the files of po as compose-go names them, and as the index holds them.
func configFiles(po *cli.ProjectOptions) []string {
	var files []string
	for _, f := range po.ConfigPaths {
		if a, err := filepath.Abs(f); err == nil && f != "-" {
			f = a
		}
		files = append(files, f)
	}
	return files
}

// worthChecking reports whether checkSchema costs less than the compilations of the schema it
// saves: one for each document of the files, but the first of a process, which compiles the
// schema once in any case.
func (p *project) worthChecking(files []string) bool {
	var docs []*yaml.Node
	for _, f := range files {
		docs = append(docs, p.Index.Docs[f]...)
	}
	saved := int64(len(docs))
	if !schemaCompiled.Load() && composeChecked.Load() == 0 {
		saved--
	}
	left := saved * nodesPerCompile
	for _, doc := range docs {
		if left -= source.ExpandedSize(doc, map[*yaml.Node]int64{}, left); left < 0 {
			return false
		}
	}
	return saved > 0
}

// checkSchema does what compose-go does to the files up to its last schema check, with the
// schema compiled once, and reports whether compose-go may skip the checks: they all passed.
// It logs what compose-go would log on the way, its notes about version keys included, and
// returns the files it noted. It reads the documents the index parsed, which are the bytes
// compose-go reads, and interpolates them with env.
func (p *project) checkSchema(files []string, env types.Mapping) (ok bool, warned []string) {
	sch, err := composeSchema()
	if err != nil {
		return false, nil
	}
	for _, f := range files {
		// compose-go sets COMPOSE_PROJECT_NAME once it has the name, after these checks
		// would have started.
		if bytes.Contains(p.Index.Src[f], []byte("COMPOSE_PROJECT_NAME")) {
			return false, nil
		}
	}
	details := types.ConfigDetails{Environment: env}
	iopts := *loader.ToOptions(&details, nil).Interpolate
	iopts.Substitute = p.env.clone().substitute
	dict := map[string]any{}
	for _, f := range files {
		docs, found := p.Index.Docs[f]
		if !found {
			return false, warned
		}
		for _, doc := range docs {
			if tagged(doc) || hasVar(source.Scalar(source.Get(doc, "name"))) {
				return false, warned
			}
			var raw any
			if err := doc.Decode(&raw); err != nil {
				return false, warned
			}
			v, err := stringKeys(raw)
			cfg, isMap := v.(map[string]any)
			if err != nil || !isMap {
				return false, warned
			}
			if cfg, err = interp.Interpolate(cfg, iopts); err != nil {
				return false, warned
			}
			fixEmptyNotNull(cfg)
			if extends(cfg) {
				return false, warned
			}
			if inc, ok := cfg["include"]; ok {
				if inc != nil {
					return false, warned
				}
				delete(cfg, "include")
			}
			if dict, err = override.Merge(dict, cfg); err != nil {
				return false, warned
			}
			if dict, err = override.EnforceUnicity(dict); err != nil {
				return false, warned
			}
			if sch.Validate(dict) != nil {
				return false, warned
			}
			if _, ok := dict["version"]; ok {
				if !versionWarned[f] {
					logrus.Warning(fmt.Sprintf("%s: the attribute `version` is obsolete, it will be ignored, please remove it to avoid potential confusion", f))
					versionWarned[f] = true
					warned = append(warned, f)
				}
				delete(dict, "version")
			}
			if dict, err = transform.Canonical(dict, false); err != nil {
				return false, warned
			}
			dict = loader.OmitEmpty(dict)
			if dict, err = override.EnforceUnicity(dict); err != nil {
				return false, warned
			}
		}
	}
	if dict, err = transform.SetDefaultValues(dict); err != nil {
		return false, warned
	}
	return validation.Validate(dict) == nil, warned
}

// tagged reports a !reset or !override tag under n: compose-go resolves them as it decodes.
func tagged(n *yaml.Node) bool {
	if n.Tag == "!reset" || n.Tag == "!override" {
		return true
	}
	return slices.ContainsFunc(n.Content, tagged)
}

// extends reports a service that extends another, or a services section compose-go's
// extends step refuses.
func extends(cfg map[string]any) bool {
	s, ok := cfg["services"]
	if !ok {
		return false
	}
	services, ok := s.(map[string]any)
	if !ok {
		return true
	}
	for _, svc := range services {
		if svc == nil {
			continue
		}
		m, ok := svc.(map[string]any)
		if !ok {
			return true
		}
		if _, ok := m["extends"]; ok {
			return true
		}
	}
	return false
}

// stringKeys is compose-go's convertToStringKeysRecursive: mappings decoded with keys that are
// not all strings become map[string]any, and a key that is not a string is an error.
func stringKeys(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			s, ok := k.(string)
			if !ok {
				return nil, errors.New("non-string key")
			}
			c, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			m[s] = c
		}
		return m, nil
	case []any:
		var l []any // an empty list becomes nil, as in compose-go
		for _, e := range v {
			c, err := stringKeys(e)
			if err != nil {
				return nil, err
			}
			l = append(l, c)
		}
		return l, nil
	}
	return v, nil
}

// fixEmptyNotNull is compose-go's: a nil list becomes an empty one.
func fixEmptyNotNull(v any) any {
	switch v := v.(type) {
	case []any:
		if v == nil {
			return []any{}
		}
		for i, e := range v {
			v[i] = fixEmptyNotNull(e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = fixEmptyNotNull(e)
		}
	}
	return v
}

// clone is a copy of e: it substitutes as e does now, and what either records later is its
// own.
func (e *envTracker) clone() *envTracker {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := newEnvTracker(e.strict)
	c.values = e.values // written by learn only, before any load
	c.budget = e.budget
	for k, v := range e.missing {
		c.missing[k] = slices.Clone(v)
	}
	for k, v := range e.set {
		c.set[k] = v
	}
	for k, v := range e.setIn {
		c.setIn[k] = slices.Clone(v)
	}
	return c
}

// restore takes back what e recorded since c was cloned from it.
func (e *envTracker) restore(c *envTracker) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.missing, e.set, e.setIn = c.missing, c.set, c.setIn
}

// place puts the lines checkSchema logged from mark to checked where compose-go logs them,
// in place of the same lines compose-go logged after them without its notes on version keys
// (versions of them): after what it logs before it reads the files (a note about a symlink),
// before what it logs once the files are merged.
func (c *logCapture) place(mark, checked, versions int) {
	ours := slices.Clone(c.lines[mark:checked])
	theirs := c.lines[checked:]
	pre := 0
	for pre < len(theirs) && strings.HasPrefix(theirs[pre], "project has been loaded without an explicit name from a symlink") {
		pre++
	}
	same := len(ours) - versions
	if pre+same > len(theirs) {
		return // not what compose-go logs: keep both
	}
	out := append(slices.Clone(theirs[:pre]), ours...)
	out = append(out, theirs[pre+same:]...)
	c.lines = append(c.lines[:mark], out...)
}

// dedupVersion drops compose-go's notes, from mark on, about version keys checkSchema has
// noted already in this process, and records the others.
func (c *logCapture) dedupVersion(mark int) {
	kept := c.lines[:mark]
	for _, l := range c.lines[mark:] {
		if m := versionWarning.FindStringSubmatch(l); m != nil {
			if versionWarned[m[1]] {
				continue
			}
			versionWarned[m[1]] = true
		}
		kept = append(kept, l)
	}
	c.lines = kept
}
