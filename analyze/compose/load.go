package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/consts"
	"github.com/compose-spec/compose-go/v2/errdefs"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/kube"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v3"
)

// Options selects the compose projects to load, with docker compose's own flags.
type Options struct {
	// Paths are compose files or folders, each its own project; "-" reads standard input.
	// With no Paths and no Files the project is found as docker compose finds it.
	Paths       []string
	Files       []string // -f, merged into one project
	ProjectDir  string   // --project-directory
	EnvFiles    []string // --env-file
	ProjectName string   // -p
	Profiles    []string // --profile; none means every service, whatever its profiles
	Recursive   bool     // every compose project under the folders in Paths
	// AllowEmpty makes a Recursive folder with no compose project or manifest in it nothing
	// to check rather than an error: a pre-commit hook runs on any YAML change.
	AllowEmpty bool
	StrictEnv  bool // unset variables and missing env files are errors, as in docker compose
	// AllowOutside are folders a project may read from besides its root (--allow-outside):
	// the git repository holding it, else the folder given. docker compose reads any path.
	AllowOutside []string
	Stdin        io.Reader
	Need         *int64 // --need, for every service
	NeedFrom     string // who set Need, as reports name it; default --need
	// Target is the engine the stacks deploy with (--target): its defaults (Podman's 62.5 MiB
	// /dev/shm) are what a service that sets nothing is predicted to get. Compose when empty.
	Target analyze.Target
	// src reads every input of one Load once; Load makes it.
	src *source.Sources
	// composeValidates leaves the schema checks to compose-go, which compiles the schema for
	// every document (see checkSchema): the tests compare the two.
	composeValidates bool
}

// needFrom names who set Need.
func (o Options) needFrom() string {
	if o.NeedFrom == "" {
		return "--need"
	}
	return o.NeedFrom
}

// DefaultFileNames are the compose file names docker compose looks for, in its order.
var DefaultFileNames = cli.DefaultFileNames

// Load loads every project that opts selects. Each project carries its own errors, so one
// broken project does not stop the others.
func Load(ctx context.Context, opts Options) []*analyze.Project {
	opts.src = source.NewSources()
	// The values interpolated go into the run's register, which its outputs are scrubbed of.
	if opts.src.Secrets = analyze.SecretsOf(ctx); opts.src.Secrets == nil {
		opts.src.Secrets = analyze.NewSecrets()
	}
	ts := targets(opts)
	// Every folder's default project first: a variant that any of them reads (an override,
	// a file included or extended, from this folder or another) is part of it, as docker
	// compose loads it, and is not checked again as a project of its own.
	bases := make([]*project, len(ts))
	var loaded []*project
	for i, t := range ts {
		if t.err != nil || t.k8s || t.noBase || t.note != "" {
			continue
		}
		bases[i] = loadOne(ctx, t, opts)
		if bases[i].model != nil {
			resolve(bases[i], opts.Need, opts.needFrom())
			bases[i].resolveDirectives()
		}
		loaded = append(loaded, bases[i])
	}
	var out []*analyze.Project
	for i, t := range ts {
		switch {
		case t.err != nil:
			out = append(out, &analyze.Project{Name: t.name(), Errors: []*analyze.LoadError{t.err}})
			continue
		case t.note != "":
			out = append(out, &analyze.Project{Name: t.name(), Files: t.files, Notes: []string{t.note}})
			continue
		case t.k8s:
			out = append(out, kube.Load(t.files[0], t.stdin, t.stdinName(), opts.Need, opts.needFrom(), opts.src.Within(t.root)))
			continue
		case bases[i] != nil:
			out = append(out, bases[i].done())
		}
		for _, v := range t.variants {
			if slices.ContainsFunc(loaded, func(p *project) bool { return p.Reads(v) }) {
				continue
			}
			vp := loadVariant(ctx, t, bases[i], v, opts)
			loaded = append(loaded, vp)
			out = append(out, vp.done())
		}
	}
	// A project found by discovery that failed before its name was known (no compose file,
	// a file that does not parse) is named after its file, else its folder: never "".
	for _, p := range out {
		if p.Name != "" {
			continue
		}
		switch {
		case len(p.Files) > 0:
			p.Name = p.Files[0]
		case len(p.Errors) > 0 && p.Errors[0].File != "":
			p.Name = p.Errors[0].File
		default:
			p.Name = "."
		}
	}
	return out
}

// done hides the values of variables in what the project reports, and hands the model over.
func (p *project) done() *analyze.Project {
	p.redact()
	p.Compose = p.model != nil
	if p.Index != nil {
		p.Doc = p
	}
	if p.model != nil {
		for _, name := range p.model.ServiceNames() {
			for _, f := range p.model.Services[name].EnvFiles {
				p.EnvFiles = append(p.EnvFiles, f.Path)
			}
		}
	}
	return p.Project
}

// target is one project to load.
type target struct {
	files    []string
	dir      string
	stdin    []byte
	explicit bool // a PATH argument: COMPOSE_FILE from the environment does not apply
	k8s      bool // a Kubernetes manifest (or a Helm template), told by its content
	err      *analyze.LoadError
	// variants are the other compose files -r found in the folder (docker-compose.gpu.yml);
	// noBase marks a folder that has only those, no default compose file.
	variants []string
	noBase   bool
	// label names the FIFO whose bytes stdin holds; empty for standard input.
	label string
	// note says why -r skipped a file: a target with a note loads nothing.
	note string
	// root is where the project's reads are confined.
	root *source.Root
}

// stdinName is how the "-" file of t is shown.
func (t target) stdinName() string {
	if t.label != "" {
		return t.label
	}
	return analyze.StdinName
}

func (t target) name() string {
	if t.label != "" {
		return t.label
	}
	if len(t.files) > 0 {
		return t.files[0]
	}
	return t.dir
}

func targets(opts Options) []target {
	cwd, _ := os.Getwd()
	if len(opts.Paths) == 0 {
		return []target{{files: opts.Files, dir: opts.ProjectDir, root: filesRoot(opts, false)}}
	}
	var out []target
	if len(opts.Files) > 0 {
		out = append(out, target{files: opts.Files, dir: opts.ProjectDir, root: filesRoot(opts, false)})
	}
	given := func(dirs ...string) *source.Root {
		if opts.ProjectDir != "" {
			dirs = append(dirs, opts.ProjectDir)
		}
		return rootOf(opts, dirs...)
	}
	for _, p := range opts.Paths {
		if p == "-" {
			b, err := readStdin(opts.Stdin)
			out = append(out, piped(b, err, "", opts, given(cwd)))
			continue
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			out = append(out, target{files: []string{p}, err: &analyze.LoadError{Pos: analyze.Pos{File: p}, Msg: source.CleanPathErr(err)}})
		case st.Mode()&fs.ModeNamedPipe != 0:
			// A FIFO (a PATH given as <(...)) yields its bytes once: they are read here and
			// handed on as standard input's are.
			b, err := opts.src.Read(p, true)
			if err == nil {
				err = source.CheckText(b)
			}
			out = append(out, piped(b, err, p, opts, given(cwd)))
		case !st.IsDir() && !st.Mode().IsRegular():
			out = append(out, target{files: []string{p}, err: &analyze.LoadError{Pos: analyze.Pos{File: p}, Msg: source.Readable(p, st.Mode(), true).Error()}})
		case !st.IsDir():
			root := given(filepath.Dir(p))
			out = append(out, target{files: []string{p}, dir: opts.ProjectDir, explicit: true, root: root, k8s: kube.SniffFile(opts.src.Within(root), p) != kube.InputCompose})
		case opts.Recursive:
			root := given(p)
			found, err := findProjects(opts.src.Within(root), p)
			if err != nil {
				out = append(out, target{dir: p, err: &analyze.LoadError{Pos: analyze.Pos{File: p}, Msg: err.Error()}})
			}
			if len(found) == 0 && err == nil && !opts.AllowEmpty {
				out = append(out, target{dir: p, err: &analyze.LoadError{Pos: analyze.Pos{File: p}, Msg: "no compose project or Kubernetes manifest found under this folder"}})
			}
			for _, f := range found {
				if f.skipped != "" {
					out = append(out, target{files: []string{f.path}, note: "skipped: " + f.skipped})
					continue
				}
				if f.manifest {
					out = append(out, target{files: []string{f.path}, explicit: true, k8s: true, root: root})
				} else {
					out = append(out, target{dir: f.path, explicit: true, variants: f.variants, noBase: !f.base, root: root})
				}
			}
		default:
			// A folder without a compose file of its own may hold Kubernetes manifests, one
			// project each; otherwise docker compose's discovery applies.
			root := given(p)
			if !hasComposeFile(p) {
				if ms := kube.FolderManifests(opts.src.Within(root), p); len(ms) > 0 {
					for _, m := range ms {
						out = append(out, target{files: []string{m}, explicit: true, k8s: true, root: root})
					}
					continue
				}
			}
			out = append(out, target{dir: p, explicit: true, root: root})
		}
	}
	return out
}

// piped is the target of bytes read from standard input or from a FIFO named label.
func piped(b []byte, err error, label string, opts Options, root *source.Root) target {
	t := target{files: []string{"-"}, dir: opts.ProjectDir, stdin: b, explicit: true, label: label, root: root}
	if err != nil {
		t.err = &analyze.LoadError{Pos: analyze.Pos{File: t.stdinName()}, Msg: err.Error()}
	} else if k, _, _ := kube.Sniff(b); k != kube.InputCompose {
		t.k8s = true
	}
	return t
}

func readStdin(r io.Reader) ([]byte, error) {
	if r == nil {
		r = os.Stdin
	}
	b, err := io.ReadAll(io.LimitReader(r, source.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	return b, source.CheckText(b)
}

// skipDirs are never searched for compose projects: they hold other people's trees.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "third_party": true, ".venv": true, "venv": true, "__pycache__": true}

// found is a compose project folder or a Kubernetes manifest file.
type found struct {
	path     string
	manifest bool
	base     bool     // the folder has a compose file of a default name
	variants []string // its other compose files, sorted
	skipped  string   // why a file was not read
}

// findProjects returns every folder under root holding a compose file, with its variants
// (the other compose files, see isVariantName and isUnmistakablyCompose), and every Kubernetes manifest, sorted by
// path. Helm templates are skipped: they are not manifests until rendered.
func findProjects(s *source.Sources, root string) ([]found, error) {
	var out []found
	dirs := map[string]int{}
	names := map[string]bool{}
	for _, n := range DefaultFileNames {
		names[n] = true
	}
	folder := func(dir string) *found {
		i, ok := dirs[dir]
		if !ok {
			i = len(out)
			dirs[dir] = i
			out = append(out, found{path: dir})
		}
		return &out[i]
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable corners of a tree are not the doctor's business
		}
		if d.IsDir() && path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !kube.IsYAMLName(d.Name()) {
			return nil
		}
		if !d.Type().IsRegular() {
			// A FIFO would hang the walk and a device never end: say so and go on.
			st, err := os.Stat(path)
			if err == nil && st.IsDir() {
				return nil
			}
			if err != nil || !st.Mode().IsRegular() {
				why := "cannot be read"
				if err == nil {
					why = "not a regular file (" + source.FileKind(st.Mode()) + ")"
				}
				out = append(out, found{path: path, skipped: why})
				return nil
			}
		}
		if names[d.Name()] {
			folder(filepath.Dir(path)).base = true
			return nil
		}
		b, err := source.ReadSource(s, path)
		if err != nil {
			return nil
		}
		switch k, _, _ := kube.Sniff(b); {
		case k == kube.InputKubernetes:
			out = append(out, found{path: path, manifest: true})
		case k == kube.InputCompose && (isVariantName(path) && isComposeContent(b) || isUnmistakablyCompose(b)):
			f := folder(filepath.Dir(path))
			f.variants = append(f.variants, path)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, err
}

// logMu serialises loads: compose-go logs through the global logrus logger, which the doctor
// captures per project.
var logMu sync.Mutex

type logCapture struct{ lines []string }

func (c *logCapture) Levels() []logrus.Level { return logrus.AllLevels }
func (c *logCapture) Fire(e *logrus.Entry) error {
	c.lines = append(c.lines, e.Message)
	return nil
}

func loadOne(ctx context.Context, t target, opts Options) *project {
	logMu.Lock()
	defer logMu.Unlock()
	capture := &logCapture{}
	logger := logrus.StandardLogger()
	oldOut, oldHooks, oldLevel := logger.Out, logger.ReplaceHooks(logrus.LevelHooks{}), logger.Level
	logger.SetOutput(io.Discard)
	logger.SetLevel(logrus.WarnLevel)
	logger.AddHook(capture)
	defer func() {
		logger.SetOutput(oldOut)
		logger.ReplaceHooks(oldHooks)
		logger.SetLevel(oldLevel)
	}()

	p := &project{Project: &analyze.Project{Name: t.name(), Dir: t.dir, Engine: opts.Target.Engine()}, env: newEnvTracker(opts.StrictEnv), logs: capture, secrets: opts.src.Secrets}
	p.load(ctx, t, opts)
	for _, l := range capture.lines {
		n := noteFromLog(l)
		if p.Index != nil {
			for file := range p.Index.Docs {
				n = strings.ReplaceAll(n, file, p.Index.Display(file))
			}
		}
		p.Notes = append(p.Notes, n)
	}
	if vars := p.env.unset(); len(vars) > 0 && !opts.StrictEnv {
		p.Notes = append(p.Notes, fmt.Sprintf("variables not set: %s; values that depend on them are marked and analysed as unset", strings.Join(vars, ", ")))
	}
	missing, outside := p.missingEnvFiles()
	if len(missing) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("env_file not found: %s; docker compose stops at a missing env_file unless it is marked required: false", strings.Join(missing, ", ")))
	}
	if len(outside) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("env_file outside the project root, not read: %s; docker compose would read it (--allow-outside widens the root)", strings.Join(outside, ", ")))
	}
	return p
}

// missingEnvFiles lists the required env files that do not exist, with their services, and
// the env files outside the project root, which are not even looked at. The doctor reads no
// env_file (environment values are never its input), so one that is missing does not stop
// the analysis; --strict-env makes it an error, as in docker compose. A path written with an
// unset variable is left to the note about variables.
func (p *project) missingEnvFiles() (missing, outside []string) {
	if p.model == nil {
		return nil, nil
	}
	users := map[string][]string{}
	for _, name := range p.model.ServiceNames() {
		for _, f := range p.model.Services[name].EnvFiles {
			if strings.HasPrefix(f.Path, placeholder) {
				continue
			}
			file := p.Index.Display(f.Path)
			if _, inside := p.root.Resolve(f.Path); !inside {
				if users[file] == nil {
					outside = append(outside, file)
				}
				users[file] = append(users[file], name)
				continue
			}
			if !f.Required {
				continue
			}
			if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
				if users[file] == nil {
					missing = append(missing, file)
				}
				users[file] = append(users[file], name)
			}
		}
	}
	with := func(files []string) []string {
		out := make([]string, len(files))
		for i, f := range files {
			out[i] = fmt.Sprintf("%s (%s)", f, someOf(users[f], 3))
		}
		return out
	}
	return with(missing), with(outside)
}

// someOf lists the first n names and counts the rest: "a, b, c and 37 more", so that a
// note about a stack of forty services still reads in a line or two.
func someOf(names []string, n int) string {
	if len(names) <= n+1 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

var unsetLog = regexp.MustCompile(`^The "(\w+)" variable is not set`)

// noteFromLog keeps compose-go's warnings as notes, lowercased to read as the doctor's own.
func noteFromLog(l string) string {
	if m := unsetLog.FindStringSubmatch(l); m != nil {
		return fmt.Sprintf("variable %s is not set, a blank string is used", m[1])
	}
	if l != "" {
		l = strings.ToLower(l[:1]) + l[1:]
	}
	return strings.TrimSuffix(l, ".")
}

// project is a compose project as the loader builds it: the model the rules see, the
// compose-go project, the source index and the variables it was interpolated with. It is
// the model's Document.
type project struct {
	*analyze.Project
	model *types.Project
	Index *Index
	env   *envTracker
	// logs are what compose-go logs while the project loads.
	logs *logCapture
	// secrets is the run's register of what it must not print.
	secrets *analyze.Secrets
	// root is where the project's reads are confined.
	root *source.Root
	// guard answers compose-go's loads of include and extends files.
	guard *guard
	// src reads files confined to root: the Dockerfiles services build.
	src *source.Sources
	// badVolumes are the volumes entries compose-go cannot parse, by their interpolated
	// text, with why (see castVolume).
	badVolumes map[string]string
}

func (p *project) load(ctx context.Context, t target, opts Options) {
	env := os.Environ()
	if t.explicit {
		env = slicesDelete(env, "COMPOSE_FILE=")
	}
	pwd, _ := os.Getwd()
	profiles := cli.WithProfiles([]string{"*"})
	if len(opts.Profiles) > 0 {
		profiles = cli.WithProfiles(opts.Profiles)
	}
	files := t.files
	skipSchema := false // checkSchema has done compose-go's schema checks (loadProject)
	c := newConfiner(opts.src.Within(t.root))
	defer c.stand.Close()
	p.root, p.guard = c.root, &c.g
	p.src = opts.src.Within(c.root)
	for _, f := range append(slices.Clone(t.files), opts.EnvFiles...) {
		if f != "-" {
			c.explicit[abs(f)] = true
		}
	}
	newOptions := func(consistent bool) (*cli.ProjectOptions, error) {
		return cli.NewProjectOptions(files,
			cli.WithWorkingDirectory(t.dir),
			cli.WithEnv(env),
			cli.WithEnv([]string{"PWD=" + pwd}),
			cli.WithEnvFiles(opts.EnvFiles...),
			c.dotEnv(opts.EnvFiles),
			c.composeFile,
			cli.WithConfigFileEnv,
			cli.WithDefaultConfigPath,
			c.configPaths,
			cli.WithEnvFiles(opts.EnvFiles...),
			c.dotEnv(opts.EnvFiles),
			profiles,
			cli.WithName(opts.ProjectName),
			cli.WithResolvedPaths(true),
			cli.WithoutEnvironmentResolution,
			cli.WithConsistency(consistent),
			cli.WithLoadOptions(func(o *loader.Options) {
				if o.Interpolate != nil { // nil while compose-go only lists the files
					o.Interpolate.Substitute = p.env.substitute
					o.Interpolate.TypeCastMapping = c.casts(o.Interpolate.TypeCastMapping)
					o.Interpolate.TypeCastMapping[volumeCast] = p.castVolume
				}
				o.SkipValidation = skipSchema
				o.ResourceLoaders = append([]loader.ResourceLoader{&c.g}, o.ResourceLoaders...)
				o.Listeners = append(o.Listeners, c.g.listen)
			}),
		)
	}
	// The refusals are errors of the project, which is still analysed without what they
	// refused.
	defer func() { p.Errors = append(c.errs, p.Errors...) }()
	po, err := newOptions(true)
	where := analyze.Pos{File: orDot(t.dir)}
	if len(t.files) > 0 {
		where = analyze.Pos{File: t.files[0]}
	}
	var le *analyze.LoadError
	switch {
	case errors.As(err, &le):
		p.Errors = append(p.Errors, le)
		return
	case err != nil:
		p.Fail(where, "%s", cleanErr(err))
		return
	case c.noFiles:
		return // the refusals say why
	}
	if len(po.ConfigPaths) == 0 {
		p.Fail(where, "no compose file found in this folder or its parents (looked for %s)", strings.Join(DefaultFileNames, ", "))
		return
	}
	dir, err := po.GetWorkingDir()
	if err != nil {
		p.Fail(where, "%s", cleanErr(err))
		return
	}
	p.Dir = dir
	p.Index = newIndex(dir, c.src)
	c.ix, c.dir = p.Index, dir
	top := walkCtx{localWD: dir, workingDir: dir, env: po.Environment}
	c.g.setTop(po.ConfigPaths, top.id())
	for _, f := range po.ConfigPaths {
		var content []byte
		if f == "-" {
			content = t.stdin
			p.Index.Names[f] = t.stdinName()
		} else if fifo, ok := c.fifos[f]; ok {
			content, _ = c.src.Read(fifo, true)
			p.Index.Names[f] = p.Index.Display(fifo)
		}
		p.Index.top = append(p.Index.top, f)
		p.Files = append(p.Files, p.Index.Display(f))
		if err := c.walk(f, content, top, 0); err != nil {
			p.Errors = append(p.Errors, source.AsLoadError(err, p.Index.Display(f)))
			return
		}
	}
	p.directiveErrors()
	p.env.learn(p.Index)
	load := func(po *cli.ProjectOptions, consistent bool) (*types.Project, error) {
		again := func() (*cli.ProjectOptions, error) { return newOptions(consistent) }
		return p.loadProject(ctx, po, &skipSchema, again, t.stdin, opts)
	}
	// compose-go writes the name it settles on into the environment: read it first.
	nameFromEnv := po.Environment[consts.ComposeProjectName] != ""
	proj, err := load(po, true)
	if err != nil && errdefs.IsInvalidError(err) && !opts.StrictEnv {
		// An override or partial file alone fails docker compose's consistency checks
		// (a service without an image, an undefined volume): say so, and analyse it anyway.
		p.Notes = append(p.Notes, "docker compose would refuse this project as it stands: "+cleanErr(err))
		if po, err = newOptions(false); err == nil {
			proj, err = load(po, false)
		}
	}
	if err != nil {
		p.Errors = append(p.Errors, p.locate(err)...)
		return
	}
	if opts.StrictEnv {
		// compose-go reads the services' env files itself: only bounded regular files
		// may reach it.
		// One that is refused is reported at its entry and left out, and the rest of the
		// project is still analysed.
		for name, s := range proj.Services {
			kept := s.EnvFiles[:0:0]
			for _, f := range s.EnvFiles {
				at, written := p.envFileEntry(name, f.Path)
				if err := c.envFile(f.Path, proj.Environment, at, written); err != nil {
					p.Errors = append(p.Errors, err)
					continue
				}
				kept = append(kept, f)
			}
			s.EnvFiles = kept
			proj.Services[name] = s
		}
		if proj, err = proj.WithServicesEnvironmentResolved(false); err != nil {
			p.Errors = append(p.Errors, p.locate(err)...)
			return
		}
	}
	p.ComposeName = proj.Name
	p.Name = p.shownName(proj.Name, opts.ProjectName != "", nameFromEnv)
	p.model = proj
}

// shownName is how reports name a project docker compose calls name: as written where a
// variable sets it (name: ${TOKEN}, COMPOSE_PROJECT_NAME), so that its value, which may be
// anything the environment holds, is not printed.
func (p *project) shownName(name string, fromFlag, fromEnv bool) string {
	if fromFlag {
		return name
	}
	if fromEnv {
		return "${" + consts.ComposeProjectName + "}"
	}
	written := ""
	for _, f := range p.Index.top {
		for _, d := range p.Index.Docs[f] {
			if n := source.Get(d, "name"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
				written = n.Value
			}
		}
	}
	if hasVar(written) {
		return written
	}
	return name
}

// envFileEntry is where a service names an env file, and how: the entry of its env_file
// that resolves to path, else the service and "" (an entry written with a variable).
func (p *project) envFileEntry(service, path string) (analyze.Pos, string) {
	written := ""
	_, at, ok := p.Index.LookupItem(service, "env_file", func(n *yaml.Node) bool {
		v := n.Value
		if n.Kind == yaml.MappingNode {
			v = source.Scalar(source.Get(n, "path"))
		}
		if v == "" || !filepath.IsAbs(v) && filepath.Join(p.Dir, v) != path || filepath.IsAbs(v) && v != path {
			return false
		}
		written = v
		return true
	})
	if !ok {
		return p.Index.ServicePos(service), ""
	}
	return at, written
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func slicesDelete(env []string, prefix string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// swapStdin hands compose-go the bytes the doctor already read from standard input:
// compose-go reads a "-" file from os.Stdin itself.
func swapStdin(b []byte) (restore func()) {
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	old := os.Stdin
	os.Stdin = r
	go func() {
		_, _ = w.Write(b)
		_ = w.Close()
	}()
	return func() {
		os.Stdin = old
		_ = r.Close()
	}
}

var (
	parseErr   = regexp.MustCompile(`^failed to parse (.+?): yaml: (?:line (\d+): )?(.*)$`)
	validErr   = regexp.MustCompile(`^validating (.+?): (.*)$`)
	decodeItem = regexp.MustCompile(`^'([^']+)' (.*)$`)
	serviceRef = regexp.MustCompile(`service "([^"]+)" depends on undefined service "([^"]+)"|cycle detected: ([^\s]+) -> ([^\s]+)`)
	modelPath  = regexp.MustCompile(`^((?:services|volumes|networks|configs|secrets|include|models)(?:[.\[][^\s:]*)?)(?::| )\s*(.*)$`)
)

// locate turns a compose-go load error into located errors. An error about a value written
// with unset variables names them: the value compose-go refused is not what is written.
func (p *project) locate(err error) []*analyze.LoadError {
	errs := p.locateErr(err)
	for _, e := range errs {
		e.Cause = err
		if vars := p.unsetAt(e.Pos); len(vars) > 0 {
			e.Msg += fmt.Sprintf(" (the value is written with %s, not set)", strings.Join(vars, ", "))
		}
	}
	return errs
}

// unsetAt lists the unset variables the value at pos (a key or a list item) is written with.
func (p *project) unsetAt(pos analyze.Pos) []string {
	var vars []string
	if n := p.Index.nodeAt(pos); n != nil {
		source.Scalars(n, "", func(_ string, v *yaml.Node) { vars = append(vars, p.env.varsIn(v.Value)...) })
	}
	return uniq(vars)
}

func (p *project) locateErr(err error) []*analyze.LoadError {
	msg := cleanErr(err)
	main := analyze.Pos{File: p.Files[0]}
	if m := parseErr.FindStringSubmatch(msg); m != nil {
		line := 0
		fmt.Sscanf(m[2], "%d", &line)
		return []*analyze.LoadError{{Pos: analyze.Pos{File: p.Index.Display(m[1]), Line: line}, Msg: "invalid YAML: " + m[3]}}
	}
	if m := validErr.FindStringSubmatch(msg); m != nil {
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "error while interpolating ")
	if strings.HasPrefix(msg, "decoding failed due to the following error(s):") {
		var out []*analyze.LoadError
		for _, l := range strings.Split(err.Error(), "\n")[1:] {
			if m := decodeItem.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				pos, _ := p.Index.PathPos(splitModelPath(m[1]))
				if pos.File == "" {
					pos = main
				}
				out = append(out, &analyze.LoadError{Pos: pos, Msg: m[1] + ": " + m[2]})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if m := modelPath.FindStringSubmatch(msg); m != nil {
		if pos, ok := p.Index.PathPos(splitModelPath(m[1])); ok {
			return []*analyze.LoadError{{Pos: pos, Msg: msg}}
		}
	}
	if m := serviceRef.FindStringSubmatch(msg); m != nil {
		from, to := m[1]+m[3], m[2]+m[4] // one of the two alternatives matched
		if pos, ok := p.Index.reference(from, to); ok {
			return []*analyze.LoadError{{Pos: pos, Msg: msg}}
		}
	}
	// Errors about a file (a missing extends or include file) point at where it is named.
	if pos, ok := p.Index.mentionMissing(msg); ok {
		return []*analyze.LoadError{{Pos: pos, Msg: msg}}
	}
	return []*analyze.LoadError{{Pos: main, Msg: msg}}
}

// splitModelPath splits "services[web].deploy.resources" or "services.web.shm_size".
func splitModelPath(s string) []string {
	s = strings.NewReplacer("[", ".", "]", "").Replace(s)
	return strings.Split(s, ".")
}

// cleanErr makes an error one line: reports and CI annotations hold one line per error.
func cleanErr(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(slices.DeleteFunc(lines, func(s string) bool { return s == "" }), " ")
}

// hasComposeFile reports a compose file directly in dir.
func hasComposeFile(dir string) bool {
	for _, n := range DefaultFileNames {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}
