package analyze

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Profile is a program the doctor recognises by its image or command, and how it reads the
// parameters that decide its /dev/shm use. A profile names the program; it sets no size:
// the size comes from the parameters (see Use), or it is not known.
type Profile struct {
	ID   string // short kebab id: "pytorch", "vllm", "tgi", "triton", "sglang", "ray", "nim", "ngc", "chromium", "postgres", "ollama", ...
	Name string // human name: "PyTorch", "vLLM", ...
	// Note says why the program does or does not pass data through /dev/shm, with Source
	// and URL, the public page that says so.
	Note, Source, URL string
	// GPUWorkload is true when the program is a GPU/PyTorch-style workload that also wants
	// NVIDIA's memlock=-1 and stack=67108864 ulimits when it runs on a GPU.
	GPUWorkload bool
	// NoShm is true for a GPU server that passes nothing through /dev/shm however many GPUs
	// it is given: its vendor starts it on Docker's default.
	NoShm bool

	// images are globs (path.Match) over whole "/"-separated segments of the image
	// reference, lowercased and without tag or digest. A glob whose first segment is a
	// registry host is anchored at the start and may cover only a leading part, so
	// "nvcr.io/nim" takes every NIM however deep its path is. Any other glob is anchored at
	// the end of the repository path with the registry dropped, so "postgres" takes
	// "docker.io/library/postgres" and "localhost:5000/postgres" but never
	// "prometheuscommunity/postgres-exporter".
	images []string
	// commands are runs of words that must appear consecutively among the container's
	// command words. Each word is a glob tried against the command word and its basename,
	// so "torchrun" takes "/usr/local/bin/torchrun". Python modules are written as
	// "-m module" so every interpreter spelling and flag order (python3 -u -m ...) counts.
	commands []string
	// read works out the use from the container's parameters.
	read func(s Signals, inv Invocation, u *Use)
}

// AllGPUs is the GPU count of a request for every GPU of the host (count: all, gpus: all).
const AllGPUs = -1

// Signals are the facts about one container that identify its workload and its parameters.
type Signals struct {
	Image   string   // as written, e.g. "nvcr.io/nvidia/pytorch:24.01-py3", "vllm/vllm-openai:latest", "${REGISTRY}/x" (may be empty)
	Command []string // entrypoint words followed by command words (may be empty)
	// Env is the container's environment as the engine will set it.
	Env map[string]string
	// GPUs is the number of GPUs the container's processes see: 0 for none, AllGPUs for all
	// of them.
	GPUs int
	// MemLimit is the container's memory limit in bytes, 0 when none is set.
	MemLimit int64
	// Build is what the Dockerfile the service builds says, nil when it builds none or the
	// file could not be read.
	Build *Dockerfile
}

// profiles is ordered most specific first because the first match wins: a serving stack
// started from a PyTorch or NGC image is judged by the stack's parameters.
var profiles = []Profile{
	{
		ID: "vllm", Name: "vLLM", GPUWorkload: true,
		Source: "vLLM documentation: Using Docker", URL: "https://docs.vllm.ai/en/stable/deployment/docker/",
		Note:     "vLLM passes data between its processes through shared memory, \"particularly for tensor parallel inference\".",
		images:   []string{"vllm/vllm-*", "vllm-openai*", "rocm/vllm*", "nvcr.io/nvidia/vllm"},
		commands: []string{"vllm serve", "-m vllm.entrypoints.*", "-m fastchat.serve.vllm_worker"},
		read:     readVLLM,
	},
	{
		ID: "sglang", Name: "SGLang", GPUWorkload: true,
		Source: "SGLang documentation: Installation (Docker)", URL: "https://docs.sglang.io/docs/get-started/install",
		Note:     "SGLang runs one process per tensor-parallel rank, and its ranks talk through NCCL.",
		images:   []string{"sglang"},
		commands: []string{"sglang serve", "-m sglang.launch_server"},
		read:     readSGLang,
	},
	{
		ID: "tgi", Name: "Hugging Face TGI", GPUWorkload: true,
		Source: "Hugging Face text-generation-inference README: A note on Shared Memory (shm)",
		URL:    "https://github.com/huggingface/text-generation-inference#a-note-on-shared-memory-shm",
		Note: "TGI shards a model over its GPUs with NCCL, which may fall back to host shared memory when NVLink or " +
			"PCI peer-to-peer is not possible.",
		images:   []string{"text-generation-inference", "huggingface/tgi-*", "huggingface-pytorch-tgi-inference"},
		commands: []string{"text-generation-launcher"},
		read:     readTGI,
	},
	{
		ID: "triton", Name: "NVIDIA Triton Inference Server", GPUWorkload: true,
		Source:   "Triton Inference Server: Python backend, managing shared memory",
		URL:      "https://github.com/triton-inference-server/python_backend#managing-shared-memory",
		Note:     "Triton's Python backend passes every request and response of a Python model through /dev/shm.",
		images:   []string{"tritonserver"},
		commands: []string{"tritonserver"},
		read:     readTriton,
	},
	{
		ID: "nim", Name: "NVIDIA NIM", GPUWorkload: true,
		Source: "NVIDIA NIM for LLMs documentation: Getting Started",
		URL:    "https://docs.nvidia.com/nim/large-language-models/1.8.0/getting-started.html",
		Note: "A NIM splits a model over several GPUs with NCCL; NVIDIA says shared memory is needed \"in " +
			"multi-GPU, non-NVLink cases\".",
		images: []string{"nvcr.io/nim"},
		read:   readNIM,
	},
	{
		ID: "ray", Name: "Ray", Source: "Ray documentation: Installing Ray (Launch Ray in Docker)",
		URL:      "https://docs.ray.io/en/latest/ray-overview/installation.html",
		Note:     "A Ray node keeps its object store in /dev/shm.",
		images:   []string{"rayproject/ray*", "anyscale/ray*"},
		commands: []string{"ray start"},
		read:     readRay,
	},
	{
		ID: "pytorch", Name: "PyTorch", GPUWorkload: true,
		Source: "PyTorch README: Using pre-built images", URL: "https://github.com/pytorch/pytorch#using-pre-built-images",
		Note: "PyTorch passes tensors between processes (DataLoader workers, multiprocessing) through shared memory, " +
			"and its ranks talk through NCCL on GPUs.",
		images: []string{"pytorch/pytorch", "rocm/pytorch*", "bitnami/pytorch", "nvcr.io/nvidia/pytorch"},
		commands: []string{
			"torchrun", "accelerate launch", "deepspeed",
			"-m torch.distributed.run", "-m torch.distributed.launch",
			"-m accelerate.commands.launch", "-m deepspeed.launcher.*",
			"mpirun", "mpiexec", "horovodrun",
		},
		read: readTorch,
	},
	{
		ID: "ngc", Name: "NVIDIA NGC container", GPUWorkload: true,
		Source: "NVIDIA NCCL User Guide: Troubleshooting, Runtime and MPI issues",
		URL:    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
		Note:   "NGC's framework containers run PyTorch, TensorFlow or JAX, whose ranks talk through NCCL.",
		// Only the deep-learning framework images: nvcr.io/nvidia also hosts GPU-operator,
		// device-plugin and DCGM images, which never touch /dev/shm.
		images: []string{
			"nvcr.io/nvidia/tensorflow", "nvcr.io/nvidia/jax", "nvcr.io/nvidia/mxnet",
			"nvcr.io/nvidia/paddlepaddle", "nvcr.io/nvidia/nemo", "nvcr.io/nvidia/tensorrt*",
			"nvcr.io/nvidia/dgl", "nvcr.io/nvidia/pyg", "nvcr.io/nvidia/modulus", "nvcr.io/nvidia/merlin",
			"nvcr.io/nvidia/rapidsai", "nvcr.io/nvidia/cuda-dl-base", "nvcr.io/nvidia/deepstream",
		},
		read: readTorch,
	},
	{
		ID: "chromium", Name: "Chromium", Source: "SeleniumHQ docker-selenium README: Quick start",
		URL: "https://github.com/SeleniumHQ/docker-selenium#quick-start",
		Note: "Chromium kept the buffers its processes share in /dev/shm until it moved them to memfd; " +
			"--disable-dev-shm-usage moves them to /tmp.",
		images: []string{
			// Only the images that run a browser: selenium/hub, router, distributor,
			// node-docker and standalone-docker (which starts browser containers through the
			// Docker socket), video and the other grid parts run none.
			"selenium/node-chrom*", "selenium/node-firefox*", "selenium/node-edge*", "selenium/node-all-browsers",
			"selenium/standalone-chrom*", "selenium/standalone-firefox*", "selenium/standalone-edge*",
			"selenium/standalone-all-browsers", "seleniarm/node-chromium*", "seleniarm/node-firefox*",
			"seleniarm/standalone-chromium*", "seleniarm/standalone-firefox*",
			"browserless/*", "zenika/alpine-chrome", "chromedp/headless-shell",
			"puppeteer", "playwright", "playwright/*",
		},
		commands: []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "playwright test"},
		read:     readChromium,
	},
	{
		ID: "postgres", Name: "PostgreSQL", Source: "PostgreSQL documentation: dynamic_shared_memory_type",
		URL:  "https://www.postgresql.org/docs/current/runtime-config-resource.html#GUC-DYNAMIC-SHARED-MEMORY-TYPE",
		Note: "PostgreSQL keeps dynamic shared memory (parallel query among others) in /dev/shm.",
		// No command patterns: "postgres" is as often a hostname argument of the app that
		// talks to the database as it is the server binary.
		images: []string{
			"postgres", "postgresql", "postgresql-[0-9]*", "pgvector", "postgis",
			"timescaledb", "timescaledb-ha", "crunchy-postgres", "crunchy-postgres-gis",
		},
		read: readPostgres,
	},
	// The GPU servers below run one process that passes nothing through /dev/shm: their
	// vendors start them on Docker's default /dev/shm however many GPUs they are given, so
	// neither their GPUs nor a bare GPU request make them a shared-memory workload.
	{
		ID: "ollama", Name: "Ollama", NoShm: true, Source: "Ollama documentation: Docker", URL: "https://docs.ollama.com/docker",
		Note: "Ollama's instructions start ollama/ollama with --gpus=all and neither --shm-size nor --ipc=host: one " +
			"server process runs the models and splits them across GPUs itself.",
		images:   []string{"ollama"},
		commands: []string{"ollama serve"},
	},
	{
		ID: "tei", Name: "Hugging Face Text Embeddings Inference", NoShm: true,
		Source: "Hugging Face Text Embeddings Inference documentation: Quick Tour",
		URL:    "https://huggingface.co/docs/text-embeddings-inference/quick_tour",
		Note: "The quick tour starts ghcr.io/huggingface/text-embeddings-inference with --gpus all and no " +
			"--shm-size or --ipc=host: one router process serves the model.",
		images:   []string{"text-embeddings-inference"},
		commands: []string{"text-embeddings-router"},
	},
	{
		ID: "milvus", Name: "Milvus", NoShm: true,
		Source: "Milvus documentation: Run Milvus with GPU Support Using Docker Compose",
		URL:    "https://milvus.io/docs/install_standalone-docker-compose-gpu.md",
		Note: "Milvus's own GPU compose file reserves the GPU for milvusdb/milvus:*-gpu and sets no shm_size: the " +
			"GPU indexes run inside the one Milvus process.",
		images: []string{"milvusdb/milvus"},
	},
	{
		ID: "tensorboard", Name: "TensorBoard", NoShm: true, Source: "TensorBoard README", URL: "https://github.com/tensorflow/tensorboard",
		Note: "TensorBoard is a web application that reads the event files of training runs; it computes nothing " +
			"on a GPU and shares no memory between processes.",
		images:   []string{"tensorboard"},
		commands: []string{"tensorboard", "-m tensorboard.main"},
	},
}

// Profiles returns the profile table, in a fixed order (most specific first).
func Profiles() []Profile {
	return slices.Clone(profiles)
}

// ProfileByID returns the profile with that ID, or nil.
func ProfileByID(id string) *Profile {
	for _, p := range profiles {
		if p.ID == id {
			return &p // a copy, so callers cannot edit the table
		}
	}
	return nil
}

func (p *Profile) matchesImage(img ProfileImage) bool {
	if img.Path == "" {
		return false
	}
	for _, pattern := range p.images {
		if img.matches(pattern) {
			return true
		}
	}
	return false
}

func (p *Profile) matchesCommand(words []string) bool {
	for _, pattern := range p.commands {
		want := strings.Fields(pattern)
		for i := 0; i+len(want) <= len(words); i++ {
			if profileWordsMatch(want, words[i:i+len(want)]) {
				return true
			}
		}
	}
	return false
}

func profileWordsMatch(want, words []string) bool {
	for i, w := range want {
		if ok, _ := path.Match(w, words[i]); ok {
			continue
		}
		if ok, _ := path.Match(w, path.Base(words[i])); !ok {
			return false
		}
	}
	return true
}

// ProfileImage is an image reference reduced to what identifies the software in it.
type ProfileImage struct {
	host string // registry host as written, "" when the reference names none
	Path string // repository path below the host, without Docker Hub's "library/"
}

// profileVarDefault finds compose "${VAR:-default}" and "${VAR-default}" so the default can
// stand in for the variable: "${REGISTRY:-docker.io}/postgres:${PG:-16}" is still postgres.
var profileVarDefault = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}`)

func ParseProfileImage(ref string) ProfileImage {
	ref = strings.ToLower(profileVarDefault.ReplaceAllString(strings.TrimSpace(ref), "${1}"))
	if at := strings.IndexByte(ref, '@'); at >= 0 {
		ref = ref[:at]
	}
	// The tag starts at the first colon after the last slash; earlier colons belong to a
	// registry port ("localhost:5000/x"), later ones to a variable inside the tag.
	slash := strings.LastIndexByte(ref, '/')
	if colon := strings.IndexByte(ref[slash+1:], ':'); colon >= 0 {
		ref = ref[:slash+1+colon]
	}
	segs := strings.Split(ref, "/")
	var img ProfileImage
	if len(segs) > 1 && profileRegistryHost(segs[0]) {
		img.host, segs = segs[0], segs[1:]
	}
	if len(segs) > 1 && segs[0] == "library" {
		segs = segs[1:]
	}
	img.Path = strings.Join(segs, "/")
	return img
}

// profileRegistryHost applies Docker's rule for the first path segment, and also takes an
// unexpanded variable ("${REGISTRY}/app") as a host, since that is how compose files use it.
func profileRegistryHost(seg string) bool {
	return seg == "localhost" || strings.ContainsAny(seg, ".:$")
}

func (img ProfileImage) matches(pattern string) bool {
	want := strings.Split(pattern, "/")
	if profileRegistryHost(want[0]) {
		have := append([]string{img.host}, strings.Split(img.Path, "/")...)
		return len(have) >= len(want) && profileSegmentsMatch(want, have[:len(want)])
	}
	have := strings.Split(img.Path, "/")
	return len(have) >= len(want) && profileSegmentsMatch(want, have[len(have)-len(want):])
}

func profileSegmentsMatch(want, have []string) bool {
	for i, w := range want {
		if ok, _ := path.Match(w, have[i]); !ok {
			return false
		}
	}
	return true
}

// profileCommandWords flattens exec and shell forms alike: ["sh", "-c", "torchrun x.py"]
// and ["torchrun", "x.py"] both yield torchrun as a word. Quotes and shell operators stuck
// to a word are dropped so `sh -c "exec torchrun ..."` written as one string still counts.
func profileCommandWords(command []string) []string {
	var words []string
	for _, c := range command {
		for _, f := range strings.Fields(c) {
			if f = strings.Trim(strings.ToLower(f), "\"'`();&|"); f != "" {
				words = append(words, f)
			}
		}
	}
	return words
}
