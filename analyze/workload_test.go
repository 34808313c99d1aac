package analyze

import (
	"strings"
	"testing"
)

// TestReadWorkload holds each class of the judgement by parameters: what the workload's
// parameters say of its /dev/shm use, and that nothing else (a name, a GPU) sets a size.
func TestReadWorkload(t *testing.T) {
	const seg = 9637888 // one NCCL receiving connection with the default buffers
	vllmQueues := func(n int64) int64 { return 10*(16<<20+1+n) + n*10*(10<<20+2) + 6*(4<<20+1+n) }
	tests := []struct {
		name string
		s    Signals
		// want: "none", "unknown", or a need in bytes (need > 0).
		none, unknown bool
		need          int64
		failure       Failure
		evidence      string // a piece of the evidence, when set
	}{
		// One process on one device, or nothing that shares memory: no need.
		{name: "speech NIM on one GPU", s: Signals{Image: "nvcr.io/nim/nvidia/parakeet-ctc-1.1b-asr:1.0", GPUs: 1}, none: true},
		{name: "embedding NIM on one GPU", s: Signals{Image: "nvcr.io/nim/nvidia/nv-embedqa-e5-v5:1.0.0", GPUs: 1}, none: true},
		{name: "SGLang on one rank", s: Signals{Image: "lmsysorg/sglang", Command: []string{"python3", "-m", "sglang.launch_server", "--model-path", "facebook/opt-125m"}, GPUs: 1}, none: true},
		{name: "vLLM on one GPU", s: Signals{Image: "vllm/vllm-openai:v0.6.3", Command: []string{"--model", "m"}, GPUs: 1}, none: true},
		{name: "CPU torchrun, one process", s: Signals{Image: "pytorch/pytorch", Command: []string{"torchrun", "--nproc_per_node=1", "train.py"}}, none: true},
		{name: "a GPU job that prints cuda.is_available", s: Signals{Image: "pytorch/pytorch", Command: []string{"python", "-c", "import torch; print(torch.cuda.is_available())"}, GPUs: 1}, none: true},
		{name: "four CPU ranks talk through gloo", s: Signals{Image: "pytorch/pytorch", Command: []string{"torchrun", "--nproc_per_node", "4", "train.py"}}, none: true},
		{name: "NCCL_SHM_DISABLE", s: Signals{Image: "vllm/vllm-openai", Command: []string{"--tensor-parallel-size", "4"}, Env: map[string]string{"NCCL_SHM_DISABLE": "1"}, GPUs: 4},
			need: vllmQueues(4), evidence: "NCCL_SHM_DISABLE=1"},
		{name: "TGI with NCCL_SHM_DISABLE", s: Signals{Image: "ghcr.io/huggingface/text-generation-inference:2.3.1", Env: map[string]string{"NCCL_SHM_DISABLE": "1", "NUM_SHARD": "2"}, GPUs: 2}, none: true},
		{name: "DataLoader workers set to 0", s: Signals{Image: "pytorch/pytorch", Command: []string{"python", "train.py", "--num_workers", "0"}, GPUs: 1}, none: true},
		{name: "Chromium 156 keeps its shared memory in memfd", s: Signals{Image: "selenium/standalone-chrome:156.0"}, none: true, evidence: "Chromium 156"},
		{name: "Chromium told to use /tmp", s: Signals{Image: "zenika/alpine-chrome", Command: []string{"chromium-browser", "--headless", "--disable-dev-shm-usage"}}, none: true},
		{name: "Firefox keeps its shared memory in memfd", s: Signals{Image: "selenium/standalone-firefox:latest"}, none: true},
		{name: "PostgreSQL without parallel query", s: Signals{Image: "postgres:16", Command: []string{"postgres", "-c", "max_parallel_workers_per_gather=0"}}, none: true},
		{name: "PostgreSQL with System V dynamic shared memory", s: Signals{Image: "postgres:16", Command: []string{"postgres", "-c", "dynamic_shared_memory_type=sysv"}}, none: true},
		{name: "a Ray driver is no node", s: Signals{Image: "rayproject/ray:2.9.0", Command: []string{"python", "driver.py"}}, none: true},
		{name: "Ollama on every GPU", s: Signals{Image: "ollama/ollama", GPUs: AllGPUs}, none: true},

		// Several NCCL ranks: from the rank count and NCCL's buffers.
		{name: "vLLM, tensor parallel 4", s: Signals{Image: "vllm/vllm-openai", Command: []string{"--model", "m", "--tensor-parallel-size", "4"}, GPUs: 4},
			need: 2*7*seg + vllmQueues(4), evidence: "--tensor-parallel-size 4"},
		{name: "vLLM, -tp 2 and -pp 2", s: Signals{Image: "vllm/vllm-openai", Command: []string{"vllm", "serve", "m", "-tp", "2", "-pp=2"}, GPUs: 4},
			need: 2*7*seg + vllmQueues(4)},
		{name: "vLLM, ranks beyond the container's GPUs run elsewhere", s: Signals{Image: "vllm/vllm-openai", Command: []string{"--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"}, GPUs: 8},
			need: 2*15*seg + vllmQueues(8), evidence: "8 of the 16 ranks here"},
		{name: "two NCCL ranks fit the default", s: Signals{Image: "ghcr.io/huggingface/text-generation-inference:2.3.1", Command: []string{"--num-shard", "2"}, GPUs: 2},
			need: 2 * 2 * seg},
		{name: "TGI shards over the GPUs it is given", s: Signals{Image: "ghcr.io/huggingface/text-generation-inference:2.3.1", GPUs: 4},
			need: 2 * 7 * seg, evidence: "4 GPU(s) given"},
		{name: "TGI on all of the host's GPUs", s: Signals{Image: "ghcr.io/huggingface/text-generation-inference:2.3.1", GPUs: AllGPUs}, unknown: true},
		{name: "NIM for LLMs on 4 GPUs", s: Signals{Image: "nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3", GPUs: 4}, need: 2 * 7 * seg},
		{name: "torchrun on each GPU", s: Signals{Image: "pytorch/pytorch", Command: []string{"torchrun", "--nproc-per-node=gpu", "train.py"}, GPUs: 4},
			need: 2 * 7 * seg},
		{name: "torchrun on every GPU of the host", s: Signals{Image: "pytorch/pytorch", Command: []string{"torchrun", "--nproc-per-node=gpu", "train.py"}, GPUs: AllGPUs}, unknown: true},
		{name: "the training operator's PET_NPROC_PER_NODE", s: Signals{Image: "myorg/train", Command: []string{"torchrun", "train.py"}, Env: map[string]string{"PET_NPROC_PER_NODE": "8"}, GPUs: 8},
			need: 2 * 15 * seg, evidence: "PET_NPROC_PER_NODE=8"},
		{name: "deepspeed on the GPUs it sees", s: Signals{Command: []string{"deepspeed", "train.py"}, GPUs: 2}, need: 2 * 2 * seg},
		{name: "DeepSpeed's CPU allreduce", s: Signals{Command: []string{"deepspeed", "--num_gpus", "4", "infer.py"}}, need: 4 * (66 << 20)},
		{name: "mpirun on GPUs", s: Signals{Command: []string{"mpirun", "-np", "4", "python", "train.py"}, GPUs: 4}, need: 2 * 7 * seg},
		{name: "NCCL_BUFFSIZE", s: Signals{Command: []string{"torchrun", "--nproc_per_node", "2", "x.py"}, Env: map[string]string{"NCCL_BUFFSIZE": "8388608"}, GPUs: 2},
			need: 2 * 2 * (seg + 4<<20)},
		{name: "a Kubernetes $(VAR) in args", s: Signals{Image: "vllm/vllm-openai", Command: []string{"--tensor-parallel-size=$(TP)"}, Env: map[string]string{"TP": "4"}, GPUs: 4},
			need: 2*7*seg + vllmQueues(4)},
		{name: "a shell variable that may hold the flags", s: Signals{Image: "vllm/vllm-openai", Command: []string{"sh", "-c", "vllm serve m $EXTRA_ARGS"}, GPUs: 4}, unknown: true},
		{name: "a shell variable as a flag's value", s: Signals{Image: "vllm/vllm-openai", Command: []string{"sh", "-c", "vllm serve $MODEL --tensor-parallel-size 2 --node-rank $RANK"}, GPUs: 2},
			need: 2*2*seg + vllmQueues(2)},
		{name: "a ray start node of a vLLM cluster", s: Signals{Image: "vllm/vllm-openai", Command: []string{"sh", "-c", "ray start --address=$LEADER:6379 --block"}, GPUs: 8},
			need: 2 * 15 * seg, evidence: "ray start with 8 GPUs"},

		// Ray: the object store, and /tmp is slower, not a crash.
		{name: "Ray with --object-store-memory", s: Signals{Image: "rayproject/ray:2.9.0", Command: []string{"ray", "start", "--head", "--object-store-memory=536870912"}},
			need: 590558003, failure: Slows, evidence: "--object-store-memory=536870912"},
		{name: "a Ray worker told where the head is", s: Signals{Image: "rayproject/ray:2.9.0", Env: map[string]string{"RAY_HEAD_ADDRESS": "head:6379"}, MemLimit: 4 << 30},
			need: 1417339206, failure: Slows, evidence: "RAY_HEAD_ADDRESS"},
		{name: "Ray without a memory limit", s: Signals{Command: []string{"ray", "start", "--address=head:6379", "--block"}}, unknown: true},
		{name: "Ray above 10 GB refuses to start", s: Signals{Command: []string{"ray", "start", "--head", "--object-store-memory", "20000000000"}},
			need: 22000000000, failure: Crashes},

		// Known to use /dev/shm, size not known: no number.
		{name: "PostgreSQL in a dev stack", s: Signals{Image: "postgres:16-alpine"}, unknown: true},
		{name: "PostgreSQL with its settings", s: Signals{Image: "postgres:16", Command: []string{"postgres", "-c", "max_parallel_workers_per_gather=4", "-c", "work_mem=256MB"}}, unknown: true, evidence: "work_mem=256MB"},
		{name: "Chromium 150", s: Signals{Image: "selenium/standalone-chrome:150.0"}, unknown: true},
		{name: "Chromium of a version the tag does not show", s: Signals{Image: "selenium/standalone-chrome:4.21.0-20240517"}, unknown: true},
		{name: "Triton", s: Signals{Image: "nvcr.io/nvidia/tritonserver:24.01-py3", GPUs: 1}, unknown: true},
		{name: "DataLoader workers without a batch size", s: Signals{Image: "pytorch/pytorch", Command: []string{"python", "train.py", "--num_workers", "8"}, GPUs: 1}, unknown: true},
		{name: "accelerate without --num_processes", s: Signals{Command: []string{"accelerate", "launch", "train.py"}, GPUs: 4}, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, u := ReadWorkload(tt.s)
			if u == nil {
				t.Fatalf("no workload read from %+v", tt.s)
			}
			switch {
			case tt.none && u.Uses():
				t.Errorf("want no use beyond the default, got need %d, unknown %q", u.Need, u.Unknown)
			case tt.unknown && (!u.Uses() || u.Sized() || u.Unknown == ""):
				t.Errorf("want a use of unknown size, got none=%v need=%d (%s)", u.None, u.Need, u.Why)
			case tt.need > 0 && u.Need != tt.need:
				t.Errorf("need = %d (%s), want %d", u.Need, u.Formula, tt.need)
			}
			if tt.need > 0 && u.Failure != tt.failure {
				t.Errorf("failure = %v, want %v", u.Failure, tt.failure)
			}
			if tt.none && u.Why == "" {
				t.Errorf("no reason for needing nothing")
			}
			if tt.need > 0 && (u.Formula == "" || len(u.Sources) == 0) {
				t.Errorf("a need without its formula or source: %+v", u)
			}
			if tt.evidence != "" && !strings.Contains(strings.Join(u.Evidence, "; "), tt.evidence) {
				t.Errorf("evidence %q does not hold %q", u.Evidence, tt.evidence)
			}
		})
	}
}

// TestDockerfileArgs: build args in FROM read as the Dockerfile's lexer reads them: with a
// colon an empty value counts as unset, without one only an unset arg takes the word, and
// :+ / + give the word only where the arg is set.
func TestDockerfileArgs(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		args map[string]string // build args; TAG is always declared with ARG TAG=
		want string
	}{
		{"${TAG:-2.4}", nil, "2.4"},                             // declared empty: unset for :-
		{"${TAG-2.4}", nil, ""},                                 // declared empty: set for -
		{"${NOPE-2.4}", nil, "2.4"},                             // never declared
		{"${TAG:-2.4}", map[string]string{"TAG": "2.5"}, "2.5"}, // a build arg wins
		{"2.4${GPU:+-cuda}", map[string]string{"GPU": "1"}, "2.4-cuda"},
		{"2.4${GPU:+-cuda}", nil, "2.4"},
		{"2.4${TAG+-set}", nil, "2.4-set"}, // declared, though empty
		{"2.4${TAG:+-set}", nil, "2.4"},
		{"${TAG:?}2.4", nil, "2.4"}, // the build would refuse: read as empty
		{"$NOPE2.4", nil, ".4"},     // the name runs on: NOPE2
	} {
		text := "ARG TAG=\nARG GPU\nFROM pytorch/pytorch:" + tc.ref + "\n"
		d, err := ParseDockerfile([]byte(text), "Dockerfile", "", tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if want := "pytorch/pytorch:" + tc.want; d.From != want {
			t.Errorf("FROM pytorch/pytorch:%s with %v: %q, want %q", tc.ref, tc.args, d.From, want)
		}
	}
}

func TestParseDockerfile(t *testing.T) {
	text := `# syntax=docker/dockerfile:1
ARG BASE=pytorch/pytorch
ARG TAG
FROM ${BASE}:${TAG:-2.4.0} AS build
RUN pip install x
CMD ["python", "build.py"]

FROM build AS final
ENTRYPOINT ["torchrun", \
  "--nproc_per_node", "4"]
CMD ["train.py"]

FROM nginx AS docs
CMD nginx -g 'daemon off;'
`
	d, err := ParseDockerfile([]byte(text), "Dockerfile", "final", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "pytorch/pytorch:2.4.0" || d.FromAt != "Dockerfile:4" {
		t.Errorf("From = %q at %q", d.From, d.FromAt)
	}
	if got := strings.Join(d.Command, " "); got != "torchrun --nproc_per_node 4 train.py" || !strings.Contains(d.CommandAt, "Dockerfile:9") {
		t.Errorf("Command = %q at %q", got, d.CommandAt)
	}
	d, err = ParseDockerfile([]byte(text), "Dockerfile", "", map[string]string{"BASE": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "nginx" || strings.Join(d.Command, " ") != "/bin/sh -c nginx -g 'daemon off;'" {
		t.Errorf("the last stage: From %q, Command %q", d.From, d.Command)
	}
	d, _ = ParseDockerfile([]byte(text), "Dockerfile", "build", map[string]string{"BASE": "rocm/pytorch"})
	if d.From != "rocm/pytorch:2.4.0" {
		t.Errorf("a build arg: From = %q", d.From)
	}
	if _, err := ParseDockerfile([]byte("RUN x\n"), "Dockerfile", "", nil); err == nil {
		t.Errorf("a Dockerfile without FROM is no evidence")
	}
	if _, err := ParseDockerfile(make([]byte, MaxDockerfile+1), "Dockerfile", "", nil); err == nil {
		t.Errorf("an oversized Dockerfile was read")
	}
}
