package analyze

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	s := NewSecrets()
	const token = "ghp_AbCdEf0123456789XyZqq"
	if got := s.ScrubString("parsing \"1g" + token[:20] + "\""); strings.Contains(got, "${") {
		t.Fatalf("nothing is registered yet, and Scrub changed the text: %s", got)
	}
	s.Interpolated("TOKEN", token)
	s.Interpolated("PASSWORD", "postgres-hunter2-pass")
	s.Public([]byte("services:\n  postgres:\n    image: postgres:16\n"))
	s.Interpolated("SHORT", "2g")
	s.Interpolated("KEY", "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----")
	s.Interpolated("WIDE", "ключ-доступа-1234")
	for _, c := range []struct{ in, want string }{
		// compose-go quotes the part of a value it could not parse
		{`strconv.ParseFloat: parsing "1g` + token[:20] + `": invalid syntax`, `strconv.ParseFloat: parsing "1g${TOKEN}": invalid syntax`},
		// compose lowercases a project name: the digits are the value's still
		{"project " + strings.ToLower(token) + " (compose.yaml)", "project ghp_abcde${TOKEN}xyzqq (compose.yaml)"},
		{token + token, "${TOKEN}"},
		// a run the project's files hold is their own text
		{"service postgres: image postgres:16", "service postgres: image postgres:16"},
		{"password postgres-hunter2-pass", "password ${PASSWORD}"},
		// short values are words of messages
		{"shm_size 2g is ignored", "shm_size 2g is ignored"},
		// a multi-line value printed with its newlines escaped, or raw
		{`ports: -----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----`, `ports: ${KEY}`},
		{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "${KEY}"},
		{"-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----\n\nsummary", "${KEY}\n${KEY}\n${KEY}\n\nsummary"},
		{`{"message": "bad ports: -----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"}`, `{"message": "bad ports: ${KEY}"}`},
		// whole characters are replaced, never half of one
		{"x-доступа-1234 y", "x${WIDE} y"},
		{"", ""},
	} {
		if got := s.ScrubString(c.in); got != c.want {
			t.Errorf("Scrub(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestScrubLeavesNoRun puts random parts of random values into random text: whatever the
// mix, no run of SecretRun bytes of a value is left, but across a line break, which is the
// report's (a value's own newline is printed escaped).
func TestScrubLeavesNoRun(t *testing.T) {
	s := NewSecrets()
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/+=\n\"' :éÉж")
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var values []string
	for i := range 20 {
		v := word(8 + r.IntN(60))
		values = append(values, v)
		s.Interpolated("V"+string(rune('A'+i)), v)
	}
	for range 2000 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(word(r.IntN(12)))
			v := values[r.IntN(len(values))]
			i := r.IntN(len(v))
			j := i + r.IntN(len(v)-i+1)
			b.WriteString(v[i:j])
		}
		out := s.ScrubString(b.String())
		for _, v := range values {
			for i := 0; i+SecretRun <= len(v); i++ {
				if run := v[i : i+SecretRun]; !strings.ContainsAny(run, "\n\r") && strings.Contains(out, run) {
					t.Fatalf("Scrub(%q)\n = %q\nholds %q of a value", b.String(), out, v[i:i+SecretRun])
				}
			}
		}
	}
}

// TestScrubKeepsSyntax scrubs reports that quote values in every way the formats escape
// them (JSON, XML, Go's quoting as the text report's escapes are), values full of what
// those formats escape: the scrubbed report is still valid, and holds no run of a value.
func TestScrubKeepsSyntax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("ab0\\\"'&<>;#:/ \n\r\t\x1b\x07\u0085é\u2028xu")
	for range 3000 {
		var v strings.Builder
		for range 8 + r.IntN(24) {
			v.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		value := v.String()
		s := NewSecrets()
		s.Interpolated("V", value)
		s.Interpolated("W", strconv.Quote(value)[1:9]) // a second value overlapping the first
		part := value[r.IntN(len(value)/2):]
		js, _ := json.Marshal(map[string]string{"m": "x" + part + value + "y"})
		var xb bytes.Buffer
		xml.EscapeText(&xb, []byte("x"+value+"y"))
		xmlDoc := "<a b=\"" + xb.String() + "\">" + xb.String() + "</a>"
		for _, c := range []struct {
			name  string
			in    []byte
			valid func([]byte) bool
		}{
			{"json", js, json.Valid},
			{"xml", []byte(xmlDoc), func(b []byte) bool { return xml.Unmarshal(b, new(any)) == nil }},
			{"go", []byte(strconv.Quote("x" + value + "y")), func(b []byte) bool { _, err := strconv.Unquote(string(b)); return err == nil }},
		} {
			out := s.Scrub(c.in)
			if c.valid(c.in) && !c.valid(out) {
				t.Fatalf("%s: value %q: scrubbing\n%s\nmade it invalid:\n%s", c.name, value, c.in, out)
			}
			for i := 0; i+SecretRun <= len(value); i++ {
				if run := value[i : i+SecretRun]; !strings.ContainsAny(run, "\n\r") && bytes.Contains(out, []byte(run)) {
					t.Fatalf("%s: value %q: scrubbing\n%s\nleft %q:\n%s", c.name, value, c.in, run, out)
				}
			}
		}
	}
}
