package compose

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/shmdoctor/shmdoctor/analyze"
)

// TestGPUConformance loads every fixture of testdata/gpu with compose-go itself and with
// the doctor, and requires the doctor's GPU count to be the one the engine gives what
// compose-go's model holds, and the one the fixture's first line states.
func TestGPUConformance(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/gpu/*/compose.yaml")
	if len(files) < 18 {
		t.Fatalf("found %d GPU fixtures", len(files))
	}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
			stated, ok := statedGPUs(string(first))
			if !ok {
				t.Fatalf("first line %q states no count (# gpus: all|none|N)", first)
			}
			o, err := cli.NewProjectOptions([]string{file}, cli.WithResolvedPaths(true), cli.WithEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			model, err := o.LoadProject(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ps := Load(context.Background(), Options{Paths: []string{file}})
			if len(ps) != 1 || len(ps[0].Errors) > 0 {
				t.Fatalf("the doctor loads %d projects: %v", len(ps), ps[0].Errors)
			}
			for sname, s := range model.Services {
				plan := ps[0].Plan(sname)
				if plan == nil {
					t.Fatalf("service %s missing", sname)
				}
				engine := engineGPUs(s)
				if engine != stated {
					t.Errorf("%s: compose-go's model gives %s, the fixture states %s", sname, gpuCount(engine), gpuCount(stated))
				}
				if plan.GPUs != engine || plan.GPU != (engine != 0) {
					t.Errorf("%s: the doctor counts %s (gpu %v), compose-go's model gives %s", sname, gpuCount(plan.GPUs), plan.GPU, gpuCount(engine))
				}
			}
		})
	}
}

// engineGPUs is the number of GPUs a process of the service sees, from compose-go's model,
// as docker compose and the engine's NVIDIA driver hand them over: every device request
// (gpus, and deploy reservations of the gpu capability or the nvidia driver) by its device
// IDs or its count; without one, runtime: nvidia with NVIDIA_VISIBLE_DEVICES; then
// CUDA_VISIBLE_DEVICES as a limit.
func engineGPUs(s types.ServiceConfig) int {
	n := 0
	addAll := func(k int) {
		if n == analyze.AllGPUs || k == analyze.AllGPUs {
			n = analyze.AllGPUs
		} else {
			n += k
		}
	}
	var reqs []types.DeviceRequest
	reqs = append(reqs, s.Gpus...)
	if s.Deploy != nil && s.Deploy.Resources.Reservations != nil {
		for _, d := range s.Deploy.Resources.Reservations.Devices {
			for _, c := range d.Capabilities {
				if c == "gpu" || d.Driver == "nvidia" {
					reqs = append(reqs, d)
					break
				}
			}
		}
	}
	for _, r := range reqs {
		switch {
		case len(r.IDs) == 1 && r.IDs[0] == "all":
			addAll(analyze.AllGPUs)
		case len(r.IDs) > 0:
			addAll(len(r.IDs))
		case r.Count == -1:
			addAll(analyze.AllGPUs)
		default:
			addAll(int(r.Count))
		}
	}
	env := func(k string) (string, bool) {
		v, ok := s.Environment[k]
		if !ok || v == nil {
			return "", false
		}
		return *v, true
	}
	if len(reqs) == 0 && s.Runtime == "nvidia" {
		switch v, _ := env("NVIDIA_VISIBLE_DEVICES"); v {
		case "all":
			n = analyze.AllGPUs
		case "none", "void", "":
		default:
			n = len(strings.Split(v, ","))
		}
	}
	if v, ok := env("CUDA_VISIBLE_DEVICES"); ok && n != 0 {
		seen := 0
		if v != "" && v != "-1" {
			seen = len(strings.Split(v, ","))
		}
		if n == analyze.AllGPUs || seen < n {
			n = seen
		}
	}
	return n
}

// statedGPUs reads "# gpus: all|none|N".
func statedGPUs(line string) (int, bool) {
	v, ok := strings.CutPrefix(line, "# gpus: ")
	if !ok {
		return 0, false
	}
	v, _, _ = strings.Cut(v, " ")
	switch v {
	case "all":
		return analyze.AllGPUs, true
	case "none":
		return 0, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0
}

func gpuCount(n int) string {
	switch n {
	case analyze.AllGPUs:
		return "all"
	case 0:
		return "none"
	}
	return strconv.Itoa(n)
}
