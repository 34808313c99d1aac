package compose

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/reference"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// composeService is what docker compose config --format json prints of the keys that decide
// /dev/shm.
type composeService struct {
	ShmSize  string   `json:"shm_size"`
	Ipc      string   `json:"ipc"`
	MemLimit string   `json:"mem_limit"`
	Tmpfs    []string `json:"tmpfs"`
	Deploy   *struct {
		Resources struct {
			Limits *struct {
				Memory string `json:"memory"`
			} `json:"limits"`
		} `json:"resources"`
	} `json:"deploy"`
}

// TestConformance loads every fixture, the demo and the corpus with the real docker compose
// and with the doctor, and requires the same services with the same shm_size, ipc and memory
// limit wherever docker compose itself accepts the project.
func TestConformance(t *testing.T) {
	ref := reference.ComposeFor(t)
	var files []string
	fixtures, _ := filepath.Glob("../../testdata/rules/*/compose.yaml")
	files = append(files, fixtures...)
	files = append(files, "../../testdata/demo/compose.yaml")
	floor := 20 // the fixtures alone, in a clone without the corpus
	if dir := testutil.FindCorpus(t); dir != "" {
		floor = 40
		for _, row := range testutil.CorpusRows(t, dir) {
			if row.Kind == "compose" {
				files = append(files, filepath.Join(dir, row.Path))
			}
		}
	}
	// docker compose runs are the slow part: run them ahead, a few at a time.
	outputs := make([]chan []byte, len(files))
	sem := make(chan struct{}, 4)
	dockerConfig := t.TempDir()
	for i, file := range files {
		outputs[i] = make(chan []byte, 1)
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.Command(ref, "--profile", "*", "-f", file, "config", "--format", "json")
			cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
			out, err := cmd.Output()
			if err != nil {
				out = nil // docker compose refuses it too; TestCorpus covers how the doctor copes
			}
			outputs[i] <- out
		}()
	}
	compared := 0
	for i, file := range files {
		out := <-outputs[i]
		if out == nil {
			continue
		}
		var model struct {
			Services map[string]composeService `json:"services"`
		}
		if err := json.Unmarshal(out, &model); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		opts := Options{Paths: []string{file}}
		if corpus := testutil.FindCorpus(t); corpus != "" && strings.HasPrefix(file, corpus+"/") {
			rel, _ := filepath.Rel(corpus, file)
			opts.AllowOutside = []string{corpusRepo(corpus, rel)}
		}
		projects := Load(context.Background(), opts)
		p := projects[0]
		if !p.Compose {
			t.Errorf("%s: docker compose loads it, the doctor does not: %v", file, p.Errors)
			continue
		}
		compared++
		if len(p.Plans) != len(model.Services) {
			t.Errorf("%s: %d services, docker compose has %d", file, len(p.Plans), len(model.Services))
		}
		for name, s := range model.Services {
			plan := p.Plan(name)
			if plan == nil {
				t.Errorf("%s: service %s missing", file, name)
				continue
			}
			if got := bytesOrNil(plan.Configured); s.ShmSize != "" && got != s.ShmSize {
				t.Errorf("%s: %s shm_size %s, docker compose %s", file, name, got, s.ShmSize)
			}
			if plan.IPC != s.Ipc {
				t.Errorf("%s: %s ipc %q, docker compose %q", file, name, plan.IPC, s.Ipc)
			}
			limit := s.MemLimit
			if s.Deploy != nil && s.Deploy.Resources.Limits != nil && s.Deploy.Resources.Limits.Memory != "" {
				limit = s.Deploy.Resources.Limits.Memory
			}
			if limit == "0" {
				limit = ""
			}
			if got := bytesOrNil(plan.MemLimit); got != limit && plan.Unresolved == nil {
				t.Errorf("%s: %s memory limit %s, docker compose %s", file, name, got, limit)
			}
		}
	}
	t.Logf("%d of %d projects compared with docker compose", compared, len(files))
	if compared < floor {
		t.Fatalf("only %d projects compared with docker compose", compared)
	}
}

func bytesOrNil(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}
