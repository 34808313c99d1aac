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
	"sync"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/consts"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/source"
)

// A project reads only inside its root (source.Root): the git repository holding it, else
// the folder given, and what --allow-outside adds. The doctor reads its files through a view
// of source.Sources confined to the root, which checks the descriptor it opens; compose-go
// reads include and extends files, include env files and a .env of its own, by name. The
// confiner keeps compose-go from every file outside: it walks the includes and extends ahead
// (walk), resolving them as compose-go will, reports each that leaves the root at the entry
// that names it, as written, and answers compose-go's loads itself (guard): a refused
// include reads as an empty file, a refused extends file as one defining the service as
// nothing, a refused env file as an empty one. The rest of the project is loaded as docker
// compose loads it.
type confiner struct {
	src  *source.Sources // the project's reads, confined to root
	root *source.Root
	ix   *Index // the project's files, once its folder is known
	dir  string // the project's working folder
	// explicit are the files named on the command line (-f, PATH, --env-file): a FIFO among
	// them is read, once.
	explicit map[string]bool
	stand    standIns

	mu      sync.Mutex
	errs    []*analyze.LoadError
	errSeen map[string]bool
	// composeFileAt is where the env file that set COMPOSE_FILE sets it; composeFileVar
	// that it is written with a variable, whose value is not to be printed.
	composeFileAt  *analyze.Pos
	composeFileVar bool
	// noFiles is set when every compose file was refused.
	noFiles bool

	walked // what the walk learned
	g      guard
	// budget is what the walk's interpolations may cost, as compose-go's are bounded.
	budget *expansionBudget
}

func newConfiner(src *source.Sources) *confiner {
	c := &confiner{src: src, root: src.Root(), explicit: map[string]bool{}, errSeen: map[string]bool{}, budget: &expansionBudget{}}
	c.walked = newWalked()
	c.g.c = c
	return c
}

// refuse records a located error once: compose-go's options are built more than once.
func (c *confiner) refuse(pos analyze.Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if key := pos.String() + "\x00" + msg; !c.errSeen[key] {
		c.errSeen[key] = true
		c.errs = append(c.errs, &analyze.LoadError{Pos: pos, Msg: msg})
	}
}

// outside says that what an entry names, as written, is outside the root; with no entry,
// that the file the error is at is.
func (c *confiner) outside(what, written string) string {
	msg := fmt.Sprintf("resolves outside the project root (%s): not read (--allow-outside widens the root)", c.root)
	if what == "" {
		return msg
	}
	return what + " " + written + " " + msg
}

// display is a file's name as reports show it.
func (c *confiner) display(path string) string {
	if c.ix != nil {
		return c.ix.Display(path)
	}
	return source.NewSet(nil).Display(path)
}

// rootOf is the root of a project given as dirs (a PATH, the folder of each -f, the
// project directory): the git repository holding each, else the folder itself, and the
// folders allowed on purpose.
func rootOf(opts Options, dirs ...string) *source.Root {
	var roots []*source.Root
	for _, d := range dirs {
		roots = append(roots, source.NewRoot(d, opts.AllowOutside...))
	}
	if len(roots) == 0 {
		cwd, _ := os.Getwd()
		roots = append(roots, source.NewRoot(cwd, opts.AllowOutside...))
	}
	return source.Union(roots...)
}

// filesRoot is the root of the project -f names, or of the one docker compose discovers:
// the folder of each file given (the working folder for standard input or a FIFO), the
// project directory, and without files the folder the discovery finds a compose file in, or
// those COMPOSE_FILE names in the environment (the user's own, not a checkout's).
func filesRoot(opts Options, explicit bool) *source.Root {
	cwd, _ := os.Getwd()
	var dirs []string
	for _, f := range opts.Files {
		if st, err := os.Stat(f); f == "-" || err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
			dirs = append(dirs, cwd)
		} else {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	if opts.ProjectDir != "" {
		dirs = append(dirs, opts.ProjectDir)
	}
	if len(opts.Files) == 0 {
		start := orElse(opts.ProjectDir, cwd)
		dirs = append(dirs, discovered(start))
		if f, ok := os.LookupEnv(consts.ComposeFilePath); ok && !explicit {
			sep := orElse(os.Getenv(consts.ComposePathSeparator), string(os.PathListSeparator))
			for _, e := range strings.Split(f, sep) {
				dirs = append(dirs, filepath.Dir(e))
			}
		}
	}
	return rootOf(opts, dirs...)
}

func orElse(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// discovered is the folder docker compose finds a compose file in, looking from start up;
// start when there is none.
func discovered(start string) string {
	abs, err := filepath.Abs(start)
	if err != nil {
		return start
	}
	for d := abs; ; {
		if hasComposeFile(d) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

// dotEnv reads the env files (.env, --env-file) as cli.WithDotEnv does, through the
// project's confined, bounded reads: compose-go would read a .env that links to /dev/zero
// without end, or to a credentials file and quote its first line. A file outside the root is
// refused with an error and the project loaded without it; a file that does not parse, or
// whose values would explode, is an error at its line in the doctor's words.
func (c *confiner) dotEnv(flagged []string) cli.ProjectOptionsFn {
	return func(o *cli.ProjectOptions) error {
		vars := map[string]string{}
		for _, f := range o.EnvFiles {
			b, err := c.src.Read(f, slices.Contains(flagged, f))
			switch {
			case source.IsOutside(err):
				c.refuse(analyze.Pos{File: c.display(abs(f))}, "%s", c.outside("", ""))
				continue
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("couldn't find env file: %s", f)
			case err != nil:
				return err
			}
			m, lines, err := parseEnv(b, func(k string) (string, bool) {
				if v, ok := o.Environment[k]; ok {
					return v, true
				}
				v, ok := vars[k]
				return v, ok
			})
			if err != nil {
				return envLoadError(c.display(abs(f)), err)
			}
			if st, ok := lines[consts.ComposeFilePath]; ok && o.Environment[consts.ComposeFilePath] == "" {
				c.composeFileAt = &analyze.Pos{File: c.display(abs(f)), Line: st.line}
				c.composeFileVar = strings.Contains(st.value, "$")
			}
			maps.Copy(vars, m)
		}
		o.Environment.Merge(vars)
		return nil
	}
}

// envLoadError locates an env file's error.
func envLoadError(file string, err error) error {
	var ee *envError
	if errors.As(err, &ee) {
		return &analyze.LoadError{Pos: analyze.Pos{File: file, Line: ee.line}, Msg: ee.msg}
	}
	return &analyze.LoadError{Pos: analyze.Pos{File: file}, Msg: err.Error()}
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// composeFile drops what COMPOSE_FILE names outside the root before cli.WithConfigFileEnv
// reads it: a .env in a checkout may set it to any file of the runner. The error is at the
// line of the env file that sets it.
func (c *confiner) composeFile(o *cli.ProjectOptions) error {
	f, ok := o.Environment[consts.ComposeFilePath]
	if len(o.ConfigPaths) > 0 || !ok {
		return nil
	}
	sep := orElse(o.Environment[consts.ComposePathSeparator], string(os.PathListSeparator))
	var kept []string
	for _, e := range strings.Split(f, sep) {
		if _, inside := c.root.Resolve(e); !inside && e != "-" {
			at := analyze.Pos{File: "COMPOSE_FILE"}
			if c.composeFileAt != nil {
				at = *c.composeFileAt
			}
			if c.composeFileVar || c.composeFileAt == nil {
				c.refuse(at, "COMPOSE_FILE names a file outside the project root (%s): not read (--allow-outside widens the root)", c.root)
			} else {
				c.refuse(at, "COMPOSE_FILE names %s, which resolves outside the project root (%s): not read (--allow-outside widens the root)", e, c.root)
			}
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		c.noFiles = true
		delete(o.Environment, consts.ComposeFilePath)
		return nil
	}
	o.Environment[consts.ComposeFilePath] = strings.Join(kept, sep)
	return nil
}

// configPaths makes the compose files absolute (so that no include can name one of them by
// the same relative text), drops those outside the root (an override that links out of the
// checkout), and hands compose-go the bytes of a FIFO given with -f, read once, in a
// stand-in: compose-go would read it again, and find it empty.
func (c *confiner) configPaths(o *cli.ProjectOptions) error {
	var kept []string
	for _, f := range o.ConfigPaths {
		if f == "-" {
			kept = append(kept, f)
			continue
		}
		a := abs(f)
		b, err := c.src.Read(a, c.explicit[a])
		switch {
		case source.IsOutside(err):
			c.refuse(analyze.Pos{File: c.display(a)}, "%s", c.outside("", ""))
			continue
		case err == nil && c.explicit[a] && isFIFO(a):
			if o.WorkingDir == "" && len(kept) == 0 {
				o.WorkingDir, _ = os.Getwd() // as for standard input: /dev/fd is no project folder
			}
			p, err := c.stand.file(string(b))
			if err != nil {
				return err
			}
			c.fifos[p] = a
			a = p
		}
		kept = append(kept, a)
	}
	if len(kept) == 0 && len(o.ConfigPaths) > 0 {
		c.noFiles = true
	}
	o.ConfigPaths = kept
	return nil
}

func isFIFO(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&fs.ModeNamedPipe != 0
}

// envFile checks a service's env file before compose-go reads it (--strict-env resolves the
// services' environments): inside the root, a bounded regular file, parsing within the
// expansion bounds. at and written are the env_file entry that names it; written is ""
// when the entry is written with a variable, whose value is not printed.
func (c *confiner) envFile(path string, env map[string]string, at analyze.Pos, written string) *analyze.LoadError {
	if _, inside := c.root.Resolve(path); !inside && written == "" {
		return &analyze.LoadError{Pos: at, Msg: "an env_file " + c.outside("", "")}
	}
	if _, inside := c.root.Resolve(path); !inside {
		return &analyze.LoadError{Pos: at, Msg: c.outside("env_file", written)}
	}
	if _, err := os.Stat(path); err != nil {
		return nil // compose-go says it is missing, or that it is not required
	}
	b, err := c.src.Read(path, false)
	if err != nil {
		return &analyze.LoadError{Pos: at, Msg: source.CleanPathErr(err)}
	}
	if _, _, err := parseEnv(b, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		return envLoadError(c.display(path), err).(*analyze.LoadError)
	}
	return nil
}
