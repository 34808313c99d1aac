package compose

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestDockerfileEvidence: a service that builds its image is judged by its Dockerfile's
// final FROM and CMD where the service sets neither, read only inside the build context and
// the project root.
func TestDockerfileEvidence(t *testing.T) {
	outside := testutil.WriteFiles(t, map[string]string{"Dockerfile": "FROM vllm/vllm-openai\nCMD [\"--tensor-parallel-size\", \"4\"]\n"})
	dir := testutil.WriteFiles(t, map[string]string{
		".git/HEAD": "ref: refs/heads/main\n",
		"compose.yaml": `services:
  built:
    build: ./server
    gpus: [{driver: nvidia, count: 4, capabilities: [gpu]}]
  staged:
    build: {context: ./server, dockerfile: Dockerfile.stages, target: serve, args: {TP: "2"}}
    gpus: [{driver: nvidia, count: 2, capabilities: [gpu]}]
  escaped:
    build: {context: ./server, dockerfile: ../elsewhere/Dockerfile}
    gpus: [{driver: nvidia, count: 4, capabilities: [gpu]}]
  linked:
    build: ./linked
    gpus: [{driver: nvidia, count: 4, capabilities: [gpu]}]
  commanded:
    build: ./server
    command: ["python", "app.py"]
    gpus: [{driver: nvidia, count: 4, capabilities: [gpu]}]
`,
		"server/Dockerfile":        "ARG BASE=vllm/vllm-openai:v0.6.3\nFROM ${BASE}\nCMD [\"--model\", \"m\", \\\n  \"--tensor-parallel-size\", \"4\"]\n",
		"server/Dockerfile.stages": "FROM python:3.12 AS build\nARG TP=1\nFROM build AS serve\nENTRYPOINT vllm serve m --tensor-parallel-size 2\nFROM nginx\n",
		"elsewhere/Dockerfile":     "FROM vllm/vllm-openai\nCMD [\"--tensor-parallel-size\", \"4\"]\n",
	})
	if err := os.MkdirAll(filepath.Join(dir, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "Dockerfile"), filepath.Join(dir, "linked", "Dockerfile")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	ps := Load(context.Background(), Options{Paths: []string{"."}})
	if len(ps) != 1 || !ps[0].Loaded() {
		t.Fatalf("loading: %+v", ps[0].Errors)
	}
	p := ps[0]
	built := p.Plan("built")
	if built.Use == nil || !built.Use.Sized() || !strings.Contains(built.Use.Read(), "FROM vllm/vllm-openai:v0.6.3 at server/Dockerfile:2") ||
		!strings.Contains(built.Use.Read(), "server/Dockerfile:3") {
		t.Errorf("built: the Dockerfile's FROM and CMD are no evidence: %+v", built.Use)
	}
	staged := p.Plan("staged")
	if staged.Use == nil || !staged.Use.Sized() || !strings.Contains(staged.Use.Read(), "Dockerfile.stages:4") {
		t.Errorf("staged: the target stage's ENTRYPOINT is no evidence: %+v", staged.Use)
	}
	for _, name := range []string{"escaped", "linked"} {
		if u := p.Plan(name).Use; u != nil {
			t.Errorf("%s: a Dockerfile outside the build context or the root was read: %+v", name, u)
		}
	}
	if u := p.Plan("commanded").Use; u.Uses() {
		t.Errorf("commanded: the service's own command runs, not the Dockerfile's CMD: %+v", u)
	}
}
