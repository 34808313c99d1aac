package compose

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// envSamples are env files in the shapes the parser knows: comments, export, inherited keys,
// quotes over several lines, escapes, YAML-style keys, inline comments, defaults.
var envSamples = []string{
	"A=1\nB=${A}2\n",
	"# c\nexport A=1 # comment\n\n  B = 'x ${A}'\nC=\"a\\\"b\nc ${B}\"\nD\nE: yaml\n",
	"A=\"unterminated\n",
	"BAD KEY=1\n",
	"{\"type\": \"service_account\", \"private_key\": \"SECRET\"}\n",
	"A=${B:-${C:-x}}\nB=$A$A\n",
	"\uFEFFA=1\r\nB=2\r\n",
	"A=x\n=y\n",
	"A.B-C[0]=1\nPATH_X=${PATH}\n",
	"A=${A:?needed}\n",
	"A=$\n B=${\n",
	"K='multi\nline' \nL=\"q\\n\"\n",
	"last=no newline",
}

// TestParseEnvIsComposes holds the doctor's env file parsing to compose-go's own: the same
// values, and an error where compose-go has one, at the same line, in the doctor's words.
func TestParseEnvIsComposes(t *testing.T) {
	for _, s := range envSamples {
		compareEnv(t, s)
	}
}

func FuzzParseEnv(f *testing.F) {
	for _, s := range envSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<12 {
			return
		}
		compareEnv(t, s)
	})
}

func compareEnv(t *testing.T, s string) {
	t.Helper()
	lookup := func(k string) (string, bool) {
		if k == "PATH" {
			return "/bin", true
		}
		return "", false
	}
	want, werr := dotenv.ParseWithLookup(strings.NewReader(s), lookup) // as docker compose reads a .env
	got, _, gerr := parseEnv([]byte(s), lookup)
	if werr == nil && gerr != nil && strings.Contains(gerr.Error(), "refusing an expansion bomb") {
		return // past the bounds compose-go has not
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: compose-go %v, doctor %v", s, werr, gerr)
	}
	if werr != nil {
		if strings.Contains(gerr.Error(), "SECRET") {
			t.Errorf("%q: the error quotes the file: %v", s, gerr)
		}
		var line int
		if _, err := fmt.Sscanf(werr.Error(), "line %d:", &line); err == nil && !strings.HasPrefix(gerr.Error(), fmt.Sprintf("line %d:", line)) {
			t.Errorf("%q: compose-go %v, doctor %v", s, werr, gerr)
		}
		return
	}
	if !maps.Equal(got, want) {
		t.Errorf("%q: compose-go %q, doctor %q", s, want, got)
	}
}
