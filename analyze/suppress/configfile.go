package suppress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/analyze/source"
	"go.yaml.in/yaml/v3"
)

// ConfigFileName is the config file searched from the working folder upward;
// ConfigFileNames are the names accepted, in the order they are looked for in a folder.
const ConfigFileName = ".shmdoctor.yaml"

// ConfigFileNames: .yml is as common as .yaml in repositories (dclint, hadolint's
// .hadolint.yml); a folder holding both is ambiguous and an error.
var ConfigFileNames = []string{ConfigFileName, ".shmdoctor.yml"}

// maxConfigSize bounds a config file; real ones are a few lines.
const maxConfigSize = 1 << 20

// ConfigFile is a .shmdoctor.yaml: the settings a repository keeps beside its stacks.
// Flags win over it and it wins over the defaults; unset fields are zero.
type ConfigFile struct {
	Path   string // as reports name it
	Policy analyze.Policy
	Target analyze.Target
	FailOn string // error, warning, info or never
	Need   string // a size, as --need takes it
	// Severity overrides rules' severities; Ignore holds the ignore and ignore-paths
	// entries. Both go to Config as they are.
	Severity map[string]analyze.Severity
	Ignore   []analyze.ConfigIgnore
}

// configKeys are the keys a config file may have, in the order errors list them.
var configKeys = []string{"policy", "target", "fail-on", "need", "severity", "ignore", "ignore-paths"}

// FindConfigFile looks for ConfigFileName in dir and then in every parent up to the
// filesystem root; it returns "" when there is none.
func FindConfigFile(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", ConfigFileName, err)
	}
	for {
		var found []string
		for _, name := range ConfigFileNames {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				found = append(found, p)
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("finding %s: %w", ConfigFileName, err)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 2:
			return "", fmt.Errorf("%s and %s are both there: keep one (--config names the one to read)", found[0], filepath.Base(found[1]))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// ReadConfigFile reads a config file. Unknown keys, bad values and bad YAML are errors
// located at file:line:col, as a *LoadError: a typo in a config must not silently change
// what the doctor checks.
func ReadConfigFile(file string) (*ConfigFile, error) { return readConfigFile(file, false) }

// ReadGivenConfigFile reads the config file --config names: as a PATH, it may be a FIFO
// (--config <(...)), read once. One found in a folder must be a regular file.
func ReadGivenConfigFile(file string) (*ConfigFile, error) { return readConfigFile(file, true) }

func readConfigFile(file string, given bool) (*ConfigFile, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("reading config file %s: %w", file, err)
	}
	c := &ConfigFile{Path: displayPath(abs)}
	fail := func(n *yaml.Node, format string, args ...any) error {
		pos := analyze.Pos{File: c.Path}
		if n != nil {
			pos.Line, pos.Column = n.Line, n.Column
		}
		return &analyze.LoadError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return nil, fail(nil, "is a folder, not a config file")
	}
	b, err := (*source.Sources)(nil).Read(abs, given)
	switch {
	case err != nil:
		return nil, fail(nil, "%s", source.CleanPathErr(err))
	case len(b) > maxConfigSize:
		return nil, fail(nil, "config file is more than %d MiB", maxConfigSize>>20)
	}
	if err := source.CheckText(b); err != nil {
		return nil, fail(nil, "%v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil // an empty config file sets nothing
		}
		return nil, source.YAMLError(c.Path, b, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail(&extra, "a config file holds one YAML document")
	}
	if len(doc.Content) == 0 {
		return c, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return c, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fail(root, "a config file is a mapping of %s", strings.Join(configKeys, ", "))
	}
	if lim := source.ExpansionLimit(root); source.ExpandedSize(root, map[*yaml.Node]int64{}, lim) > lim {
		return nil, fail(source.FirstAlias(root), "YAML aliases expand to more than %d nodes: refusing an alias bomb", lim)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], source.Deref(root.Content[i+1])
		if seen[k.Value] {
			return nil, fail(k, "%s is given twice", k.Value)
		}
		seen[k.Value] = true
		str := func() (string, error) {
			if v == nil || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return "", fail(v, "%s must be a single value", k.Value)
			}
			return v.Value, nil
		}
		var s string
		var err error
		switch k.Value {
		case "policy":
			if s, err = str(); err == nil {
				if c.Policy = analyze.Policy(s); c.Policy != analyze.PolicyStability && c.Policy != analyze.PolicyIsolation {
					err = fail(v, "policy %q: use stability or isolation", s)
				}
			}
		case "target":
			if s, err = str(); err == nil {
				if c.Target = analyze.Target(s); c.Target != analyze.TargetCompose && c.Target != analyze.TargetSwarm && c.Target != analyze.TargetPodman {
					err = fail(v, "target %q: use compose, swarm or podman", s)
				}
			}
		case "fail-on":
			if s, err = str(); err == nil {
				if _, perr := analyze.ParseSeverity(s); perr != nil && s != "never" {
					err = fail(v, "fail-on %q: use error, warning, info or never", s)
				}
				c.FailOn = s
			}
		case "need":
			if s, err = str(); err == nil {
				if _, perr := analyze.ParseSize(s); perr != nil {
					err = fail(v, "need: %v", perr)
				}
				c.Need = s
			}
		case "severity":
			err = c.severities(v, fail)
		case "ignore", "ignore-paths":
			err = c.ignores(k.Value, v, filepath.Dir(abs), fail)
		default:
			err = fail(k, "unknown key %q: use %s", k.Value, strings.Join(configKeys, ", "))
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

type failFunc func(n *yaml.Node, format string, args ...any) error

// severities reads severity: {SHM020: error, ...}.
func (c *ConfigFile) severities(v *yaml.Node, fail failFunc) error {
	if v == nil || v.Kind != yaml.MappingNode {
		return fail(v, "severity must be a mapping of rule IDs to error, warning or info, such as {SHM020: warning}")
	}
	c.Severity = map[string]analyze.Severity{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, s := v.Content[i], source.Deref(v.Content[i+1])
		r := rules.ByID(k.Value)
		if r == nil {
			r = rules.ByName(k.Value)
		}
		if r == nil {
			return fail(k, "severity: %s is not a rule ID or name (see shmdoctor rules)", k.Value)
		}
		sev, err := analyze.ParseSeverity(source.Scalar(s))
		if err != nil {
			return fail(s, "severity of %s: %v (ignore: [%s] silences a rule)", r.ID, err, r.ID)
		}
		c.Severity[r.ID] = sev
	}
	return nil
}

// ignores reads ignore ("SHM040 reason" entries) or ignore-paths ("glob reason" entries).
func (c *ConfigFile) ignores(key string, v *yaml.Node, dir string, fail failFunc) error {
	if v == nil || v.Kind != yaml.SequenceNode {
		if key == "ignore" {
			return fail(v, "ignore must be a list of rule IDs, each with an optional reason, such as [SHM040]")
		}
		return fail(v, "ignore-paths must be a list of globs, each with an optional reason, such as [legacy/**]")
	}
	for _, it := range v.Content {
		it = source.Deref(it)
		if it.Kind != yaml.ScalarNode || strings.TrimSpace(it.Value) == "" {
			return fail(it, "%s entries are strings", key)
		}
		e := analyze.ConfigIgnore{Dir: dir, Pos: analyze.Pos{File: c.Path, Line: it.Line, Column: it.Column}}
		if key == "ignore" {
			ids, reason, err := ParseIgnore(it.Value)
			if err != nil {
				return fail(it, "ignore: %v", err)
			}
			e.Rules, e.Reason = ids, reason
		} else {
			glob, reason := strings.TrimSpace(it.Value), ""
			if i := strings.IndexAny(glob, " \t"); i >= 0 {
				glob, reason = glob[:i], glob[i:]
			}
			// Windows separators, in a config shared by people on every system
			glob = strings.ReplaceAll(glob, `\`, "/")
			if strings.HasPrefix(glob, "/") || filepath.IsAbs(glob) || winDrive.MatchString(glob) {
				return fail(it, "ignore-paths: %s: globs are relative to the config file's folder", glob)
			}
			if _, err := path.Match(strings.ReplaceAll(glob, "**", "*"), ""); err != nil {
				return fail(it, "ignore-paths: %s: bad glob", glob)
			}
			e.Glob, e.Reason = path.Clean(glob), strings.TrimSpace(reason)
		}
		c.Ignore = append(c.Ignore, e)
	}
	return nil
}

// winDrive starts a Windows absolute path, which is not absolute elsewhere.
var winDrive = regexp.MustCompile(`^[A-Za-z]:/`)

// displayPath names a file relative to the working folder when it is below it, as the
// index names compose files.
func displayPath(abs string) string {
	cwd, err := os.Getwd()
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return abs
}
