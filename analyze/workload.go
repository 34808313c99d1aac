package analyze

import (
	"fmt"
	"strconv"
	"strings"
)

// ReadWorkload recognises a container's program and works out its /dev/shm use from the
// parameters it runs with. The program is read from the image, else the command; where the
// service builds its image, from the Dockerfile's final FROM and its CMD and ENTRYPOINT when
// the service sets none. It returns nil, nil when no known program is recognised.
func ReadWorkload(s Signals) (*Profile, *Use) {
	inv := ParseCommand(s.Command, s.Env, "the command")
	image, from := s.Image, "image "+s.Image
	if b := s.Build; b != nil {
		if len(s.Command) == 0 && len(b.Command) > 0 {
			inv = ParseCommand(b.Command, s.Env, b.CommandAt)
		}
		if b.From != "" && (s.Image == "" || Identify(s.Image, Invocation{}) == nil) {
			image, from = b.From, "FROM "+b.From+" at "+b.FromAt
		}
	}
	p := Identify(image, inv)
	if p == nil && s.GPUs != 0 && dataLoader(inv) {
		p = ProfileByID("pytorch") // DataLoader workers on a GPU: a PyTorch job, whatever its image
	}
	if p == nil {
		return nil, nil
	}
	u := &Use{Workload: p.Name}
	switch {
	case p.matchesImage(ParseProfileImage(image)):
		u.Evidence = append(u.Evidence, from)
	case !inv.Empty():
		u.Evidence = append(u.Evidence, "the program in "+inv.Origin)
	}
	if p.NoShm {
		u.None, u.Why = true, p.Note
		u.Sources = []NeedSource{{p.Source, p.URL}}
		return p, u
	}
	p.read(s, inv, u)
	return p, u
}

// Identify returns the most specific profile whose image or command patterns match.
func Identify(image string, inv Invocation) *Profile {
	img := ParseProfileImage(image)
	words := profileCommandWords(inv.Words)
	for _, p := range profiles {
		if p.matchesImage(img) || p.matchesCommand(words) {
			return &p
		}
	}
	return nil
}

// ranks reads how many processes a command starts from the flags that say it, multiplied
// (tensor × pipeline parallel): the product, where it was read, and whether it is known. A
// flag that is not written has its documented default, 1, unless a shell variable may hold it.
func ranks(inv Invocation, flags ...[]string) (n int, from []string, known bool) {
	n = 1
	for _, names := range flags {
		p := inv.Flag(names...)
		if p.Unknown {
			return 0, nil, false
		}
		if !p.Set {
			continue
		}
		v, ok := p.Int()
		if !ok {
			return 0, nil, false
		}
		n *= max(v, 1)
		from = append(from, p.From+" in "+inv.Origin)
	}
	return n, from, true
}

// oneProcess marks a use that starts one GPU process: nothing passes between ranks.
func oneProcess(u *Use, why string) {
	u.None, u.Why = true, why
}

// unknownRanks marks a use whose rank count is not known.
func unknownRanks(u *Use, what string) {
	u.Unknown = what + " is not written where the doctor can read it (a shell variable or a value it cannot parse); with several ranks NCCL's buffers alone are about 18 MiB a rank"
	u.Sources = []NeedSource{srcNCCL}
}

// collective sets a use of n ranks talking through NCCL, plus extra bytes of the program's
// own (described by what) where it has some.
func collective(u *Use, s Signals, n int, inv Invocation, extra int64, what string, sources ...NeedSource) {
	if n = localRanks(u, s, n); n <= 1 {
		oneProcess(u, "one GPU in this container runs one rank; the others run elsewhere")
		return
	}
	need, formula, ev := ncclUse(n, inv)
	u.Evidence = append(u.Evidence, ev...)
	u.Sources = append(sources, srcNCCL, srcNCCLCode)
	switch {
	case need == 0 && extra == 0:
		u.None, u.Why = true, "NCCL_SHM_DISABLE=1 keeps NCCL out of /dev/shm"
		return
	case need == 0:
		formula = what
	case extra > 0:
		formula += ", plus " + what
	}
	u.Need, u.Formula = need+extra, formula
}

// localRanks is how many of n ranks run in this container: one a GPU, where its GPU count
// is known; the others run in other containers (pipeline stages or a tensor-parallel group
// across nodes), and NCCL reaches them over the network.
func localRanks(u *Use, s Signals, n int) int {
	if s.GPUs > 0 && n > s.GPUs {
		u.Evidence = append(u.Evidence, fmt.Sprintf("%d of the %d ranks here, one a GPU", s.GPUs, n))
		return s.GPUs
	}
	return n
}

var (
	tpFlags = []string{"tensor-parallel-size", "tensor_parallel_size", "tp", "tp-size", "tp_size"}
	ppFlags = []string{"pipeline-parallel-size", "pipeline_parallel_size", "pp", "pp-size", "pp_size"}
)

// vLLM's queues (vllm/distributed/device_communicators/shm_broadcast.py): a ShmRingBuffer
// of max_chunks × (max_chunk_bytes + 1 + readers) bytes. With several ranks in one
// container the executor broadcasts to its workers through one of 10 chunks of
// VLLM_MQ_MAX_CHUNK_BYTES_MB (16) MiB, each worker answers through one of 10 chunks of
// 10 MiB, and the tensor-parallel group broadcasts through 6 chunks of 4 MiB. Python
// creates them as sparse files: the sizes are what vLLM may write, and a page it writes
// beyond a full /dev/shm is a Bus error.
var srcVLLM = NeedSource{"vLLM source: vllm/distributed/device_communicators/shm_broadcast.py and vllm/v1/executor/multiproc_executor.py",
	"https://github.com/vllm-project/vllm/blob/main/vllm/distributed/device_communicators/shm_broadcast.py"}

func vllmQueues(n int, inv Invocation) (int64, string) {
	chunk := int64(16)
	if p := inv.Var("VLLM_MQ_MAX_CHUNK_BYTES_MB"); p.Set {
		if v, ok := p.Int(); ok && v > 0 {
			chunk = int64(v)
		}
	}
	ring := func(chunks, bytes int64, readers int) int64 { return chunks * (bytes + 1 + int64(readers)) }
	total := ring(10, chunk<<20, n) + int64(n)*ring(10, 10<<20, 1) + ring(6, 4<<20, n)
	return total, fmt.Sprintf("vLLM's queues (10 × %d MiB out, 10 × 10 MiB back from each of %d workers, 6 × 4 MiB) = %s", chunk, n, FormatSize(total))
}

func readVLLM(s Signals, inv Invocation, u *Use) {
	tp := tpFlags
	if inv.Runs("-m fastchat.serve.vllm_worker") {
		tp = append(tp, "num-gpus", "num_gpus")
	}
	n, from, known := ranks(inv, tp, ppFlags)
	u.Evidence = append(u.Evidence, from...)
	if inv.Runs("ray start") && len(from) == 0 {
		// A Ray node of a vLLM cluster: the head's engine places one rank on each GPU.
		switch {
		case s.GPUs == AllGPUs:
			unknownRanks(u, "the GPU count (a Ray node of a vLLM cluster runs one rank a GPU, and it is given all of the host's)")
		case s.GPUs > 1:
			u.Evidence = append(u.Evidence, fmt.Sprintf("ray start with %d GPUs, one rank each", s.GPUs))
			collective(u, s, s.GPUs, inv, 0, "", srcVLLM)
		default:
			oneProcess(u, "a Ray node of a vLLM cluster with one GPU runs one rank")
		}
		return
	}
	if nodes, ok := inv.Flag("nnodes").Int(); ok && nodes > 1 && known && n >= nodes {
		n /= nodes
		u.Evidence = append(u.Evidence, fmt.Sprintf("--nnodes %d: %d ranks a node", nodes, n))
	}
	switch {
	case !known:
		unknownRanks(u, "the tensor-parallel size")
	case n <= 1:
		oneProcess(u, "one rank (vLLM's default tensor and pipeline parallel sizes are 1) runs in one process: its engine talks to it over sockets, not /dev/shm")
	default:
		if n = localRanks(u, s, n); n <= 1 {
			oneProcess(u, "one GPU in this container runs one rank; the others run elsewhere")
			return
		}
		q, what := vllmQueues(n, inv)
		collective(u, s, n, inv, q, what, srcVLLM)
	}
}

// SGLang's tensor-parallel group broadcasts through a copy of vLLM's queue: 6 chunks of
// 4 MiB, unless SGLANG_USE_MESSAGE_QUEUE_BROADCASTER is false.
var srcSGLang = NeedSource{"SGLang source: python/sglang/srt/distributed/parallel_state.py",
	"https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/distributed/parallel_state.py"}

func readSGLang(s Signals, inv Invocation, u *Use) {
	n, from, known := ranks(inv, tpFlags, ppFlags)
	u.Evidence = append(u.Evidence, from...)
	if nodes, ok := inv.Flag("nnodes").Int(); ok && nodes > 1 && known && n >= nodes {
		n /= nodes
		u.Evidence = append(u.Evidence, fmt.Sprintf("--nnodes %d: %d ranks a node", nodes, n))
	}
	switch {
	case !known:
		unknownRanks(u, "the tensor-parallel size")
	case n <= 1:
		oneProcess(u, "one rank (SGLang's default --tp-size is 1) runs on one GPU")
	default:
		q, what := int64(6*(4<<20+1+n)), fmt.Sprintf("SGLang's tensor-parallel queue of 6 × 4 MiB = %s", FormatSize(int64(6*(4<<20+1+n))))
		if p := inv.Var("SGLANG_USE_MESSAGE_QUEUE_BROADCASTER"); p.Set && !p.Unknown && !p.Bool() {
			q, what = 0, ""
			u.Evidence = append(u.Evidence, p.From)
		}
		collective(u, s, n, inv, q, what, srcSGLang)
	}
}

// TGI starts one shard per GPU it sees unless --num-shard or NUM_SHARD says otherwise.
func readTGI(s Signals, inv Invocation, u *Use) {
	p := inv.Flag("num-shard", "num_shard")
	if !p.Set {
		if v := inv.Var("NUM_SHARD"); v.Set {
			p = v
		}
	} else {
		p.From += " in " + inv.Origin
	}
	rankPerGPU(u, s, inv, p, "shard", NeedSource{"Hugging Face text-generation-inference README: A note on Shared Memory (shm)",
		"https://github.com/huggingface/text-generation-inference#a-note-on-shared-memory-shm"})
}

// rankPerGPU sets the use of a server that runs p ranks (shards) when p is set, else one a
// GPU it is given: NCCL between them, nothing for one.
func rankPerGPU(u *Use, s Signals, inv Invocation, p Param, rank string, src NeedSource) {
	n, ok := p.Int()
	switch {
	case p.Set && !ok, p.Unknown:
		unknownRanks(u, "the "+rank+" count")
		return
	case p.Set:
		u.Evidence = append(u.Evidence, p.From)
	case s.GPUs == AllGPUs:
		unknownRanks(u, "the "+rank+" count (one "+rank+" a GPU, and the service is given all of the host's)")
		return
	default:
		n = max(s.GPUs, 1)
		u.Evidence = append(u.Evidence, fmt.Sprintf("%d GPU(s) given, one %s each", n, rank))
	}
	if n <= 1 {
		oneProcess(u, "one "+rank+" runs on one GPU, without NCCL")
		return
	}
	collective(u, s, n, inv, 0, "", src)
}

// Triton's Python backend gives each Python model instance a region of
// shm-default-byte-size that grows by shm-growth-byte-size as its requests need: the models
// decide, and the doctor does not read a model repository.
func readTriton(s Signals, inv Invocation, u *Use) {
	u.Unknown = "its Python backend's regions grow with the models and requests it serves, which the compose file does not show"
	u.Sources = []NeedSource{{"Triton Inference Server: Python backend, managing shared memory", "https://github.com/triton-inference-server/python_backend#managing-shared-memory"}}
}

// A NIM for LLMs runs one rank a GPU it is given, or NIM_TENSOR_PARALLEL_SIZE of them.
func readNIM(s Signals, inv Invocation, u *Use) {
	rankPerGPU(u, s, inv, inv.Var("NIM_TENSOR_PARALLEL_SIZE"), "rank", NeedSource{"NVIDIA NIM for LLMs documentation: Getting Started",
		"https://docs.nvidia.com/nim/large-language-models/1.8.0/getting-started.html"})
}

var srcRay = NeedSource{"Ray source: python/ray/_private/services.py (determine_plasma_store_config) and ray_constants.py",
	"https://github.com/ray-project/ray/blob/master/python/ray/_private/services.py"}

// A Ray node (ray start, or a process told where the head is) keeps its object store in
// /dev/shm when it fits, and otherwise in /tmp, slower (Ray warns and goes on; above 10 GB
// it refuses to start unless RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE is set). The store is
// --object-store-memory, else 30% of the memory Ray sees, capped at 200 GB and at 95% of
// /dev/shm (not below 10 GB): Ray asks for 1.1 × the store.
func readRay(s Signals, inv Invocation, u *Use) {
	node := inv.Runs("ray start")
	for _, v := range []string{"RAY_ADDRESS", "RAY_HEAD_ADDRESS", "RAY_HEAD_SERVICE_HOST"} {
		if p := inv.Var(v); p.Set && !node {
			node = true
			u.Evidence = append(u.Evidence, v+" in the environment")
		}
	}
	if !node && !inv.Empty() {
		oneProcess(u, "no ray start in the command: the container is no Ray node (a driver or a job submitter keeps no object store)")
		return
	}
	u.Failure, u.Sources = Slows, []NeedSource{srcRay}
	if p := inv.Flag("object-store-memory"); p.Set {
		if n, ok := p.Int(); ok && n > 0 {
			u.Evidence = append(u.Evidence, p.From+" in "+inv.Origin)
			u.Need = int64(float64(n) * 1.1)
			u.Formula = fmt.Sprintf("an object store of %s, and Ray asks for 1.1 × the store; below that it keeps the store in /tmp, slower", FormatSize(int64(n)))
			if n > 10_000_000_000 && !inv.Var("RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE").Set {
				u.Failure = Crashes
				u.Formula = fmt.Sprintf("an object store of %s, and Ray asks for 1.1 × the store; above 10 GB Ray refuses to start on a smaller /dev/shm unless RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE is set", FormatSize(int64(n)))
			}
			return
		}
	}
	if s.MemLimit > 0 {
		store := min(int64(float64(s.MemLimit)*0.3), 200_000_000_000)
		u.Need = int64(float64(store) * 1.1)
		u.Evidence = append(u.Evidence, "the memory limit "+FormatSize(s.MemLimit))
		u.Formula = fmt.Sprintf("Ray's default object store is 30%% of the memory it sees (%s of %s), and it asks for 1.1 × the store; below that it keeps the store in /tmp, slower", FormatSize(store), FormatSize(s.MemLimit))
		return
	}
	u.Unknown = "its object store is 30% of the memory Ray sees, and no --object-store-memory or memory limit says how much that is; on a smaller /dev/shm Ray keeps the store in /tmp, slower"
}

// DeepSpeed's CPU allreduce between the ranks of one machine writes a workspace of 2 × 1 MiB
// + 2 × 32 MiB a rank into /dev/shm (csrc/cpu/comm/shm.cpp), whole.
var srcDeepSpeed = NeedSource{"DeepSpeed source: csrc/cpu/comm/shm.cpp", "https://github.com/deepspeedai/DeepSpeed/blob/master/csrc/cpu/comm/shm.cpp"}

const deepspeedWorkspace = 2<<20 + 64<<20

var srcTorchrun = NeedSource{"PyTorch documentation: torchrun (Elastic Launch)", "https://docs.pytorch.org/docs/stable/elastic/run.html"}

// readTorch reads a launcher's local process count: torchrun's --nproc-per-node (1 by
// default; gpu and cuda are one a GPU; PET_NPROC_PER_NODE in the environment, as the
// Kubeflow training operator sets it), accelerate's --num_processes, deepspeed's --num_gpus
// (every GPU it sees by default), mpirun's -np. Several ranks on GPUs talk through NCCL;
// on CPUs through gloo's sockets. DataLoader workers are read where a flag names them.
func readTorch(s Signals, inv Invocation, u *Use) {
	n, known, from := 1, true, ""
	launcher := true
	read := func(p Param, dflt int) {
		switch {
		case p.Unknown:
			known = false
		case !p.Set:
			n = dflt
		case p.Value == "gpu" || p.Value == "cuda" || p.Value == "auto":
			if s.GPUs == AllGPUs || s.GPUs == 0 && p.Value == "auto" {
				known = false
			} else {
				n, from = max(s.GPUs, 1), p.From+" in "+inv.Origin+fmt.Sprintf(" (%d GPU(s))", max(s.GPUs, 1))
			}
		default:
			v, ok := p.Int()
			if !ok {
				known = false
			}
			n, from = v, p.From+" in "+inv.Origin
		}
	}
	switch {
	case inv.Runs("torchrun"), inv.Runs("-m torch.distributed.run"), inv.Runs("-m torch.distributed.launch"):
		p := inv.Flag("nproc-per-node", "nproc_per_node")
		if !p.Set && !p.Unknown {
			if v := inv.Var("PET_NPROC_PER_NODE"); v.Set {
				p = v
				p.From = strings.TrimSuffix(p.From, " in the environment")
				inv.Origin = "the environment"
			}
		}
		read(p, 1)
	case inv.Runs("accelerate launch"), inv.Runs("-m accelerate.commands.launch"):
		p := inv.Flag("num_processes", "num-processes")
		if !p.Set {
			known = false // accelerate's config file decides
		} else {
			read(p, 1)
		}
	case inv.Runs("deepspeed"), inv.Runs("-m deepspeed.launcher.*"):
		p := inv.Flag("num_gpus", "num-gpus")
		if !p.Set && !p.Unknown {
			if s.GPUs == AllGPUs {
				known = false
			} else {
				n, from = max(s.GPUs, 1), fmt.Sprintf("%d GPU(s) given, one rank each (deepspeed's default)", max(s.GPUs, 1))
			}
		} else {
			read(p, 1)
		}
	case inv.Runs("mpirun"), inv.Runs("mpiexec"), inv.Runs("horovodrun"):
		p := inv.Flag("np", "n")
		if !p.Set {
			known = false
		} else {
			read(p, 1)
		}
	default:
		launcher = false
	}
	if from != "" {
		u.Evidence = append(u.Evidence, from)
	}
	workers := inv.Flag(workerFlags...)
	loader := dataLoader(inv)
	if w, ok := workers.Int(); loader && ok && w == 0 {
		loader = false
		u.Evidence = append(u.Evidence, workers.From+" in "+inv.Origin)
	}
	switch {
	case launcher && !known:
		if s.GPUs == 0 {
			oneProcess(u, "no GPU is requested: its ranks talk through gloo's sockets, not /dev/shm")
			return
		}
		unknownRanks(u, "the number of processes a node")
	case launcher && n > 1 && s.GPUs != 0:
		collective(u, s, n, inv, 0, "", srcTorchrun)
		if loader {
			u.Formula += ", plus the DataLoader workers' batches, which the command does not size"
		}
	case loader:
		u.Evidence = append(u.Evidence, workers.From+" in "+inv.Origin)
		u.Unknown = "DataLoader workers pass their batches through /dev/shm, (workers × prefetch_factor + 2.5) batches at the peak, and the batch size is not written (x-shmdoctor.dataloader with batch_bytes gives it)"
		u.Sources = []NeedSource{{"the project's truth lab: docs/lab.md", "https://github.com/shmdoctor/shmdoctor/blob/main/docs/lab.md"}}
	case launcher && n > 1 && (inv.Runs("deepspeed") || inv.Runs("-m deepspeed.launcher.*")):
		u.Need = int64(n) * deepspeedWorkspace
		u.Formula = fmt.Sprintf("DeepSpeed's CPU allreduce writes a workspace of 2 × 1 MiB + 2 × 32 MiB for each of %d ranks = %s", n, FormatSize(u.Need))
		u.Sources = []NeedSource{srcDeepSpeed}
	case launcher && n > 1:
		oneProcess(u, fmt.Sprintf("%d ranks with no GPU talk through gloo's sockets, not /dev/shm", n))
	case launcher:
		oneProcess(u, "one process on one device: nothing passes between processes")
	default:
		oneProcess(u, "no launcher, DataLoader workers or ranks are written in its command: nothing known passes between processes")
	}
}

// workerFlags set the PyTorch DataLoader workers of a training or inference script.
var workerFlags = []string{"num_workers", "num-workers", "workers", "dataloader_num_workers", "dataloader-num-workers"}

// dataLoader reports whether a command sets DataLoader workers: a workers flag, unless a web
// server's (uvicorn, gunicorn, celery: their --workers are processes serving requests).
func dataLoader(inv Invocation) bool {
	for _, server := range []string{"uvicorn", "gunicorn", "hypercorn", "granian", "daphne", "celery"} {
		if inv.Runs(server) {
			return false
		}
	}
	return inv.Flag(workerFlags...).Set
}

// PostgreSQL keeps dynamic shared memory in /dev/shm (dynamic_shared_memory_type posix,
// Linux's default): parallel query's tuple queues and shared state, and a parallel hash
// join's shared table, which grows with the inner table up to work_mem × hash_mem_multiplier
// × (workers + 1) before it spills in batches. The rows decide: no setting alone gives the
// size. It preallocates, so a full /dev/shm fails the query with "could not resize shared
// memory segment … No space left on device"; the server goes on.
var srcPostgres = NeedSource{"PostgreSQL source: src/backend/storage/ipc/dsm_impl.c and src/backend/executor/nodeHash.c",
	"https://github.com/postgres/postgres/blob/master/src/backend/storage/ipc/dsm_impl.c"}

func readPostgres(s Signals, inv Invocation, u *Use) {
	setting := func(name string) Param {
		for i, w := range inv.Words {
			v := ""
			switch {
			case w == "-c" && i+1 < len(inv.Words):
				v = inv.Words[i+1]
			case strings.HasPrefix(w, "--"+name+"="), strings.HasPrefix(w, "-c"+name+"="):
				v = strings.TrimLeft(w, "-c")
			default:
				continue
			}
			if k, val, ok := strings.Cut(v, "="); ok && strings.ReplaceAll(k, "-", "_") == name {
				return Param{Value: val, From: "-c " + v + " in " + inv.Origin, Set: true, Unknown: strings.Contains(val, "$")}
			}
		}
		return Param{}
	}
	u.Sources = []NeedSource{srcPostgres}
	if p := setting("dynamic_shared_memory_type"); p.Set && !p.Unknown && p.Value != "posix" {
		u.Evidence = append(u.Evidence, p.From)
		oneProcess(u, "dynamic_shared_memory_type "+p.Value+" keeps its dynamic shared memory out of /dev/shm")
		return
	}
	gather := setting("max_parallel_workers_per_gather")
	workers, ok := gather.Int()
	if !gather.Set {
		workers, ok = 2, true
	} else {
		u.Evidence = append(u.Evidence, gather.From)
	}
	if ok && workers == 0 {
		u.Unknown = ""
		oneProcess(u, "max_parallel_workers_per_gather 0 runs no parallel query: its dynamic shared memory stays small")
		return
	}
	work := "work_mem (4 MB by default)"
	if p := setting("work_mem"); p.Set {
		u.Evidence = append(u.Evidence, p.From)
		work = "work_mem " + p.Value
	}
	per := "2 workers a gather by default"
	if gather.Set {
		per = strconv.Itoa(workers) + " workers a gather"
		if !ok {
			per = "parallel workers a gather"
		}
	}
	u.Unknown = fmt.Sprintf("parallel queries (%s) keep their shared state in it, and a parallel hash join's table grows with its inner table up to %s × hash_mem_multiplier × (workers + 1) before it spills: the data decides", per, work)
}

// Chromium keeps its shared memory regions in files of /dev/shm, unlinked and preallocated,
// up to version 150 at least, and in memfd ("memfd:shared-memory-region") from version 156
// on at the latest: Debian's Chromium 150 filled /dev/shm on a canvas page (a peak of 520
// MiB; it hung at 64 MiB), Debian's Chromium 156 left it at 0 bytes on the same page, at 64m
// and at 1g. The change came with CreateAnonymousRegion, behind no feature flag; its
// milestone between the two is not pinned, so 151 to 155 are not known.
const (
	chromiumLastDevShm = 150
	chromiumMemfd      = 156
)

var srcChromium = NeedSource{"Chromium source: base/memory/platform_shared_memory_region_posix.cc and base/base_switches.cc",
	"https://source.chromium.org/chromium/chromium/src/+/main:base/memory/platform_shared_memory_region_posix.cc"}

// readChromium reads --disable-dev-shm-usage (Chromium then keeps its shared memory in
// /tmp), a Firefox image (Firefox keeps its IPC shared memory in memfd), and Chromium's major
// version where the image's tag shows it.
func readChromium(s Signals, inv Invocation, u *Use) {
	u.Sources = []NeedSource{srcChromium}
	if p := inv.Flag("disable-dev-shm-usage"); p.Set {
		u.Evidence = append(u.Evidence, p.From+" in "+inv.Origin)
		oneProcess(u, "--disable-dev-shm-usage keeps Chromium's shared memory in /tmp")
		return
	}
	img := ParseProfileImage(s.Image)
	if strings.Contains(img.Path, "firefox") {
		oneProcess(u, "Firefox keeps its IPC shared memory in memfd on Linux, not in /dev/shm")
		u.Workload = "Firefox"
		return
	}
	u.Workload = "Chromium"
	version := browserVersion(s.Image)
	if version > 0 {
		u.Evidence = append(u.Evidence, fmt.Sprintf("Chromium %d in the image's tag", version))
	}
	switch {
	case version >= chromiumMemfd:
		oneProcess(u, fmt.Sprintf("Chromium %d and later keep their shared memory in memfd, not in /dev/shm", chromiumMemfd))
	case version > 0 && version <= chromiumLastDevShm:
		u.Unknown = "Chromium up to 150 keeps the buffers its processes share in /dev/shm, preallocated, and the pages it renders decide how much (a canvas page held 520 MiB); a full /dev/shm crashes the tab or hangs the page"
	default:
		u.Unknown = fmt.Sprintf("Chromium up to %d keeps its shared memory in /dev/shm and %d on keeps it in memfd, and the image does not show which this is; how much depends on the pages it renders", chromiumLastDevShm, chromiumMemfd)
	}
}

// browserVersion is the browser's major version in an image's tag ("124.0", "124.0.6367.60",
// "124.0-chromedriver-124.0-grid-4.21.0-20240517"), 0 when the tag shows none: a tag that
// starts with a number below 60 is a Selenium or image release, not a browser's.
func browserVersion(ref string) int {
	ref = strings.TrimSpace(ref)
	if at := strings.IndexByte(ref, '@'); at >= 0 {
		ref = ref[:at]
	}
	slash := strings.LastIndexByte(ref, '/')
	colon := strings.IndexByte(ref[slash+1:], ':')
	if colon < 0 {
		return 0
	}
	tag := ref[slash+1+colon+1:]
	end := strings.IndexFunc(tag, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(tag)
	}
	n, err := strconv.Atoi(tag[:end])
	if err != nil || n < 60 || n > 999 {
		return 0
	}
	return n
}
