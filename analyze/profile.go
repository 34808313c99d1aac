package analyze

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Profile is a known shared-memory consumer and what it needs from /dev/shm.
type Profile struct {
	ID   string // short kebab id: "pytorch", "vllm", "tgi", "triton", "sglang", "ray", "nim", "ngc", "chromium", "postgres", "multi-gpu", "ollama", ...
	Name string // human name: "PyTorch", "vLLM", ...
	// MinShm is the recommended minimum /dev/shm in bytes. 0 marks a GPU server whose vendor
	// runs it on Docker's default /dev/shm: it is no shared-memory workload, and its GPUs are
	// no evidence of one.
	MinShm int64
	Source string // the publication: "vLLM documentation: Using Docker"
	URL    string // the public page that states it
	Note   string // one or two sentences: what the source says, lowercase start not required
	// GPUWorkload is true when the consumer is a GPU/PyTorch-style workload that also wants
	// NVIDIA's memlock=-1 and stack=67108864 ulimits.
	GPUWorkload bool

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
}

// AllGPUs is the GPU count of a request for every GPU of the host (count: all, gpus: all).
const AllGPUs = -1

// Signals are the facts about one container that identify its workload.
type Signals struct {
	Image   string   // as written, e.g. "nvcr.io/nvidia/pytorch:24.01-py3", "vllm/vllm-openai:latest", "${REGISTRY}/x" (may be empty)
	Command []string // entrypoint words followed by command words (may be empty)
	// GPUs is the number of GPUs the container requests (decided elsewhere): 0 for none,
	// AllGPUs for all of them, 1 when a GPU is requested without a count that says more.
	GPUs int
	// Replicas is the number of pods of a distributed training job (PyTorchJob, MPIJob), 0
	// when the container is not part of one.
	Replicas int
}

// profiles is ordered most specific first because DetectProfile takes the first match: a
// serving stack started from a PyTorch or NGC image is judged by the stack's needs, and the
// pattern-less "multi-gpu" entry only ever comes from the evidence of several GPUs.
var profiles = []Profile{
	{
		ID:     "vllm",
		Name:   "vLLM",
		MinShm: 2 << 30,
		Source: "vLLM documentation: Using Docker",
		URL:    "https://docs.vllm.ai/en/stable/deployment/docker/",
		Note: "vLLM says to run its image with --ipc=host or --shm-size because it uses PyTorch, which shares data " +
			"between processes through shared memory, particularly for tensor parallel inference. The page names no size; " +
			"2 GiB is the memory-backed /dev/shm volume (sizeLimit 2Gi) in vLLM's own Kubernetes guide.",
		GPUWorkload: true,
		images:      []string{"vllm/vllm-*", "vllm-openai*", "rocm/vllm*", "nvcr.io/nvidia/vllm"},
		commands:    []string{"vllm serve", "-m vllm.entrypoints.*"},
	},
	{
		ID:     "sglang",
		Name:   "SGLang",
		MinShm: 32 << 30,
		Source: "SGLang documentation: Installation (Docker)",
		URL:    "https://docs.sglang.io/docs/get-started/install",
		Note: "SGLang's Docker instructions start lmsysorg/sglang with --shm-size 32g and --ipc=host, and its " +
			"docker/compose.yaml also sets the memlock=-1 and stack=67108864 ulimits.",
		GPUWorkload: true,
		images:      []string{"sglang"},
		commands:    []string{"sglang serve", "-m sglang.launch_server"},
	},
	{
		ID:     "tgi",
		Name:   "Hugging Face TGI",
		MinShm: 1 << 30,
		Source: "Hugging Face text-generation-inference README: A note on Shared Memory (shm)",
		URL:    "https://github.com/huggingface/text-generation-inference#a-note-on-shared-memory-shm",
		Note: "TGI shards models with NCCL, which may fall back to host shared memory when NVLink or PCI peer-to-peer " +
			"is not possible; the README adds --shm-size 1g (or a 1Gi memory emptyDir on /dev/shm in Kubernetes) " +
			"\"to allow the container to use 1G of Shared Memory\".",
		GPUWorkload: true,
		images:      []string{"text-generation-inference", "huggingface/tgi-*", "huggingface-pytorch-tgi-inference"},
		commands:    []string{"text-generation-launcher"},
	},
	{
		ID:     "triton",
		Name:   "NVIDIA Triton Inference Server",
		MinShm: 1 << 30,
		Source: "NVIDIA TensorRT Inference Server (now Triton) release notes: Running the TensorRT inference server",
		URL:    "https://docs.nvidia.com/deeplearning/sdk/inference-server-archived/tensorrt_inference_server_180/inference-release-notes/running.html",
		Note: "NVIDIA launches the server with --shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 and says " +
			"\"for --shm-size the minimum recommended size is 1g but larger sizes may be necessary depending on the " +
			"number and size of models being served\".",
		GPUWorkload: true,
		images:      []string{"tritonserver"},
		commands:    []string{"tritonserver"},
	},
	{
		ID:     "nim",
		Name:   "NVIDIA NIM",
		MinShm: 16 << 30,
		Source: "NVIDIA NIM for LLMs documentation: Getting Started",
		URL:    "https://docs.nvidia.com/nim/large-language-models/1.8.0/getting-started.html",
		Note: "NIM's memory guidance lists \"16 GB of shared memory is required by docker in multi-GPU, non-NVLink " +
			"cases\", and its docker run examples pass --shm-size=16GB.",
		GPUWorkload: true,
		images:      []string{"nvcr.io/nim"},
	},
	{
		ID:     "ray",
		Name:   "Ray",
		MinShm: 2 << 30,
		Source: "Ray documentation: Installing Ray (Launch Ray in Docker)",
		URL:    "https://docs.ray.io/en/latest/ray-overview/installation.html",
		Note: "Ray keeps each node's object store in shared memory and suggests --shm-size of \"roughly 30% of your " +
			"available memory\" (examples: 512M or 2G). Host RAM is unknown to a static check, so the larger example, " +
			"2 GiB, is the floor; size real clusters to 30% of node memory.",
		images:   []string{"rayproject/ray*", "anyscale/ray*"},
		commands: []string{"ray start"},
	},
	{
		ID:     "pytorch",
		Name:   "PyTorch",
		MinShm: 1 << 30,
		Source: "PyTorch README: Using pre-built images",
		URL:    "https://github.com/pytorch/pytorch#using-pre-built-images",
		Note: "PyTorch shares data between processes through shared memory, so with torch multiprocessing (e.g. " +
			"DataLoader workers) \"the default shared memory segment size that container runs with is not enough\". " +
			"The README names no size; 1 GiB follows NVIDIA's --shm-size=1g for its PyTorch containers, and many " +
			"workers or large batches need more.",
		GPUWorkload: true,
		images:      []string{"pytorch/pytorch", "rocm/pytorch*", "bitnami/pytorch", "nvcr.io/nvidia/pytorch"},
		commands: []string{
			"torchrun", "accelerate launch", "deepspeed",
			"-m torch.distributed.run", "-m torch.distributed.launch",
			"-m accelerate.commands.launch", "-m deepspeed.launcher.*",
		},
	},
	{
		ID:     "ngc",
		Name:   "NVIDIA NGC container",
		MinShm: 1 << 30,
		Source: "NVIDIA NCCL User Guide: Troubleshooting, Runtime and MPI issues",
		URL:    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
		Note: "NVIDIA advises --shm-size=1g --ulimit memlock=-1 because \"Docker containers default to limited shared " +
			"and pinned memory resources\", and NGC framework containers warn at start-up that the 64MB default " +
			"\"may be insufficient\", recommending --ulimit memlock=-1 --ulimit stack=67108864.",
		GPUWorkload: true,
		// Only the deep-learning framework images: nvcr.io/nvidia also hosts GPU-operator,
		// device-plugin and DCGM images, which never touch /dev/shm.
		images: []string{
			"nvcr.io/nvidia/tensorflow", "nvcr.io/nvidia/jax", "nvcr.io/nvidia/mxnet",
			"nvcr.io/nvidia/paddlepaddle", "nvcr.io/nvidia/nemo", "nvcr.io/nvidia/tensorrt*",
			"nvcr.io/nvidia/dgl", "nvcr.io/nvidia/pyg", "nvcr.io/nvidia/modulus", "nvcr.io/nvidia/merlin",
			"nvcr.io/nvidia/rapidsai", "nvcr.io/nvidia/cuda-dl-base", "nvcr.io/nvidia/deepstream",
		},
	},
	{
		ID:     "chromium",
		Name:   "Chromium / Selenium browser",
		MinShm: 2 << 30,
		Source: "SeleniumHQ docker-selenium README: Quick start",
		URL:    "https://github.com/SeleniumHQ/docker-selenium#quick-start",
		Note: "\"When executing docker run for an image that contains a browser please use the flag --shm-size=2g to " +
			"use the host's shared memory\"; Chromium keeps renderer buffers in /dev/shm and crashes tabs when it fills.",
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
	},
	{
		ID:     "postgres",
		Name:   "PostgreSQL",
		MinShm: 256 << 20,
		Source: "Docker Official Images: postgres",
		URL:    "https://hub.docker.com/_/postgres",
		Note: "PostgreSQL allocates dynamic shared memory in /dev/shm (parallel query workers among others) and fails " +
			"with \"could not resize shared memory segment\" when it is full; the image's compose example sets " +
			"shm_size: 128mb. The truth lab (docs/lab.md) ran Debian's PostgreSQL 15.20: a parallel hash join of two " +
			"3-million-row tables (4 workers per gather, work_mem 256MB) peaked at 156.6 MiB and failed at 128m, " +
			"2 million rows peaked at 108.6 MiB; the shared hash table grows by about 52 MiB per million rows, so " +
			"256 MiB is the floor and larger joins need a declared need.",
		// No command patterns: "postgres" is as often a hostname argument of the app that
		// talks to the database as it is the server binary.
		images: []string{
			"postgres", "postgresql", "postgresql-[0-9]*", "pgvector", "postgis",
			"timescaledb", "timescaledb-ha", "crunchy-postgres", "crunchy-postgres-gis",
		},
	},
	// The GPU servers below run one process that passes nothing through /dev/shm: their
	// vendors start them on Docker's default /dev/shm however many GPUs they are given, so
	// neither their GPUs nor a bare GPU request make them a shared-memory workload.
	{
		ID:     "ollama",
		Name:   "Ollama",
		Source: "Ollama documentation: Docker",
		URL:    "https://docs.ollama.com/docker",
		Note: "Ollama's instructions start ollama/ollama with --gpus=all (NVIDIA) and ollama/ollama:rocm with " +
			"--device /dev/kfd --device /dev/dri (AMD), and neither with --shm-size nor --ipc=host: one server " +
			"process runs the models and splits them across GPUs itself.",
		images:   []string{"ollama"},
		commands: []string{"ollama serve"},
	},
	{
		ID:     "tei",
		Name:   "Hugging Face Text Embeddings Inference",
		Source: "Hugging Face Text Embeddings Inference documentation: Quick Tour",
		URL:    "https://huggingface.co/docs/text-embeddings-inference/quick_tour",
		Note: "The quick tour starts ghcr.io/huggingface/text-embeddings-inference with --gpus all and no " +
			"--shm-size or --ipc=host: one router process serves the model.",
		images:   []string{"text-embeddings-inference"},
		commands: []string{"text-embeddings-router"},
	},
	{
		ID:     "milvus",
		Name:   "Milvus",
		Source: "Milvus documentation: Run Milvus with GPU Support Using Docker Compose",
		URL:    "https://milvus.io/docs/install_standalone-docker-compose-gpu.md",
		Note: "Milvus's own GPU compose file (milvus-standalone-docker-compose-gpu.yml) reserves the GPU for " +
			"milvusdb/milvus:*-gpu and sets no shm_size: the GPU indexes run inside the one Milvus process.",
		images: []string{"milvusdb/milvus"},
	},
	{
		ID:     "tensorboard",
		Name:   "TensorBoard",
		Source: "TensorBoard README",
		URL:    "https://github.com/tensorflow/tensorboard",
		Note: "TensorBoard is a web application that reads the event files of training runs; it computes nothing " +
			"on a GPU and shares no memory between processes, so a GPU reservation on it changes nothing.",
		images:   []string{"tensorboard"},
		commands: []string{"tensorboard", "-m tensorboard.main"},
	},
	{
		ID:     "multi-gpu",
		Name:   "NCCL across several GPUs",
		MinShm: 1 << 30,
		Source: "NVIDIA NCCL User Guide: Troubleshooting, Runtime and MPI issues",
		URL:    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
		Note: "NCCL keeps the buffers of GPUs that talk through host memory in /dev/shm and fails to initialize when " +
			"they do not fit, and NVIDIA's container guidance is --shm-size=1g --ulimit memlock=-1. The evidence is " +
			"several GPUs in one container (a count above 1 or all, device IDs, nvidia.com/gpu above 1), several " +
			"GPU processes stated in the command (--tensor-parallel-size, --nproc_per_node, --num-shard above 1), " +
			"a PyTorchJob or MPIJob of several replicas on GPUs, or an MPI launcher (mpirun, mpiexec, horovodrun) on a GPU. " +
			"One GPU alone is no evidence.",
		GPUWorkload: true,
	},
}

// Profiles returns the profile table, in a fixed order (most specific first, "multi-gpu" last).
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

// DetectProfile returns the most specific profile whose image or command patterns match.
// Without one, it reads the evidence a GPU service states plainly: several GPUs or GPU
// processes ("multi-gpu"), or DataLoader workers on a GPU ("pytorch"). A GPU alone is no
// evidence: the result is nil.
func DetectProfile(s Signals) *Profile {
	img := ParseProfileImage(s.Image)
	words := profileCommandWords(s.Command)
	for _, p := range profiles {
		if p.matchesImage(img) || p.matchesCommand(words) {
			return &p
		}
	}
	gpu := s.GPUs != 0
	switch {
	case s.GPUs > 1 || s.GPUs == AllGPUs, flagValue(words, parallelFlags) > 1,
		gpu && (s.Replicas > 1 || mpiLaunchers.matchesCommand(words)):
		return ProfileByID("multi-gpu")
	case gpu && flagValue(words, workerFlags) > 0 && !slices.ContainsFunc(words, isWebServer):
		return ProfileByID("pytorch")
	}
	return nil
}

// mpiLaunchers start one process per GPU. They are evidence on a GPU only: an MPIJob's
// launcher pod runs mpirun without one, and its workers do the work.
var mpiLaunchers = Profile{commands: []string{"mpirun", "mpiexec", "horovodrun"}}

// parallelFlags state how many GPU processes a command starts: vLLM, SGLang and FastChat
// tensor and pipeline parallelism, torchrun and accelerate processes, DeepSpeed and Ray
// Serve GPUs, TGI shards.
var parallelFlags = []string{
	"tensor-parallel-size", "tensor_parallel_size", "pipeline-parallel-size", "pipeline_parallel_size",
	"tp-size", "tp_size", "nproc_per_node", "nproc-per-node", "num_processes", "num-processes",
	"num_gpus", "num-gpus", "num-shard", "num_shard",
}

// workerFlags set the PyTorch DataLoader workers of a training or inference script.
var workerFlags = []string{"workers", "num_workers", "num-workers", "dataloader_num_workers", "dataloader-num-workers"}

// isWebServer tells the servers whose --workers are web workers, not DataLoader workers.
func isWebServer(word string) bool {
	switch path.Base(word) {
	case "uvicorn", "gunicorn", "hypercorn", "granian", "daphne", "celery":
		return true
	}
	return false
}

// flagValue returns the largest whole number given to any of the flags, as "--flag N" or
// "--flag=N", and 0 when none is.
func flagValue(words, flags []string) int {
	best := 0
	for i, w := range words {
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "--") || !slices.Contains(flags, name) {
			continue
		}
		if !hasValue && i+1 < len(words) {
			value = words[i+1]
		}
		if n, err := strconv.Atoi(value); err == nil && n > best {
			best = n
		}
	}
	return best
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
