package analyze

import (
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/compose-spec/compose-go/v2/template"
	"go.yaml.in/yaml/v3"
)

// envTracker interpolates like compose-go but, unless strict, does not stop at what is
// missing: stacks are often checked where their secrets are not. An unset variable becomes a
// blank (as docker compose does, with a warning), an unset required variable becomes a blank
// instead of an error, and a value of a typed key (a size, a number, a boolean) that depends
// on an unset variable becomes the key's neutral value so that decoding goes on. What was
// missing is recorded per template, and Resolve marks the keys that depend on it.
type envTracker struct {
	strict bool
	keys   map[string]string // template -> the key it is written at

	mu      sync.Mutex
	missing map[string][]string // template -> unset variables it uses
}

func newEnvTracker(strict bool) *envTracker {
	return &envTracker{strict: strict, keys: map[string]string{}, missing: map[string][]string{}}
}

// neutralValues are the values typed keys get when their value depends on an unset variable:
// a size of 0 means "not set" to docker, as do false and 0 for the rest.
var neutralValues = map[string]string{
	"shm_size": "0", "mem_limit": "0", "memswap_limit": "0", "mem_reservation": "0",
	"memory": "0", "size": "0", "pids_limit": "0", "pids": "0", "cpus": "0",
	"cpu_count": "0", "cpu_percent": "0", "cpu_shares": "0", "cpu_period": "0",
	"cpu_quota": "0", "mem_swappiness": "0", "oom_score_adj": "0", "replicas": "1",
	"scale": "1", "soft": "0", "hard": "0", "memlock": "0", "stack": "0", "nofile": "0",
	"privileged": "false", "read_only": "false", "init": "false", "tty": "false",
	"stdin_open": "false", "oom_kill_disable": "false", "external": "false", "count": "all",
	"target": "0", "published": "", "retries": "0",
}

// placeholders stand in for an unset variable inside keys where a blank breaks the syntax:
// "${MODELS}:/models" must stay a valid mount.
var placeholders = map[string]string{"volumes": "/unset/", "source": "/unset/", "env_file": "/unset/"}

// learn records the key under which each template is written, from the source index.
func (e *envTracker) learn(ix *Index) {
	for _, docs := range ix.docs {
		for _, d := range docs {
			scalars(d, "", func(key string, v *yaml.Node) {
				if hasVar(v.Value) {
					e.keys[v.Value] = key
				}
			})
		}
	}
}

// substitute is an interpolation Substitute function for compose-go's loader.
func (e *envTracker) substitute(value string, mapping template.Mapping) (string, error) {
	if e.strict {
		return template.Substitute(value, mapping)
	}
	var missing []string
	replace := func(sub string, m template.Mapping, cfg *template.Config) (string, error) {
		var unset []string
		lookup := func(name string) (string, bool) {
			v, ok := m(name)
			if !ok {
				unset = append(unset, name)
			}
			return v, ok
		}
		s, applied, err := template.DefaultReplacementAppliedFunc(sub, lookup, cfg)
		var req *template.MissingRequiredError
		if errors.As(err, &req) {
			missing = append(missing, req.Variable)
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if !applied && len(unset) > 0 {
			missing = append(missing, unset...)
			if p, ok := placeholders[e.keys[value]]; ok {
				return p + unset[0], nil
			}
		}
		return s, nil
	}
	out, err := template.SubstituteWithOptions(value, mapping, template.WithoutLogging, template.WithReplacementFunction(replace))
	if err != nil || len(missing) == 0 {
		return out, err
	}
	e.mu.Lock()
	e.missing[value] = uniq(append(e.missing[value], missing...))
	e.mu.Unlock()
	if n, ok := neutralValues[e.keys[value]]; ok {
		return n, nil
	}
	return out, nil
}

// varsIn returns the unset variables a template written in a file used.
func (e *envTracker) varsIn(template string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.missing[template]
}

// unset lists every unset variable the project used, sorted.
func (e *envTracker) unset() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []string
	for _, vs := range e.missing {
		all = append(all, vs...)
	}
	return uniq(all)
}

func hasVar(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && s[i+1] != '$' {
			return true
		}
		if s[i] == '$' {
			i++
		}
	}
	return false
}

func uniq(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
