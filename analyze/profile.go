package analyze

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Profile is a known shared-memory consumer and what it needs from /dev/shm.
type Profile struct {
	ID     string // short kebab id: "pytorch", "vllm", "tgi", "triton", "sglang", "ray", "nim", "ngc", "chromium", "postgres", "gpu"
	Name   string // human name: "PyTorch", "vLLM", ...
	MinShm int64  // recommended minimum /dev/shm in bytes
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

// Signals are the facts about one container that identify its workload.
type Signals struct {
	Image   string   // as written, e.g. "nvcr.io/nvidia/pytorch:24.01-py3", "vllm/vllm-openai:latest", "${REGISTRY}/x" (may be empty)
	Command []string // entrypoint words followed by command words (may be empty)
	GPU     bool     // the container requests a GPU (decided elsewhere)
}

// profiles is ordered most specific first because DetectProfile takes the first match: a
// serving stack started from a PyTorch or NGC image is judged by the stack's needs, and the
// pattern-less "gpu" entry only ever comes from the GPU fallback.
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
			"nvcr.io/nvidia/paddlepaddle", "nvcr.io/nvidia/nemo*", "nvcr.io/nvidia/tensorrt*",
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
			"selenium/node-*", "selenium/standalone-*", "seleniarm/node-*", "seleniarm/standalone-*",
			"browserless/*", "zenika/alpine-chrome", "chromedp/headless-shell",
			"puppeteer*", "playwright*", "playwright/*",
		},
		commands: []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "playwright test"},
	},
	{
		ID:     "postgres",
		Name:   "PostgreSQL",
		MinShm: 128 << 20,
		Source: "Docker Official Images: postgres",
		URL:    "https://hub.docker.com/_/postgres",
		Note: "PostgreSQL allocates dynamic shared memory in /dev/shm (parallel query workers among others) and fails " +
			"with \"could not resize shared memory segment\" when it is full; the image's compose example sets " +
			"shm_size: 128mb.",
		// No command patterns: "postgres" is as often a hostname argument of the app that
		// talks to the database as it is the server binary.
		images: []string{
			"postgres", "postgresql", "postgresql-[0-9]*", "pgvector", "postgis",
			"timescaledb*", "crunchy-postgres*",
		},
	},
	{
		ID:     "gpu",
		Name:   "GPU workload",
		MinShm: 1 << 30,
		Source: "NVIDIA NCCL User Guide: Troubleshooting, Runtime and MPI issues",
		URL:    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
		Note: "No more specific profile matched. NCCL creates its shared memory segments in /dev/shm and fails to " +
			"initialize when they do not fit, and NVIDIA's container guidance is --shm-size=1g --ulimit memlock=-1, " +
			"so 1 GiB is the conservative floor for any GPU service.",
		GPUWorkload: true,
	},
}

// Profiles returns the profile table, in a fixed order (most specific first, "gpu" last).
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

// DetectProfile returns the most specific profile whose image or command patterns match,
// else the generic "gpu" profile when s.GPU, else nil.
func DetectProfile(s Signals) *Profile {
	img := parseProfileImage(s.Image)
	words := profileCommandWords(s.Command)
	for _, p := range profiles {
		if p.matchesImage(img) || p.matchesCommand(words) {
			return &p
		}
	}
	if s.GPU {
		return ProfileByID("gpu")
	}
	return nil
}

func (p *Profile) matchesImage(img profileImage) bool {
	if img.path == "" {
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

// profileImage is an image reference reduced to what identifies the software in it.
type profileImage struct {
	host string // registry host as written, "" when the reference names none
	path string // repository path below the host, without Docker Hub's "library/"
}

// profileVarDefault finds compose "${VAR:-default}" and "${VAR-default}" so the default can
// stand in for the variable: "${REGISTRY:-docker.io}/postgres:${PG:-16}" is still postgres.
var profileVarDefault = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}`)

func parseProfileImage(ref string) profileImage {
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
	var img profileImage
	if len(segs) > 1 && profileRegistryHost(segs[0]) {
		img.host, segs = segs[0], segs[1:]
	}
	if len(segs) > 1 && segs[0] == "library" {
		segs = segs[1:]
	}
	img.path = strings.Join(segs, "/")
	return img
}

// profileRegistryHost applies Docker's rule for the first path segment, and also takes an
// unexpanded variable ("${REGISTRY}/app") as a host, since that is how compose files use it.
func profileRegistryHost(seg string) bool {
	return seg == "localhost" || strings.ContainsAny(seg, ".:$")
}

func (img profileImage) matches(pattern string) bool {
	want := strings.Split(pattern, "/")
	if profileRegistryHost(want[0]) {
		have := append([]string{img.host}, strings.Split(img.path, "/")...)
		return len(have) >= len(want) && profileSegmentsMatch(want, have[:len(want)])
	}
	have := strings.Split(img.path, "/")
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
