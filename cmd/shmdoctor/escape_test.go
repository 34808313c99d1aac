package main

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
	"github.com/shmdoctor/shmdoctor/probe"
)

// commandLine is a line a CI runner reads as a command: a workflow command ("::" after white
// space) or a legacy one ("##[" or Azure's "##vso[" anywhere).
var commandLine = regexp.MustCompile(`(?m)^\s*::|##\[|##vso\[`)

// rawControl finds the first character of out that must not reach a terminal or a log raw:
// a control character other than the line break, DEL, a C1 control, a line or paragraph
// separator, a bidi override; "" when there is none.
func rawControl(out string) string {
	for _, r := range out {
		if r != '\n' && r != ' ' && !strconv.IsPrint(r) {
			return strconv.QuoteRune(r)
		}
	}
	return ""
}

// TestForgedCommands loads values that hold a line break and a workflow command, the runner's
// legacy add-mask, an OSC 52 clipboard write and BEL: no format prints a command the runner
// would run or a raw control character, and the github format writes only its own commands.
func TestForgedCommands(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"compose.yaml": `services:
  app:
    image: "busybox ##[add-mask]img"
    ipc: "service:x\n  ::warning title=FORGED::f"
    shm_size: 1g
  x:
    image: busybox
    volumes:
      - "/srv/##[add-mask]v\e]52;c;ZXZpbA==\a\u0085:/dev/shm"
`})
	for _, format := range []string{"text", "json", "sarif", "github", "codeclimate", "junit"} {
		_, out, errs := shmdoctor(t, "", "--probe", "never", "-v", "--format", format, dir)
		if c := rawControl(out + errs); c != "" {
			t.Errorf("%s: raw %s printed:\n%s%s", format, c, out, errs)
		}
		if format == "github" {
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if !regexp.MustCompile(`^::(error|warning|notice) file=`).MatchString(l) || strings.Contains(l, "##[") {
					t.Errorf("github: not a command of the doctor's own: %q", l)
				}
			}
			continue
		}
		if m := commandLine.FindString(out + errs); m != "" {
			t.Errorf("%s: a runner reads %q as a command:\n%s%s", format, m, out, errs)
		}
	}
	_, out, _ := shmdoctor(t, "", "--probe", "never", "--format", "text", dir)
	for _, want := range []string{`x\n  :\x3awarning title=FORGED::f`, `#\x23[add-mask]v\x1b]52;c;ZXZpbA==\a\u0085`} {
		if !strings.Contains(out, want) {
			t.Errorf("text: no %s in:\n%s", want, out)
		}
	}
}

// TestKubernetesNamesEscaped names a workload, its namespace and its container with terminal
// escapes (a screen clear, an OSC 8 link, an OSC 52 clipboard write) and a line break
// before a workflow command: the text report, whose fix quotes the container's name in
// YAML, prints them escaped on the lines they belong to.
func TestKubernetesNamesEscaped(t *testing.T) {
	dir := testutil.WriteFiles(t, map[string]string{"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web\e]8;;https://evil.example\aclick\e]8;;\a"
  namespace: "ns\e[2J"
spec:
  template:
    spec:
      containers:
        - name: "vllm\e]52;c;ZXZpbA==\a\n  ::error::forged"
          image: vllm/vllm-openai:v0.6.3
          args: [--tensor-parallel-size, "4"]
          resources: {limits: {nvidia.com/gpu: 4}}
`})
	_, out, errs := shmdoctor(t, "", "--probe", "never", "-v", dir)
	if c := rawControl(out + errs); c != "" {
		t.Errorf("raw %s printed:\n%s%s", c, out, errs)
	}
	if m := commandLine.FindString(out + errs); m != "" {
		t.Errorf("a runner reads %q as a command:\n%s", m, out)
	}
	if !strings.Contains(out, `vllm\x1b]52;c;ZXZpbA==\a\n  :\x3aerror::forged`) {
		t.Errorf("the container's name is not printed escaped:\n%s", out)
	}
	// A name wraps at its own spaces like any text, but the line it continues on starts
	// with the escape, never with the command.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "forged") {
			t.Errorf("a name forged a line: %q", l)
		}
	}
}

// TestFixEscapesErrors: --fix prints the load errors of a file whose name holds an OSC
// sequence and BEL, and whose value holds an escape, escaped on stderr.
func TestFixEscapesErrors(t *testing.T) {
	name := "bad\x1b]0;title\x07.yaml"
	t.Chdir(testutil.WriteFiles(t, map[string]string{name: "services:\n  a:\n    image: x\n    shm_size: \"lots\\e[2J\"\n"}))
	code, _, errs := shmdoctor(t, "", "--fix", name)
	if code != exitUsage {
		t.Errorf("exit %d, want %d for a load error", code, exitUsage)
	}
	if c := rawControl(errs); c != "" || !strings.Contains(errs, `bad\x1b]0;title\a.yaml`) {
		t.Errorf("stderr not escaped (raw %s):\n%q", c, errs)
	}
}

// TestErrorsEscaped: an error that names what the user gave (a config file) is printed
// escaped.
func TestErrorsEscaped(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errs := shmdoctor(t, "", "--config", "nope\x1b[31m\n::warning::x.yaml")
	if code != exitUsage || rawControl(errs) != "" || commandLine.MatchString(errs) || !strings.Contains(errs, `nope\x1b[31m\n::warning::x.yaml`) {
		t.Errorf("exit %d, stderr not escaped:\n%q", code, errs)
	}
}

// TestHostEscaped: what the daemon says of itself (a value, not the engine: a daemon that
// answers with escapes is what this is about) is printed escaped by host.
func TestHostEscaped(t *testing.T) {
	evil := "Linux\x1b]52;c;ZXZpbA==\x07\n::error::forged"
	h := &probe.HostInfo{OperatingSystem: evil, KernelVersion: evil, Runtimes: []string{evil}, Errors: []string{evil}}
	var b bytes.Buffer
	printHost(&b, h, 1<<30, exitFindings, errors.New(evil))
	if c := rawControl(b.String()); c != "" || commandLine.MatchString(b.String()) {
		t.Errorf("host printed raw %s:\n%s", c, b.String())
	}
}
