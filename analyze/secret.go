package analyze

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The doctor's home is CI on pull requests that anyone can open, where the environment holds
// secrets and a compose file can put any of them in a value the doctor quotes (shm_size:
// "1g${TOKEN}" fails to parse, name: ${TOKEN} is the project's name, ipc: ${TOKEN} is in the
// daemon's refusal). Redacting each message that might quote a value lost that race, so the
// guarantee is made where the bytes leave: every value a loader interpolates is registered in
// the run's Secrets, and every output of the run (standard output, standard error, each file
// written) passes through Secrets.Scrub, which writes any run of a registered value it finds
// as the variable's reference, ${NAME}. A message quoting "1gghp_Ab…" thus reads
// "1g${TOKEN}", the text as written. Only what keeps a value's bytes on purpose (a fix
// written into the user's own file) is left as it is.

// SecretRun is the shortest run of a registered value that Scrub recognises: shorter runs
// ("2g", "host") are words of the doctor's own messages as often as parts of a value. A
// value shorter than SecretRun is kept out of messages where they are built (Shown).
const SecretRun = 8

// maxSecret bounds the part of one value that is registered: interpolation refuses longer
// values before they get here.
const maxSecret = 1 << 20

type gram [SecretRun]byte

// Secrets is what one run of the doctor must not print: each run of SecretRun bytes of
// every value its loaders interpolated, as it is and as reports escape it (a newline as
// \n, a quote as \"), with the name of the value's variable; and the texts of the files
// loaded, which are no secret. A run never holds a line break: the lines are the report's,
// and a value's newline is printed escaped. Values are registered as they are, not
// lowercased as compose lowercases a project name: the word " private" of a key's header
// would hide the doctor's own words, and a project name that a variable sets is shown as
// written instead. A nil *Secrets holds nothing. Its methods are safe for concurrent use.
type Secrets struct {
	mu     sync.RWMutex
	grams  map[gram]string
	public [][]byte
	vars   map[string]string // variable -> value, of every value registered
}

// NewSecrets makes an empty register.
func NewSecrets() *Secrets {
	return &Secrets{grams: map[gram]string{}, vars: map[string]string{}}
}

type secretsKey struct{}

// WithSecrets is ctx carrying s: the loaders a run calls with ctx register into s.
func WithSecrets(ctx context.Context, s *Secrets) context.Context {
	return context.WithValue(ctx, secretsKey{}, s)
}

// SecretsOf is the register ctx carries, nil when none.
func SecretsOf(ctx context.Context) *Secrets {
	s, _ := ctx.Value(secretsKey{}).(*Secrets)
	return s
}

// Interpolated registers value, the value of the variable name that a loader interpolated
// into a project, so that Scrub hides it from then on.
func (s *Secrets) Interpolated(name, value string) {
	if s == nil || value == "" {
		return
	}
	if len(value) > maxSecret {
		value = value[:maxSecret]
	}
	quoted := strconv.Quote(value)
	quoted = quoted[1 : len(quoted)-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.vars[name]; !ok || len(value) > len(old) {
		s.vars[name] = value
	}
	s.register(name, value, nil)
	s.register(name, quoted, escapeStarts(quoted))
}

// register adds the runs of v to the register under name: every run, or those that start
// where at says (a run that starts inside an escape is no run of the value).
func (s *Secrets) register(name, v string, at func(int) bool) {
	for i := 0; i+SecretRun <= len(v); i++ {
		if at != nil && !at(i) || strings.ContainsAny(v[i:i+SecretRun], "\n\r") {
			continue
		}
		// The least name wins where two values share a run, whichever came first.
		if g := gram([]byte(v[i : i+SecretRun])); s.grams[g] == "" || name < s.grams[g] {
			s.grams[g] = name
		}
	}
}

// escapeStarts reports, of a Go-quoted text without its quotes, whether a byte starts a
// character or an escape of it, rather than being inside one (the n of \n, the digits of
// \u00e9).
func escapeStarts(q string) func(int) bool {
	starts := make([]bool, len(q)+1)
	for i := 0; i < len(q); {
		starts[i] = true
		switch {
		case q[i] != '\\' || i+1 == len(q):
			_, n := utf8.DecodeRuneInString(q[i:])
			i += n
		case q[i+1] == 'x':
			i += 4
		case q[i+1] == 'u':
			i += 6
		case q[i+1] == 'U':
			i += 10
		default:
			i += 2
		}
	}
	return func(i int) bool { return starts[i] }
}

// Public registers the text of a file a project was read from (a compose file, a
// manifest), or its path: what it holds is no secret, even where a value holds the same
// text (a variable POSTGRES_USER=postgres beside a service named postgres), and Scrub
// leaves it. The text is kept, not copied: it must not change.
func (s *Secrets) Public(text []byte) {
	if s == nil || len(text) < SecretRun {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.public = append(s.public, text)
}

// Vars lists the variables registered with their values, longest value first so that a
// value holding another is redacted whole.
func (s *Secrets) Vars() []SetVar {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]SetVar, 0, len(s.vars))
	for n, v := range s.vars {
		out = append(out, SetVar{Name: n, Value: v})
	}
	sortVars(out)
	return out
}

// isPublic reports whether a file loaded holds run as it is.
func (s *Secrets) isPublic(run []byte) bool {
	for _, text := range s.public {
		if bytes.Contains(text, run) {
			return true
		}
	}
	return false
}

// Scrubbing reports whether any value is registered: with none, Scrub returns its input.
func (s *Secrets) Scrubbing() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.grams) > 0
}

// Scrub returns b with every run of a registered value written as ${NAME}: each stretch of
// b covered by runs of SecretRun bytes that a registered value holds, widened to whole
// UTF-8 characters, becomes the reference of the variable whose run starts it, unless a
// file loaded holds the stretch as it is. b itself is returned when nothing in it is
// registered.
func (s *Secrets) Scrub(b []byte) []byte {
	if s == nil || len(b) < SecretRun {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.grams) == 0 {
		return b
	}
	var out []byte
	done := 0 // b[:done] is in out
	for i := 0; i+SecretRun <= len(b); {
		name, ok := s.grams[gram(b[i:i+SecretRun])]
		if !ok {
			i++
			continue
		}
		start, end := i, i+SecretRun
		for end < len(b) {
			if _, ok := s.grams[gram(b[end+1-SecretRun:end+1])]; !ok {
				break
			}
			end++
		}
		start, end = whole(b, done, start, end)
		if s.isPublic(b[start:end]) {
			i = end
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		ref := "${" + name + "}"
		if start > done || !bytes.HasSuffix(out, []byte(ref)) { // one reference for adjacent runs
			out = append(out, b[done:start]...)
			out = append(out, ref...)
		}
		done, i = end, end
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// whole widens the stretch b[start:end] that Scrub replaces to whole characters and whole
// escapes, never below done: the reference it writes must leave a JSON string, an XML text
// or a Go-quoted text as valid as it was, so the stretch takes in the backslash of an escape
// it starts or ends inside (\n, \", \u00e9, \x1b) and the ampersand of an XML entity
// (&#34;).
func whole(b []byte, done, start, end int) (int, int) {
	for moved := true; moved; {
		moved = false
		for start > done && !utf8.RuneStart(b[start]) {
			start, moved = start-1, true
		}
		if i := escapeBefore(b[done:start]); i >= 0 {
			start, moved = done+i, true
		}
		if i := bytes.LastIndexByte(b[done:start], '&'); i >= 0 && entityTail(b[done+i+1:start]) {
			start, moved = done+i, true
		}
	}
	for moved := true; moved; {
		moved = false
		for end < len(b) && !utf8.RuneStart(b[end]) {
			end, moved = end+1, true
		}
		if i := escapeBefore(b[start:end]); i >= 0 && end < len(b) {
			// the stretch ends inside an escape (\n, \u00e9, \x1b): take in the rest of it
			size := 2
			switch b[start+i+1] {
			case 'u':
				size = 6
			case 'x':
				size = 4
			}
			n := end
			for n < len(b) && n < start+i+size && (n == start+i+1 || isHex(b[n])) {
				n++
			}
			if n > end {
				end, moved = n, true
			}
		}
		if i := bytes.LastIndexByte(b[start:end], '&'); i >= 0 && entityTail(b[start+i+1:end]) {
			if j := bytes.IndexByte(b[end:min(len(b), end+12)], ';'); j >= 0 {
				end, moved = end+j+1, true
			}
		}
	}
	// A quote no backslash escapes delimits the string that holds the stretch (JSON, an XML
	// attribute, Go's quoting): it stays, and the stretch is what it delimits.
	if start < end && b[start] == '"' {
		start++
	}
	if start < end && b[end-1] == '"' && !escaping(b[start:end-1]) {
		end--
	}
	return start, end
}

// escaping reports whether b ends in a backslash that escapes what follows: an odd number
// of them.
func escaping(b []byte) bool {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// escapeBefore is the index in b of the backslash of an escape b ends inside: one that
// escapes the byte after b, or \u or \x with fewer hex digits than they take; -1 when none.
func escapeBefore(b []byte) int {
	if escaping(b) {
		return len(b) - 1
	}
	digits := 0
	for digits < 3 && digits < len(b) && isHex(b[len(b)-1-digits]) {
		digits++
	}
	at := len(b) - digits - 1 // where the u or the x would be
	if at >= 1 && (b[at] == 'u' || b[at] == 'x' && digits < 2) && escaping(b[:at]) {
		return at - 1
	}
	return -1
}

// entityTail reports whether b, what follows an ampersand, is an XML entity not closed yet.
func entityTail(b []byte) bool {
	if len(b) > 10 {
		return false
	}
	for i, c := range b {
		if !(c == '#' && i == 0 || isHex(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// ScrubString is Scrub for a string.
func (s *Secrets) ScrubString(str string) string {
	if b := s.Scrub([]byte(str)); !bytes.Equal(b, []byte(str)) {
		return string(b)
	}
	return str
}

// Shown is a text built from a project's values (a plan's ipc, a mount's source, an error)
// as a report may print it: scrubbed, and with every registered value written as its
// variable, short values included where only names them (RedactMsg).
func (s *Secrets) Shown(str string, only ...string) string {
	if s == nil {
		return str
	}
	return RedactMsg(s.ScrubString(str), s.Vars(), only)
}
