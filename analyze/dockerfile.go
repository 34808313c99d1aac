package analyze

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Dockerfile is what a service's Dockerfile says about the program its image runs: the
// final stage's base image and its CMD and ENTRYPOINT, with where each was read.
type Dockerfile struct {
	// From is the final stage's base image with ARG defaults and build args put in; a stage
	// built FROM an earlier stage takes that stage's base. FromAt is "Dockerfile:3".
	From, FromAt string
	// Command is ENTRYPOINT's words followed by CMD's, as the engine runs them (a shell
	// form as sh -c); CommandAt is where they were read.
	Command   []string
	CommandAt string
}

// MaxDockerfile bounds what the doctor reads of a Dockerfile.
const MaxDockerfile = 1 << 20

type stage struct {
	name, from, fromAt string
	entrypoint, cmd    []string
	entryAt, cmdAt     string
	parent             *stage
}

// argRef is a reference to a build arg: $NAME, ${NAME}, or ${NAME} with a modifier (:-, -,
// :+, +, :?, ?) and its word.
var argRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandArg is the value of one build arg reference, as the Dockerfile's shell lexer gives
// it: op is the modifier ("" for none), word what follows it. With a colon, an empty value
// counts as unset. A reference the build refuses (${X:?}, unset) reads as empty.
func expandArg(value string, set bool, op, word string) string {
	if strings.HasPrefix(op, ":") {
		set = set && value != ""
	}
	switch strings.TrimPrefix(op, ":") {
	case "-":
		if !set {
			return word
		}
	case "+":
		if set {
			return word
		}
		return ""
	}
	return value
}

// ParseDockerfile reads the final stage (or the stage named target) of a Dockerfile's text;
// name is how locations name the file, args the build args compose passes. It reads FROM,
// ARG, CMD and ENTRYPOINT and nothing else; an instruction it cannot read is skipped.
func ParseDockerfile(text []byte, name, target string, args map[string]string) (*Dockerfile, error) {
	if len(text) > MaxDockerfile {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, MaxDockerfile>>20)
	}
	global := map[string]string{}
	for k, v := range args {
		global[k] = v
	}
	var stages []*stage
	var cur *stage
	expand := func(s string) string {
		return argRef.ReplaceAllStringFunc(s, func(ref string) string {
			m := argRef.FindStringSubmatch(ref)
			v, set := global[m[1]+m[4]]
			return expandArg(v, set, m[2], m[3])
		})
	}
	for _, ins := range instructions(string(text)) {
		at := fmt.Sprintf("%s:%d", name, ins.line)
		switch ins.keyword {
		case "ARG":
			if cur != nil {
				continue // a stage's ARG does not reach FROM
			}
			for _, f := range strings.Fields(ins.rest) {
				k, v, ok := strings.Cut(f, "=")
				if _, set := args[k]; ok && !set {
					global[k] = strings.Trim(v, `"'`)
				}
			}
		case "FROM":
			words := strings.Fields(ins.rest)
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				words = words[1:]
			}
			if len(words) == 0 {
				continue
			}
			cur = &stage{from: expand(words[0]), fromAt: at}
			if len(words) >= 3 && strings.EqualFold(words[1], "as") {
				cur.name = strings.ToLower(words[2])
			}
			for _, s := range stages {
				if s.name != "" && s.name == strings.ToLower(cur.from) {
					cur.parent = s
				}
			}
			stages = append(stages, cur)
		case "CMD", "ENTRYPOINT":
			if cur == nil {
				continue
			}
			words := commandForm(ins.rest)
			if ins.keyword == "CMD" {
				cur.cmd, cur.cmdAt = words, at
			} else {
				cur.entrypoint, cur.entryAt = words, at
				cur.cmd, cur.cmdAt = nil, "" // ENTRYPOINT resets CMD inherited so far
			}
		}
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s has no FROM", name)
	}
	final := stages[len(stages)-1]
	if target != "" {
		for _, s := range stages {
			if s.name == strings.ToLower(target) {
				final = s
			}
		}
	}
	d := &Dockerfile{}
	var entry, cmd []string
	var ats []string
	for s := final; s != nil; s = s.parent {
		if d.From == "" && s.parent == nil {
			d.From, d.FromAt = s.from, s.fromAt
		}
		if entry == nil && s.entrypoint != nil {
			entry = s.entrypoint
			ats = append(ats, s.entryAt)
		}
		if cmd == nil && s.cmd != nil {
			cmd = s.cmd
			ats = append(ats, s.cmdAt)
		}
	}
	d.Command = append(entry, cmd...)
	if len(ats) > 0 {
		d.CommandAt = "the Dockerfile's " + strings.Join(ats, " and ")
	}
	return d, nil
}

type instruction struct {
	keyword, rest string
	line          int
}

// instructions splits a Dockerfile into instructions, joining continued lines (a trailing
// backslash) and dropping comments.
func instructions(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		if s := strings.TrimSpace(cur.String()); s != "" {
			k, rest, _ := strings.Cut(s, " ")
			out = append(out, instruction{strings.ToUpper(k), strings.TrimSpace(rest), start})
		}
		cur.Reset()
	}
	return out
}

// commandForm reads CMD's or ENTRYPOINT's argument: a JSON array (exec form), else a shell
// command, which the engine runs as /bin/sh -c.
func commandForm(s string) []string {
	var words []string
	if strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &words) == nil {
		return words
	}
	return []string{"/bin/sh", "-c", s}
}
