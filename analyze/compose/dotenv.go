package compose

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/template"
)

// maxEnvTotal bounds what all the values of one env file expand to: each within
// maxExpanded, a file of many lines each naming a large value would still be gigabytes.
const maxEnvTotal = 8 << 20

// envError is an env file refused at a line, in the doctor's words: compose-go's dotenv
// errors quote the line ("unexpected character ... in variable name {"private_key": ...}"),
// and a .env may be a link to anything.
type envError struct {
	line int
	msg  string
}

func (e *envError) Error() string {
	if e.line == 0 {
		return e.msg
	}
	return fmt.Sprintf("line %d: %s", e.line, e.msg)
}

// parseEnv parses an env file as docker compose does, with compose-go's dotenv parser,
// variables expanded through lookup and then the file's own earlier values. Every statement
// is checked against the expansion bounds before it is expanded (see templateBound), and
// parsed alone, so that an error is known at its line. It also returns each key's last
// statement, as written.
func parseEnv(b []byte, lookup func(string) (string, bool)) (map[string]string, map[string]envStatement, error) {
	stmts, err := scanEnv(string(b))
	if err != nil {
		return nil, nil, err
	}
	vars, written := map[string]string{}, map[string]envStatement{}
	both := func(k string) (string, bool) {
		if v, ok := lookup(k); ok {
			return v, true
		}
		v, ok := vars[k]
		return v, ok
	}
	size := func(k string) int64 { v, _ := both(k); return int64(len(v)) }
	var total int64
	budget := &expansionBudget{}
	for _, st := range stmts {
		if st.expands {
			bound, err := templateBound(st.value, size, budget)
			if err != nil {
				return nil, nil, &envError{st.line, err.Error()}
			}
			if total+bound > maxEnvTotal {
				return nil, nil, &envError{st.line, fmt.Sprintf("the file's values would expand to more than %d MiB: refusing an expansion bomb", maxEnvTotal>>20)}
			}
		}
		one := map[string]string{}
		if err := dotenv.ParseWithFormat(strings.NewReader(st.src), "", one, both, ""); err != nil {
			return nil, nil, envParseError(err, st)
		}
		for _, v := range one {
			total += int64(len(v))
		}
		maps.Copy(vars, one)
		written[st.key] = st
	}
	return vars, written, nil
}

var dotenvLine = regexp.MustCompile(`line (\d+): (key cannot contain a space|unexpected character|unterminated quoted value)`)

// envParseError says what compose-go's parser found wrong in a statement, at its line,
// without the line's content.
func envParseError(err error, st envStatement) error {
	var missing *template.MissingRequiredError
	var invalid *template.InvalidTemplateError
	switch m := dotenvLine.FindStringSubmatch(err.Error()); {
	case errors.As(err, &missing):
		return &envError{st.line, fmt.Sprintf("required variable %s is not set", missing.Variable)}
	case errors.As(err, &invalid):
		return &envError{st.line, "invalid variable reference in the value of " + st.key + " (write a $ that starts no variable as $$)"}
	case m != nil:
		n, _ := strconv.Atoi(m[1])
		return &envError{st.line + n - 1, envSyntax[m[2]]}
	}
	return &envError{st.line, "not a valid env file line"}
}

// envSyntax words compose-go's dotenv errors as the doctor says them.
var envSyntax = map[string]string{
	"key cannot contain a space": "a variable name cannot contain a space",
	"unexpected character":       "not a variable assignment: a name holds only letters, digits and _ . - [ ], followed by = or :",
	"unterminated quoted value":  "a quoted value is not closed",
}

// envStatement is one statement of an env file, split as compose-go's dotenv parser splits
// them (see scanEnv).
type envStatement struct {
	key     string
	line    int    // the line it starts on
	src     string // its text, for the parser to read alone
	value   string // its value as written, quotes taken off
	expands bool   // unquoted or double-quoted: variables in it are expanded
}

// scanEnv splits an env file into statements exactly as compose-go's dotenv parser walks it
// (parser.go of compose-go v2.9.1: comments, export, key names, values unquoted to the end of
// the line or quoted over several lines), without expanding anything: what each statement
// would expand to is checked before the parser expands it. Its errors are the parser's,
// located and in the doctor's words.
func scanEnv(src string) ([]envStatement, error) {
	src = strings.TrimPrefix(src, "\uFEFF")
	line := 1
	var out []envStatement
	rest := src
	for {
		rest = statementStart(rest, &line)
		if rest == "" {
			return out, nil
		}
		start, startLine := rest, line
		key, left, inherited, err := keyName(rest, &line)
		if err != nil {
			return nil, err
		}
		if strings.Contains(key, " ") {
			return nil, &envError{line, envSyntax["key cannot contain a space"]}
		}
		st := envStatement{key: key, line: startLine}
		if !inherited {
			var quote byte
			st.value, left, quote, err = varValue(left, &line)
			if err != nil {
				return nil, err
			}
			st.expands = quote != '\''
		}
		st.src = start[:len(start)-len(left)]
		out = append(out, st)
		rest = left
	}
}

// statementStart skips blanks and comments, counting lines.
func statementStart(src string, line *int) string {
	for {
		pos := strings.IndexFunc(src, func(r rune) bool {
			if r == '\n' {
				*line++
			}
			return !unicode.IsSpace(r)
		})
		if pos == -1 {
			return ""
		}
		src = src[pos:]
		if src[0] != '#' {
			return src
		}
		nl := strings.IndexByte(src, '\n')
		if nl == -1 {
			return ""
		}
		src = src[nl:]
	}
}

var exportPrefix = regexp.MustCompile(`^export\s+`)

// keyName finds the key of a statement, as the parser's locateKeyName does.
func keyName(src string, line *int) (key, rest string, inherited bool, err error) {
	if exportPrefix.MatchString(src) {
		src = strings.TrimLeftFunc(strings.TrimPrefix(src, "export"), isEnvSpace)
	}
	offset := 0
loop:
	for i, r := range src {
		if isEnvSpace(r) {
			continue
		}
		switch r {
		case '=', ':', '\n':
			key, offset, inherited = src[:i], i+1, r == '\n'
			break loop
		case '_', '.', '-', '[', ']':
		default:
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				continue
			}
			return "", "", false, &envError{*line, envSyntax["unexpected character"]}
		}
	}
	if inherited && !strings.Contains(key, " ") {
		*line++
	}
	key = strings.TrimRightFunc(key, unicode.IsSpace)
	return key, strings.TrimLeftFunc(src[offset:], isEnvSpace), inherited, nil
}

// varValue reads a statement's value, as the parser's extractVarValue does, with its quote
// (0 for none).
func varValue(src string, line *int) (value, rest string, quote byte, err error) {
	if src == "" || src[0] != '"' && src[0] != '\'' {
		value, rest, _ = strings.Cut(src, "\n")
		*line++
		value, _, _ = strings.Cut(value, " #")
		return strings.TrimRightFunc(value, unicode.IsSpace), rest, 0, nil
	}
	quote = src[0]
	escaped := false
	for i := 1; i < len(src); i++ {
		c := src[i]
		if c == '\n' {
			*line++
		}
		switch {
		case c != quote && !escaped && c == '\\':
			escaped = true
		case c != quote || escaped:
			escaped = false
		default:
			return src[1:i], src[i+1:], quote, nil
		}
	}
	return "", "", 0, &envError{*line, envSyntax["unterminated quoted value"]}
}

// isEnvSpace is the parser's isSpace: a blank that is not a line break.
func isEnvSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}
