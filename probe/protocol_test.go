//go:build linux

package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/engine"
)

// otherAgent builds a stand-in for an agent of another version of shmdoctor, as an image the
// engine cached long ago would hold: it takes any flags and prints a full report in the
// protocol version given ("" for the lines of agents from before versions).
func otherAgent(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	field := ""
	if version != "" {
		field = `\"protocol\":` + version + `,`
	}
	src := `package main

import "fmt"

func main() {
	fmt.Println("{` + field + `\"event\":\"measure\",\"report\":{\"path\":\"/dev/shm\",\"exists\":true,\"size_bytes\":1}}")
	fmt.Println("{` + field + `\"event\":\"report\",\"report\":{\"path\":\"/dev/shm\",\"exists\":true,\"size_bytes\":1}}")
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module otheragent\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "shmdoctor")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the other agent: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		for _, e := range engines(t) {
			removeImagesOn(t, e.c, digestOf(t, bin))
		}
	})
	return bin
}

// TestOtherProtocolAgent: a doctor whose probe image holds an agent of another protocol
// version (older, without versions, or newer) reads none of its report: the measurement says
// which versions met and how to get rid of the image, and holds none of the agent's figures.
// The agent's own refusal of another doctor's --protocol is agent.TestRefusesOtherProtocol.
func TestOtherProtocolAgent(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "0", fmt.Sprint(protocol.Version + 1)} {
		o := testOptions(t)
		o.Binary = otherAgent(t, version)
		o.WriteProbe = "off"
		ms := run(t, o, &analyze.ShmPlan{Service: "a", Source: analyze.SourcePrivate, Predicted: i64(64 * mib)})
		m := ms["a"]
		got := version
		if got == "" {
			got = "0"
		}
		want := fmt.Sprintf("the agent speaks protocol %s, this doctor protocol %d", got, protocol.Version)
		if m == nil || !strings.Contains(m.Error, want) || !strings.Contains(m.Error, "shmdoctor probe --clean") || m.MeasuredBytes != nil {
			t.Errorf("agent of protocol %q: %s; want %q and no figures", version, describe(m), want)
		}
	}
}

// digestOf is the digest that names the probe image of the agent at bin.
func digestOf(t *testing.T, bin string) string {
	t.Helper()
	a, err := engine.SelectAgent(bin, "linux", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	return a.Digest()
}
