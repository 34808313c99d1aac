package compose

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/template"
	"go.yaml.in/yaml/v3"
)

// envTracker interpolates like compose-go but, unless strict, does not stop at what is
// missing: stacks are often checked where their secrets are not. An unset variable becomes a
// blank (as docker compose does, with a warning), an unset required variable becomes a blank
// instead of an error, and a value of a typed key (a size, a number, a boolean, a port) that
// depends on an unset variable becomes the key's neutral value so that decoding goes on (see
// unsetValues; TestUnsetEverywhere tries every kind of key compose-go parses). What was
// missing is recorded per template, and Resolve marks the keys that depend on it.
type envTracker struct {
	strict bool
	// budget is what the project's values may cost to expand, shared with its clones.
	budget *expansionBudget
	values map[string]unsetValue // template -> what it gets when a variable it uses is unset

	mu      sync.Mutex
	missing map[string][]string // template -> unset variables it uses
	// required are the unset variables a template requires (${X?} or ${X:?}): docker
	// compose stops there.
	required map[string][]string
	set      map[string]string   // variable -> value, of every set variable a template used
	setIn    map[string][]string // template -> set variables it uses
}

func newEnvTracker(strict bool) *envTracker {
	return &envTracker{strict: strict, budget: &expansionBudget{}, values: map[string]unsetValue{}, missing: map[string][]string{}, required: map[string][]string{}, set: map[string]string{}, setIn: map[string][]string{}}
}

// unsetValues say what a value gets when it depends on an unset variable, by the end of its
// path in the file ("[]" is a list item, "*" any key; the longest match wins). A typed value
// (a size, a number, a boolean, a duration, a port, one of a set of words) gets its neutral
// value, the one docker reads as "not set" where there is one, so that decoding goes on: a
// size of 0, false, 0s. A mount keeps its syntax with a placeholder path in place of each
// unset variable: "${MODELS}:/models" must stay a valid mount. Anything else gets docker
// compose's blank.
var unsetValues = map[string]unsetValue{
	"shm_size": {value: "0"}, "mem_limit": {value: "0"}, "memswap_limit": {value: "0"},
	"mem_reservation": {value: "0"}, "memory": {value: "0"}, "size": {value: "0"},
	"pids_limit": {value: "0"}, "pids": {value: "0"}, "cpus": {value: "0"}, "cpu_count": {value: "0"},
	"cpu_percent": {value: "0"}, "cpu_shares": {value: "0"}, "cpu_period": {value: "0"},
	"cpu_quota": {value: "0"}, "cpu_rt_period": {value: "0"}, "cpu_rt_runtime": {value: "0"},
	"mem_swappiness": {value: "0"}, "oom_score_adj": {value: "0"}, "rate": {value: "0"},
	"replicas": {value: "1"}, "scale": {value: "1"}, "count": {value: "all"},
	"ulimits.*": {value: "0"}, "ulimits.*.soft": {value: "0"}, "ulimits.*.hard": {value: "0"},
	"privileged": {value: "false"}, "read_only": {value: "false"}, "init": {value: "false"},
	"tty": {value: "false"}, "stdin_open": {value: "false"}, "oom_kill_disable": {value: "false"},
	"external": {value: "false"}, "internal": {value: "false"}, "attachable": {value: "false"},
	"enable_ipv4": {value: "false"}, "enable_ipv6": {value: "false"}, "nocopy": {value: "false"},
	"create_host_path": {value: "false"}, "healthcheck.disable": {value: "false"},
	"depends_on.*.restart": {value: "false"}, "depends_on.*.condition": {value: "service_started"},
	"stop_grace_period": {value: "0s"}, "interval": {value: "0s"}, "timeout": {value: "0s"},
	"start_period": {value: "0s"}, "start_interval": {value: "0s"}, "delay": {value: "0s"},
	"monitor": {value: "0s"}, "window": {value: "0s"}, "retries": {value: "0"},
	"max_attempts": {value: "0"}, "parallelism": {value: "0"}, "max_failure_ratio": {value: "0"},
	"max_replicas_per_node": {value: "0"}, "order": {value: "stop-first"},
	"pull_policy": {value: "missing"}, "healthcheck.test.[]": {value: "NONE"},
	// A port is read by none of the rules: an entry written with an unset variable is port 1.
	"ports.[]": {value: "1"}, "ports.[].target": {value: "0"}, "ports.[].published": {value: ""},
	"ports.[].host_ip": {value: "0.0.0.0"}, "extra_hosts.[]": {value: "unset-%d:0.0.0.0"},
	"extra_hosts.*": {value: "0.0.0.0"}, "volumes.[].type": {value: "volume"},
	"volumes.[]": {placeholder: placeholder}, "volumes.[].source": {placeholder: placeholder},
	"volumes.[].target": {placeholder: placeholder}, "env_file": {placeholder: placeholder},
	"env_file.[]": {placeholder: placeholder}, "env_file.[].path": {placeholder: placeholder},
}

// placeholder stands for an unset variable in a path.
const placeholder = "/unset/"

// unsetValue is a neutral value, or a placeholder written in place of each unset variable.
// A %d in the value is a number that tells apart the values of a list whose items must be
// unique.
type unsetValue struct{ value, placeholder string }

// unsetValueAt finds what a value at path gets when it depends on an unset variable.
func unsetValueAt(path []string) (unsetValue, bool) {
	var best unsetValue
	found, bestLen := false, 0
	for pattern, v := range unsetValues {
		parts := strings.Split(pattern, ".")
		if len(parts) <= bestLen || len(parts) > len(path) {
			continue
		}
		tail := path[len(path)-len(parts):]
		if slices.EqualFunc(parts, tail, func(p, k string) bool { return p == k || p == "*" && k != "[]" }) {
			best, found, bestLen = v, true, len(parts)
		}
	}
	return best, found
}

// learn records the path under which each template is written, from the source index.
func (e *envTracker) learn(ix *Index) {
	for _, docs := range ix.Docs {
		for _, d := range docs {
			paths(d, nil, func(path []string, v *yaml.Node) {
				if hasVar(v.Value) {
					if u, ok := unsetValueAt(path); ok {
						e.values[v.Value] = u
					}
				}
			})
		}
	}
}

// paths calls fn for every scalar under n with its path: the keys leading to it, "[]" for a
// list item. Aliases are not followed, as in scalars.
func paths(n *yaml.Node, path []string, fn func(path []string, v *yaml.Node)) {
	switch n.Kind {
	case yaml.ScalarNode:
		fn(path, n)
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			paths(c, append(path, "[]"), fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			paths(n.Content[i+1], append(path, n.Content[i].Value), fn)
		}
	}
}

// substitute is an interpolation Substitute function for compose-go's loader.
func (e *envTracker) substitute(value string, mapping template.Mapping) (string, error) {
	if _, err := templateBound(value, func(name string) int64 { v, _ := mapping(name); return int64(len(v)) }, e.budget); err != nil {
		return "", err
	}
	mapping = e.recording(value, mapping)
	if e.strict {
		return template.Substitute(value, mapping)
	}
	var missing, required []string
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
			required = append(required, req.Variable)
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if !applied && len(unset) > 0 {
			missing = append(missing, unset...)
			if p := e.values[value].placeholder; p != "" {
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
	if len(required) > 0 {
		e.required[value] = uniq(append(e.required[value], required...))
	}
	n := len(e.missing)
	e.mu.Unlock()
	if u, ok := e.values[value]; ok && u.placeholder == "" {
		if strings.Contains(u.value, "%d") {
			return fmt.Sprintf(u.value, n), nil
		}
		return u.value, nil
	}
	return out, nil
}

// recording wraps mapping to remember every set variable the template asks for, and its
// value: values must never reach a report (see redact).
func (e *envTracker) recording(tmpl string, mapping template.Mapping) template.Mapping {
	return func(name string) (string, bool) {
		v, ok := mapping(name)
		if ok && v != "" {
			e.mu.Lock()
			e.set[name] = v
			if !slices.Contains(e.setIn[tmpl], name) {
				e.setIn[tmpl] = append(e.setIn[tmpl], name)
			}
			e.mu.Unlock()
		}
		return v, ok
	}
}

// varsIn returns the unset variables a template written in a file used.
func (e *envTracker) varsIn(template string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.missing[template]
}

// requiredIn returns the unset variables a template written in a file requires.
func (e *envTracker) requiredIn(template string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.required[template]
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
