package analyze

import (
	"path"
	"strings"
	"testing"
)

func TestProfileDetectImage(t *testing.T) {
	tests := []struct {
		image string
		want  string // "" for no profile
	}{
		// PostgreSQL and its common distributions.
		{"postgres", "postgres"},
		{"postgres:16-alpine", "postgres"},
		{"POSTGRES:16", "postgres"},
		{"docker.io/library/postgres:16", "postgres"},
		{"library/postgres:16", "postgres"},
		{"localhost:5000/postgres:16", "postgres"},
		{"postgres@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "postgres"},
		{"postgres:16@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "postgres"},
		{"${REGISTRY:-docker.io}/postgres:${PG_VERSION:-16}", "postgres"},
		{"postgres:${PG_VERSION}", "postgres"},
		{"pgvector/pgvector:pg16", "postgres"},
		{"ankane/pgvector", "postgres"},
		{"postgis/postgis:16-3.4", "postgres"},
		{"timescale/timescaledb:latest-pg16", "postgres"},
		{"timescale/timescaledb-ha:pg16", "postgres"},
		{"bitnami/postgresql:16", "postgres"},
		{"ghcr.io/cloudnative-pg/postgresql:16.2", "postgres"},
		{"quay.io/sclorg/postgresql-16-c9s", "postgres"},
		{"registry.redhat.io/rhel9/postgresql-15", "postgres"},
		{"supabase/postgres:15.1.0.147", "postgres"},
		{"registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi8-16.2-0", "postgres"},

		// Things that merely mention postgres, and other databases.
		{"prometheuscommunity/postgres-exporter", ""},
		{"quay.io/prometheuscommunity/postgres-exporter:v0.15.0", ""},
		{"prometheus-postgres-exporter", ""},
		{"bitnami/postgres-exporter:0.15.0", ""},
		{"wrouesnel/postgres_exporter", ""},
		{"postgresql-exporter", ""},
		{"dpage/pgadmin4", ""},
		{"edoburu/pgbouncer", ""},
		{"redis:7", ""},
		{"redis/redis-stack:latest", ""},
		{"bitnami/redis", ""},
		{"nginx:1.27", ""},
		{"docker.io/library/python:3.12", ""},
		{"", ""},
		{"   ", ""},

		// PyTorch and NGC.
		{"nvcr.io/nvidia/pytorch:24.01-py3", "pytorch"},
		{"pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", "pytorch"},
		{"rocm/pytorch:latest", "pytorch"},
		{"nvcr.io/nvidia/tensorflow:24.01-tf2-py3", "ngc"},
		{"nvcr.io/nvidia/nemo:24.05", "ngc"},
		{"nvcr.io/nvidia/tensorrt-llm/release:0.12.0", "ngc"},
		{"nvcr.io/nvidia/modulus/modulus:24.01", "ngc"},
		{"nvcr.io/nvidia/k8s-device-plugin:v0.15.0", ""},
		{"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04", ""},
		{"nvcr.io/nvidia/gpu-operator:v24.3.0", ""},
		{"nvidia/cuda:12.2.0-base-ubuntu22.04", ""},
		{"mirror.example.com/nvidia/tensorflow:24.01-tf2-py3", ""}, // NGC is nvcr.io only

		// Serving stacks.
		{"vllm/vllm-openai:latest", "vllm"},
		{"vllm/vllm-openai:v0.6.4", "vllm"},
		{"localhost:5000/vllm/vllm-openai:v0.5", "vllm"},
		{"vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "vllm"},
		{"${REGISTRY}/vllm/vllm-openai:latest", "vllm"},
		{"registry.example.com:443/mirror/vllm-openai:latest", "vllm"},
		{"rocm/vllm-dev:main", "vllm"},
		{"nvcr.io/nvidia/vllm:25.11-py3", "vllm"},
		{"ghcr.io/huggingface/text-generation-inference:2.0", "tgi"},
		{"ghcr.io/huggingface/text-generation-inference:3.3.5", "tgi"},
		{"ghcr.io/huggingface/tgi-gaudi:2.0.1", "tgi"},
		{"nvcr.io/nvidia/tritonserver:24.01-py3", "triton"},
		{"nvcr.io/nvidia/tritonserver:24.01-trtllm-python-py3", "triton"},
		{"lmsysorg/sglang:latest", "sglang"},
		{"lmsysorg/sglang:v0.4.1.post5-cu121", "sglang"},
		{"rayproject/ray:2.9.0-gpu", "ray"},
		{"rayproject/ray-ml:latest", "ray"},
		{"nvcr.io/nim/meta/llama3-8b-instruct:1.0.0", "nim"},
		{"nvcr.io/nim/nvidia/nv-embedqa-e5-v5:1.0.0", "nim"},
		{"example.com/nim/meta/llama3-8b-instruct:1.0.0", ""},

		// Browsers.
		{"selenium/node-chrome:4.20", "chromium"},
		{"selenium/standalone-chrome:latest", "chromium"},
		{"selenium/standalone-firefox", "chromium"},
		{"selenium/hub:4.20", ""},
		{"selenium/router:4.20", ""},
		{"selenium/distributor:4.20", ""},
		{"selenium/node-docker:4.20", ""},
		{"selenium/standalone-docker:4.20", ""},
		{"selenium/video:ffmpeg-7.0", ""},
		{"ghcr.io/browserless/chromium", "chromium"},
		{"browserless/chrome", "chromium"},
		{"mcr.microsoft.com/playwright:v1.44.0-jammy", "chromium"},
		{"mcr.microsoft.com/playwright/python:v1.44.0-jammy", "chromium"},
		{"ghcr.io/puppeteer/puppeteer:22", "chromium"},
		{"zenika/alpine-chrome", "chromium"},
	}
	for _, tt := range tests {
		got := Identify(tt.image, Invocation{})
		if id := profileIDOf(got); id != tt.want {
			t.Errorf("Identify(%q) = %q, want %q", tt.image, id, tt.want)
		}
	}
}

func TestProfileDetectCommand(t *testing.T) {
	tests := []struct {
		command []string
		want    string
	}{
		{[]string{"torchrun", "--nproc_per_node", "8", "train.py"}, "pytorch"},
		{[]string{"sh", "-c", "torchrun --nproc 8 train.py"}, "pytorch"},
		{[]string{`sh -c "exec torchrun train.py"`}, "pytorch"},
		{[]string{"/bin/bash", "-lc", "cd /app && torchrun train.py"}, "pytorch"},
		{[]string{"/usr/local/bin/torchrun", "train.py"}, "pytorch"},
		{[]string{"accelerate", "launch", "train.py"}, "pytorch"},
		{[]string{"python", "-m", "accelerate.commands.launch", "train.py"}, "pytorch"},
		{[]string{"deepspeed", "--num_gpus", "8", "train.py"}, "pytorch"},
		{[]string{"python", "-m", "torch.distributed.run", "--nproc_per_node=2", "train.py"}, "pytorch"},
		{[]string{"python3", "-u", "-m", "torch.distributed.launch", "train.py"}, "pytorch"},
		{[]string{"/opt/conda/bin/python3.11", "-m", "torch.distributed.run", "train.py"}, "pytorch"},

		{[]string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"}, "vllm"},
		{[]string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "x"}, "vllm"},
		{[]string{"/bin/sh", "-c", "python3 -m vllm.entrypoints.openai.api_server --model x"}, "vllm"},
		{[]string{"python3", "-m", "sglang.launch_server", "--model-path", "x"}, "sglang"},
		{[]string{"sglang", "serve", "--model-path", "x"}, "sglang"},
		{[]string{"bash", "-c", "python3 -m sglang.launch_server --model-path x --port 30000"}, "sglang"},
		{[]string{"text-generation-launcher", "--model-id", "x"}, "tgi"},
		{[]string{"tritonserver", "--model-repository=/models"}, "triton"},
		{[]string{"/opt/tritonserver/bin/tritonserver", "--model-repository=/models"}, "triton"},
		{[]string{"ray", "start", "--head", "--block"}, "ray"},
		{[]string{"bash", "-lc", "ray start --head && sleep infinity"}, "ray"},
		{[]string{"npx", "playwright", "test"}, "chromium"},
		{[]string{"chromium", "--headless", "--remote-debugging-port=9222"}, "chromium"},

		{nil, ""},
		{[]string{}, ""},
		{[]string{""}, ""},
		{[]string{"python", "train.py"}, ""},
		{[]string{"python", "app.py", "--db-host", "postgres"}, ""},
		{[]string{"postgres", "-c", "max_connections=200"}, ""}, // server binary is judged by image only
		{[]string{"python", "train.py", "--deepspeed", "ds_config.json"}, ""},
		{[]string{"python", "-m", "http.server"}, ""},
		{[]string{"ray"}, ""},
		{[]string{"echo", "start"}, ""},
		{[]string{"vllm"}, ""},
		{[]string{"torchrun-wrapper", "train.py"}, ""},
		{[]string{"serve", "vllm"}, ""},
	}
	for _, tt := range tests {
		got := Identify("", ParseCommand(tt.command, nil, "the command"))
		if id := profileIDOf(got); id != tt.want {
			t.Errorf("Identify(command %q) = %q, want %q", tt.command, id, tt.want)
		}
	}
}

func TestProfileDetectPrecedence(t *testing.T) {
	tests := []struct {
		name string
		s    Signals
		want string
	}{
		{"serving stack beats pytorch image",
			Signals{Image: "nvcr.io/nvidia/pytorch:24.01-py3", Command: []string{"vllm", "serve", "x"}}, "vllm"},
		{"serving stack beats ray image",
			Signals{Image: "rayproject/ray:2.9.0-gpu", Command: []string{"python", "-m", "vllm.entrypoints.openai.api_server"}}, "vllm"},
		{"sglang beats ray start in its own image",
			Signals{Image: "lmsysorg/sglang:latest", Command: []string{"ray", "start", "--head"}}, "sglang"},
		{"triton beats ngc", Signals{Image: "nvcr.io/nvidia/tritonserver:24.01-py3"}, "triton"},
		{"pytorch image beats ngc", Signals{Image: "nvcr.io/nvidia/pytorch:24.01-py3", GPUs: 1}, "pytorch"},
		{"pytorch launcher beats ngc image",
			Signals{Image: "nvcr.io/nvidia/nemo:24.05", Command: []string{"torchrun", "train.py"}}, "pytorch"},
		{"mpirun is a launcher", Signals{Command: []string{"mpirun", "-np", "4", "python", "train.py"}, GPUs: 1}, "pytorch"},

		// GPUs name no program: a GPU request, however many, is no profile.
		{"one gpu", Signals{Image: "nvidia/cuda:12.2.0-base-ubuntu22.04", GPUs: 1}, ""},
		{"all gpus", Signals{Image: "myorg/app", GPUs: AllGPUs}, ""},
		{"tensor parallel flag of an unknown program", Signals{Command: []string{"python serve.py --tensor_parallel_size=4"}}, ""},

		{"ollama on every gpu", Signals{Image: "ollama/ollama:latest", GPUs: AllGPUs}, "ollama"},
		{"tensorboard", Signals{Image: "tensorflow/tensorflow:latest-gpu", Command: []string{"tensorboard", "--logdir", "/runs"}, GPUs: AllGPUs}, "tensorboard"},
		{"milvus gpu", Signals{Image: "milvusdb/milvus:v2.5.2-gpu", GPUs: 2}, "milvus"},
		{"tei", Signals{Image: "ghcr.io/huggingface/text-embeddings-inference:1.8", GPUs: AllGPUs}, "tei"},
		{"no signals", Signals{}, ""},
		{"plain app", Signals{Image: "myorg/app:1.0", Command: []string{"./app"}}, ""},
		{"specific profile wins over gpus", Signals{Image: "postgres:16", GPUs: 2}, "postgres"},
		{"the Dockerfile's base image", Signals{Image: "myorg/trainer", Build: &Dockerfile{From: "pytorch/pytorch:2.4.0", FromAt: "Dockerfile:1"}}, "pytorch"},
		{"the Dockerfile's command", Signals{Build: &Dockerfile{From: "python:3.12", FromAt: "Dockerfile:1", Command: []string{"vllm", "serve", "m"}, CommandAt: "Dockerfile:9"}}, "vllm"},
		{"the service's command wins over the Dockerfile's", Signals{Command: []string{"./app"}, Build: &Dockerfile{From: "python:3.12", Command: []string{"vllm", "serve", "m"}}}, ""},
	}
	for _, tt := range tests {
		if id := profileIDOf(detect(tt.s)); id != tt.want {
			t.Errorf("%s: ReadWorkload(%+v) = %q, want %q", tt.name, tt.s, id, tt.want)
		}
	}
}

func detect(s Signals) *Profile {
	p, _ := ReadWorkload(s)
	return p
}

func TestProfileTable(t *testing.T) {
	all := Profiles()
	required := []string{"pytorch", "vllm", "tgi", "triton", "sglang", "ray", "nim", "ngc", "chromium", "postgres",
		"ollama", "tei", "milvus", "tensorboard"}
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p.ID] {
			t.Errorf("duplicate profile ID %q", p.ID)
		}
		seen[p.ID] = true
		if p.ID == "" || p.ID != strings.ToLower(p.ID) || strings.ContainsAny(p.ID, " _") {
			t.Errorf("profile ID %q is not a short kebab id", p.ID)
		}
		if p.Name == "" || p.Source == "" || p.Note == "" {
			t.Errorf("%s: Name, Source and Note must be set", p.ID)
		}
		if !strings.HasPrefix(p.URL, "https://") || strings.ContainsAny(p.URL, " \t") {
			t.Errorf("%s: URL %q is not an https link", p.ID, p.URL)
		}
		if p.NoShm == (p.read != nil) {
			t.Errorf("%s: a profile reads its parameters, or passes nothing through /dev/shm (NoShm), not both", p.ID)
		}
		for _, pattern := range p.images {
			if strings.ContainsAny(pattern, ":@ ") || pattern != strings.ToLower(pattern) {
				t.Errorf("%s: image pattern %q must be a lowercase path without tag or digest", p.ID, pattern)
			}
			for _, seg := range strings.Split(pattern, "/") {
				if _, err := path.Match(seg, ""); err != nil || seg == "" {
					t.Errorf("%s: image pattern %q has a bad segment %q", p.ID, pattern, seg)
				}
			}
		}
		for _, pattern := range p.commands {
			words := strings.Fields(pattern)
			if len(words) == 0 {
				t.Errorf("%s: empty command pattern", p.ID)
			}
			for _, w := range words {
				if _, err := path.Match(w, ""); err != nil {
					t.Errorf("%s: command pattern %q has a bad word %q", p.ID, pattern, w)
				}
			}
		}
		if len(p.images)+len(p.commands) == 0 {
			t.Errorf("%s: no image or command patterns", p.ID)
		}
	}
	for _, id := range required {
		if !seen[id] {
			t.Errorf("profile %q is missing", id)
		}
	}
	for _, id := range []string{"pytorch", "ngc", "vllm", "tgi", "triton", "sglang", "nim"} {
		if p := ProfileByID(id); p == nil || !p.GPUWorkload {
			t.Errorf("%s: want GPUWorkload", id)
		}
	}
	for _, id := range []string{"chromium", "postgres", "ollama", "tei", "milvus", "tensorboard"} {
		if p := ProfileByID(id); p == nil || p.GPUWorkload {
			t.Errorf("%s: want no GPUWorkload", id)
		}
	}
}

func TestProfileByID(t *testing.T) {
	for _, p := range Profiles() {
		got := ProfileByID(p.ID)
		if got == nil || got.ID != p.ID || got.Note != p.Note || got.URL != p.URL {
			t.Errorf("ProfileByID(%q) = %+v, want %+v", p.ID, got, p)
		}
	}
	for _, id := range []string{"", "unknown", "PyTorch", "VLLM"} {
		if got := ProfileByID(id); got != nil {
			t.Errorf("ProfileByID(%q) = %q, want nil", id, got.ID)
		}
	}
}

func TestProfileTableIsNotShared(t *testing.T) {
	want := ProfileByID("vllm").Name

	p := ProfileByID("vllm")
	p.Name = ""
	all := Profiles()
	all[0].Name = ""
	detect(Signals{Image: "vllm/vllm-openai"}).Name = ""

	if got := ProfileByID("vllm").Name; got != want {
		t.Errorf("editing a returned profile changed the table: Name = %q, want %q", got, want)
	}
	if got := Profiles()[0].Name; got == "" {
		t.Errorf("editing the Profiles() slice changed the table")
	}
}

func profileIDOf(p *Profile) string {
	if p == nil {
		return ""
	}
	return p.ID
}

// TestProfileImagePatterns pins every image pattern of the table with an image it must take
// and a near miss it must leave: a new pattern without both fails here.
func TestProfileImagePatterns(t *testing.T) {
	pins := map[string]struct{ hit, miss string }{
		"vllm/vllm-*":                       {"vllm/vllm-openai:v0.6.4", "vllm/other:1"},
		"vllm-openai*":                      {"registry.example.com/mirror/vllm-openai:latest", "mirror/openai-vllm"},
		"rocm/vllm*":                        {"rocm/vllm-dev:main", "rocm/pytorch-vllm-free"},
		"nvcr.io/nvidia/vllm":               {"nvcr.io/nvidia/vllm:25.11-py3", "nvcr.io/nvidia/vllm-proxy:1"},
		"sglang":                            {"lmsysorg/sglang:latest", "lmsysorg/sglang-router:latest"},
		"text-generation-inference":         {"ghcr.io/huggingface/text-generation-inference:3.0", "ghcr.io/huggingface/text-generation-inference-benchmark:1"},
		"huggingface/tgi-*":                 {"ghcr.io/huggingface/tgi-gaudi:2.0.1", "huggingface/tgi"},
		"huggingface-pytorch-tgi-inference": {"763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-tgi-inference:2.3", "huggingface-pytorch-inference:2.1"},
		"tritonserver":                      {"nvcr.io/nvidia/tritonserver:24.01-py3", "nvcr.io/nvidia/tritonserver-client:24.01"},
		"nvcr.io/nim":                       {"nvcr.io/nim/meta/llama3-8b-instruct:1.0.0", "example.com/nim/meta/llama3-8b-instruct:1.0.0"},
		"rayproject/ray*":                   {"rayproject/ray-ml:2.9.0-gpu", "rayproject/kuberay-operator:v1.1.0"},
		"anyscale/ray*":                     {"anyscale/ray:2.9.0", "anyscale/other:1"},
		"pytorch/pytorch":                   {"pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", "pytorch/torchserve:0.11.0-gpu"},
		"rocm/pytorch*":                     {"rocm/pytorch:latest", "rocm/rocm-terminal"},
		"bitnami/pytorch":                   {"bitnami/pytorch:2.3", "bitnami/python:3.12"},
		"nvcr.io/nvidia/pytorch":            {"nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch-lightning-proxy:1"},
		"nvcr.io/nvidia/tensorflow":         {"nvcr.io/nvidia/tensorflow:24.01-tf2-py3", "tensorflow/serving:2.15.0-gpu"},
		"nvcr.io/nvidia/jax":                {"nvcr.io/nvidia/jax:24.04-py3", "nvcr.io/nvidia/jax-toolbox-proxy:1"},
		"nvcr.io/nvidia/mxnet":              {"nvcr.io/nvidia/mxnet:23.01-py3", "mxnet/python:gpu"},
		"nvcr.io/nvidia/paddlepaddle":       {"nvcr.io/nvidia/paddlepaddle:24.01-py3", "paddlepaddle/paddle:2.6.0-gpu"},
		"nvcr.io/nvidia/nemo":               {"nvcr.io/nvidia/nemo:24.05", "nvcr.io/nvidia/nemo-microservices/nemo-evaluator:25.01"},
		"nvcr.io/nvidia/tensorrt*":          {"nvcr.io/nvidia/tensorrt-llm/release:0.12.0", "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04"},
		"nvcr.io/nvidia/dgl":                {"nvcr.io/nvidia/dgl:24.01-py3", "nvcr.io/nvidia/dgl-proxy:1"},
		"nvcr.io/nvidia/pyg":                {"nvcr.io/nvidia/pyg:24.01-py3", "nvcr.io/nvidia/pygmy:1"},
		"nvcr.io/nvidia/modulus":            {"nvcr.io/nvidia/modulus/modulus:24.01", "nvcr.io/nvidia/modulus-proxy:1"},
		"nvcr.io/nvidia/merlin":             {"nvcr.io/nvidia/merlin/merlin-pytorch:23.08", "nvcr.io/nvidia/merlin-proxy:1"},
		"nvcr.io/nvidia/rapidsai":           {"nvcr.io/nvidia/rapidsai/base:24.04-cuda12.0-py3.11", "rapidsai/base:24.04"},
		"nvcr.io/nvidia/cuda-dl-base":       {"nvcr.io/nvidia/cuda-dl-base:24.01-cuda12.3-devel-ubuntu22.04", "nvcr.io/nvidia/cuda:12.3.0-devel-ubuntu22.04"},
		"nvcr.io/nvidia/deepstream":         {"nvcr.io/nvidia/deepstream:7.0-gc-triton-devel", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"},
		"selenium/node-chrom*":              {"selenium/node-chrome:4.20", "selenium/node-docker:4.20"},
		"selenium/node-firefox*":            {"selenium/node-firefox:4.20", "selenium/node-base:4.20"},
		"selenium/node-edge*":               {"selenium/node-edge:4.20", "selenium/node-docker:4.20"},
		"selenium/node-all-browsers":        {"selenium/node-all-browsers:4.30", "selenium/node-base:4.30"},
		"selenium/standalone-chrom*":        {"selenium/standalone-chromium:latest", "selenium/standalone-docker:4.20"},
		"selenium/standalone-firefox*":      {"selenium/standalone-firefox:latest", "selenium/standalone-docker:latest"},
		"selenium/standalone-edge*":         {"selenium/standalone-edge:latest", "selenium/hub:4.20"},
		"selenium/standalone-all-browsers":  {"selenium/standalone-all-browsers:4.30", "selenium/router:4.20"},
		"seleniarm/node-chromium*":          {"seleniarm/node-chromium:4.18", "seleniarm/hub:4.18"},
		"seleniarm/node-firefox*":           {"seleniarm/node-firefox:4.18", "seleniarm/node-docker:4.18"},
		"seleniarm/standalone-chromium*":    {"seleniarm/standalone-chromium:latest", "seleniarm/hub:latest"},
		"seleniarm/standalone-firefox*":     {"seleniarm/standalone-firefox:latest", "seleniarm/distributor:latest"},
		"browserless/*":                     {"ghcr.io/browserless/chromium:latest", "browserless"},
		"zenika/alpine-chrome":              {"zenika/alpine-chrome:with-puppeteer", "zenika/alpine-node"},
		"chromedp/headless-shell":           {"chromedp/headless-shell:latest", "chromedp/other"},
		"puppeteer":                         {"ghcr.io/puppeteer/puppeteer:22", "myorg/puppeteer-report-viewer"},
		"playwright":                        {"mcr.microsoft.com/playwright:v1.44.0-jammy", "myorg/playwright-report"},
		"playwright/*":                      {"mcr.microsoft.com/playwright/python:v1.44.0-jammy", "myorg/playwright-report"},
		"postgres":                          {"postgres:16-alpine", "prometheuscommunity/postgres-exporter"},
		"postgresql":                        {"bitnami/postgresql:16", "bitnami/postgresql-repmgr-exporter"},
		"postgresql-[0-9]*":                 {"registry.redhat.io/rhel9/postgresql-15", "postgresql-exporter"},
		"pgvector":                          {"pgvector/pgvector:pg16", "pgvector/pgvector-python"},
		"postgis":                           {"postgis/postgis:16-3.4", "postgis/docker-postgis-builder"},
		"timescaledb":                       {"timescale/timescaledb:latest-pg16", "timescale/timescaledb-tune"},
		"timescaledb-ha":                    {"timescale/timescaledb-ha:pg16", "timescale/promscale"},
		"crunchy-postgres":                  {"registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi8-16.2-0", "registry.developers.crunchydata.com/crunchydata/crunchy-postgres-exporter:ubi8-5.5.0"},
		"crunchy-postgres-gis":              {"registry.developers.crunchydata.com/crunchydata/crunchy-postgres-gis:ubi8-16.2-3.4-0", "crunchydata/crunchy-pgbouncer"},
		"ollama":                            {"pmoves/ollama:0.12.6", "ghcr.io/ollama-webui/ollama-webui:main"},
		"text-embeddings-inference":         {"ghcr.io/huggingface/text-embeddings-inference:1.8", "text-embeddings-router-proxy"},
		"milvusdb/milvus":                   {"milvusdb/milvus:v2.5.2-gpu", "zilliz/attu:v2.4"},
		"tensorboard":                       {"tensorflow/tensorboard", "tensorflow/tensorflow:latest-gpu"},
	}
	seen := map[string]bool{}
	for _, p := range Profiles() {
		for _, pattern := range p.images {
			seen[pattern] = true
			pin, ok := pins[pattern]
			if !ok {
				t.Errorf("%s: image pattern %q has no pinned hit and near miss", p.ID, pattern)
				continue
			}
			if got := profileIDOf(Identify(pin.hit, Invocation{})); got != p.ID {
				t.Errorf("%s: %q takes %q as %q, want %q", pattern, pattern, pin.hit, got, p.ID)
			}
			if got := profileIDOf(Identify(pin.miss, Invocation{})); got == p.ID {
				t.Errorf("%s: near miss %q is taken as %q", pattern, pin.miss, got)
			}
		}
	}
	for pattern := range pins {
		if !seen[pattern] {
			t.Errorf("pin for %q, which is no pattern of the table", pattern)
		}
	}
}
