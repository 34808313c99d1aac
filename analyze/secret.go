package analyze

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The doctor's home is CI on pull requests that anyone can open, where the environment holds
// secrets and a compose file can put any of them in a value the doctor quotes (shm_size:
// "1g${TOKEN}" fails to parse, name: ${TOKEN} is the project's name, ipc: ${TOKEN} is in the
// daemon's refusal). Redacting each message that might quote a value lost that race, so the
// guarantee is made where the bytes leave: every value a loader interpolates is registered
// here for the life of the process, and every output (standard output, standard error, each
// file written) passes through Scrub, which writes any run of a registered value it finds as
// the variable's reference, ${NAME}. A message quoting "1gghp_Ab…" thus reads "1g${TOKEN}",
// the text as written. Only reports that keep a value's bytes (a fix written into the user's
// own file) are left as they are.

// SecretRun is the shortest run of a registered value that Scrub recognises: shorter runs
// ("2g", "host") are words of the doctor's own messages as often as parts of a value. A
// value shorter than SecretRun is never a secret's whole, and is kept out of messages where
// they are built (Shown, RedactMsg).
const SecretRun = 8

// maxSecret bounds the part of one value that is registered: interpolation refuses longer
// values before they get here.
const maxSecret = 1 << 20

type gram [SecretRun]byte

// secrets is the process's register of interpolated values: each run of SecretRun bytes of
// a value, as it is and as reports escape it (a newline as \n, a quote as \"), with the name
// of its variable; and the texts of the files loaded, which are no secret. A run never
// holds a line break: the lines are the report's, and a value's newline is printed escaped. Values are registered as they are, not lowercased as compose lowercases a project
// name: the word " private" of a key's header would hide the doctor's own words, and a
// project name that a variable sets is shown as written instead.
type secrets struct {
	mu     sync.RWMutex
	grams  map[gram]string
	public [][]byte
}

var registered = secrets{grams: map[gram]string{}}

// Interpolated registers value, the value of the variable name that a loader interpolated
// into a project, so that Scrub hides it in every output from now on.
func Interpolated(name, value string) {
	if len(value) < SecretRun {
		return
	}
	if len(value) > maxSecret {
		value = value[:maxSecret]
	}
	quoted := strconv.Quote(value)
	registered.mu.Lock()
	defer registered.mu.Unlock()
	for _, v := range []string{value, quoted[1 : len(quoted)-1]} {
		for i := 0; i+SecretRun <= len(v); i++ {
			if strings.ContainsAny(v[i:i+SecretRun], "\n\r") {
				continue
			}
			// The least name wins where two values share a run, whichever came first.
			if g := gram([]byte(v[i : i+SecretRun])); registered.grams[g] == "" || name < registered.grams[g] {
				registered.grams[g] = name
			}
		}
	}
}

// Public registers the text of a file a project was read from (a compose file, a
// manifest), or its path: what it holds is no secret, even where a value holds the same
// text (a variable POSTGRES_USER=postgres beside a service named postgres), and Scrub
// leaves it. The text is kept, not copied: it must not change.
func Public(text []byte) {
	if len(text) < SecretRun {
		return
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	registered.public = append(registered.public, text)
}

// isPublic reports whether a file loaded holds run as it is.
func (s *secrets) isPublic(run []byte) bool {
	for _, text := range s.public {
		if bytes.Contains(text, run) {
			return true
		}
	}
	return false
}

// Scrubbing reports whether any value is registered: with none, Scrub returns its input.
func Scrubbing() bool {
	registered.mu.RLock()
	defer registered.mu.RUnlock()
	return len(registered.grams) > 0
}

// Scrub returns b with every run of a registered value written as ${NAME}: each stretch of
// b covered by runs of SecretRun bytes that a registered value holds, widened to whole
// UTF-8 characters, becomes the reference of the variable whose run starts it, unless a
// file loaded holds the stretch as it is. b itself is returned when nothing in it is
// registered.
func Scrub(b []byte) []byte {
	if len(b) < SecretRun {
		return b
	}
	registered.mu.RLock()
	defer registered.mu.RUnlock()
	if len(registered.grams) == 0 {
		return b
	}
	var out []byte
	done := 0 // b[:done] is in out
	for i := 0; i+SecretRun <= len(b); {
		name, ok := registered.grams[gram(b[i:i+SecretRun])]
		if !ok {
			i++
			continue
		}
		start, end := i, i+SecretRun
		for end < len(b) {
			if _, ok := registered.grams[gram(b[end+1-SecretRun:end+1])]; !ok {
				break
			}
			end++
		}
		for start > done && !utf8.RuneStart(b[start]) {
			start--
		}
		for end < len(b) && !utf8.RuneStart(b[end]) {
			end++
		}
		if registered.isPublic(b[start:end]) {
			i = end
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[done:start]...)
		out = append(out, "${"+name+"}"...)
		done, i = end, end
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// ScrubString is Scrub for a string.
func ScrubString(s string) string {
	if b := Scrub([]byte(s)); !bytes.Equal(b, []byte(s)) {
		return string(b)
	}
	return s
}

// forgetSecrets empties the register; tests that count on a clean one call it.
func forgetSecrets() {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	clear(registered.grams)
	registered.public = nil
}
