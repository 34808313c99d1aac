package analyze

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Invocation is what a container runs, as the parameters that decide its /dev/shm use read
// it: the words of its entrypoint and command (a shell's -c string split into words too),
// and its environment. Origin says where the words were read ("command", "the Dockerfile's
// CMD at Dockerfile:12"), for the evidence a finding shows.
type Invocation struct {
	Words  []string
	Env    map[string]string
	Origin string
	// shell is true when a word refers to a shell variable ($X): a flag missing from the
	// words may then be in the variable, and a default is no longer known.
	shell bool
}

// ParseCommand splits the words of an entrypoint and command into an Invocation. Exec and
// shell forms read alike: ["sh", "-c", "torchrun --nproc_per_node 4 x.py"] and ["torchrun",
// "--nproc_per_node", "4", "x.py"] give the same words. Quotes and shell operators stuck to a
// word are dropped.
func ParseCommand(words []string, env map[string]string, origin string) Invocation {
	inv := Invocation{Env: env, Origin: origin}
	for _, c := range words {
		for _, f := range strings.Fields(c) {
			f = strings.Trim(expandVars(f, env), "\"'`;&|")
			f = strings.TrimLeft(f, "(")
			if !strings.Contains(f, "$(") {
				f = strings.TrimRight(f, ")")
			}
			if f == "" {
				continue
			}
			// A word that is a variable of arguments alone ($EXTRA_ARGS, "$@") may hold
			// flags the doctor cannot see; one inside a word (--model=$MODEL), or a flag's
			// value, holds a value only.
			if m := wholeVar.FindStringSubmatch(f); m != nil && flagHolder.MatchString(m[1]) && !takesValue(inv.Words) {
				inv.shell = true
			}
			inv.Words = append(inv.Words, f)
		}
	}
	return inv
}

var (
	varRef     = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
	wholeVar   = regexp.MustCompile(`^\$\{?\(?([A-Za-z_][A-Za-z0-9_]*|[@*])\)?\}?$`)
	flagHolder = regexp.MustCompile(`(?i)^[@*]$|ARG|OPT|FLAG|PARAM|EXTRA|CMD|COMMAND`)
)

// takesValue reports whether the last word is a flag waiting for its value (--rank, not
// --rank=1 or a word that is no flag).
func takesValue(words []string) bool {
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	return strings.HasPrefix(last, "-") && !strings.Contains(last, "=") && len(last) > 1
}

// expandVars puts in the values of the variables a word refers to where the environment
// gives them plainly: $(NAME) as Kubernetes expands args, ${NAME} and $NAME as a shell does.
// A variable the environment does not give, or gives through another, stays as written.
func expandVars(word string, env map[string]string) string {
	if !strings.Contains(word, "$") {
		return word
	}
	return varRef.ReplaceAllStringFunc(word, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		v, ok := env[m[1]+m[2]+m[3]]
		if !ok || strings.Contains(v, "$") {
			return ref
		}
		return v
	})
}

// Empty reports whether the invocation has no words.
func (inv Invocation) Empty() bool { return len(inv.Words) == 0 }

// Runs reports whether the words hold the program given as consecutive words, each a glob
// tried against the word and its base name: "torchrun" takes "/usr/local/bin/torchrun",
// "-m vllm.entrypoints.*" takes "python3 -u -m vllm.entrypoints.openai.api_server".
func (inv Invocation) Runs(program string) bool {
	want := strings.Fields(program)
	for i := 0; i+len(want) <= len(inv.Words); i++ {
		if wordsMatch(want, inv.Words[i:i+len(want)]) {
			return true
		}
	}
	return false
}

func wordsMatch(want, words []string) bool {
	for i, w := range want {
		word := strings.ToLower(words[i])
		if ok, _ := path.Match(w, word); ok {
			continue
		}
		if ok, _ := path.Match(w, path.Base(word)); !ok {
			return false
		}
	}
	return true
}

// Param is a parameter read from an invocation: its value, and where it was read, as
// evidence ("--tensor-parallel-size 4", "NUM_SHARD=2 in the environment").
type Param struct {
	Value string
	From  string
	// Set is false when the parameter was not found; Unknown is true when it may still be set
	// where the doctor cannot read it (a shell variable in the command).
	Set, Unknown bool
}

// Flag reads the last of the flags given (names without dashes, "tensor-parallel-size"),
// written "--name value", "--name=value", "-name value" or, for one-letter names, "-n4".
func (inv Invocation) Flag(names ...string) Param {
	var p Param
	for i, w := range inv.Words {
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, value, eq := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !slices.Contains(names, name) {
			if len(name) > 1 && strings.Count(w, "-") == 1 && !eq && slices.Contains(names, name[:1]) && isNumber(name[1:]) {
				p = Param{Value: name[1:], From: w, Set: true}
			}
			continue
		}
		switch {
		case eq:
		case i+1 < len(inv.Words) && !strings.HasPrefix(inv.Words[i+1], "-"):
			value = inv.Words[i+1]
			w += " " + value
		default:
			value = "true"
		}
		p = Param{Value: value, From: w, Set: true}
	}
	if p.Set && strings.Contains(p.Value, "$") {
		p.Unknown = true
	}
	if !p.Set {
		p.Unknown = inv.shell
	}
	return p
}

// Var reads a variable of the environment.
func (inv Invocation) Var(name string) Param {
	v, ok := inv.Env[name]
	if !ok {
		return Param{}
	}
	return Param{Value: v, From: name + "=" + v + " in the environment", Set: true, Unknown: strings.Contains(v, "$")}
}

// Has reports whether a flag is given, with or without a value.
func (inv Invocation) Has(names ...string) bool { return inv.Flag(names...).Set }

// Int is the parameter as a whole number: ok is false when it is not set, not known or not
// a number.
func (p Param) Int() (int, bool) {
	if !p.Set || p.Unknown {
		return 0, false
	}
	n, err := strconv.Atoi(p.Value)
	return n, err == nil && n >= 0
}

// Bool is the parameter as a boolean, the way the programs that read these flags and
// variables take them: 1, true, yes, on.
func (p Param) Bool() bool {
	switch strings.ToLower(p.Value) {
	case "1", "true", "yes", "on":
		return p.Set && !p.Unknown
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
