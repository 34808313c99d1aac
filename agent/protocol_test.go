//go:build linux

package agent

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
)

// TestRefusesOtherProtocol: an agent started by a doctor of another protocol version, or by
// one that names none, refuses before it measures, says why on stderr and prints nothing a
// doctor could misread; one started with its own version measures and marks every line
// with it.
func TestRefusesOtherProtocol(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--path", dir},
		{"--protocol", "0", "--path", dir},
		{"--protocol", fmt.Sprint(protocol.Version + 1), "--path", dir},
		{"watch", "--protocol", fmt.Sprint(protocol.Version + 1), "--path", dir, "--count", "1"},
		{"watch", "--path", dir, "--count", "1"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		if code != protocol.ExitProtocol || stdout.Len() != 0 || !strings.Contains(stderr.String(), "protocol") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want exit %d, nothing on stdout and the reason", args, code, stdout.String(), stderr.String(), protocol.ExitProtocol)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main(append(protocol.Args(), "--path", dir), &stdout, &stderr); code != 0 {
		t.Fatalf("own version: exit %d: %s", code, stderr.String())
	}
	out, err := protocol.ParseOutput(&stdout)
	if err != nil || out.Err != nil || !out.Complete || out.Report == nil || !out.Report.Exists {
		t.Fatalf("own version: %+v %v\n%s", out, err, stderr.String())
	}
	stdout.Reset()
	if code := Main(append(append([]string{"watch"}, protocol.Args()...), "--path", dir, "--count", "1", "--interval", "10ms", "--every", "5ms"), &stdout, &stderr); code != 0 {
		t.Fatalf("watch, own version: exit %d: %s", code, stderr.String())
	}
	if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.Contains(first, fmt.Sprintf(`"protocol":%d`, protocol.Version)) {
		t.Errorf("watch line %q carries no version", first)
	}
}
