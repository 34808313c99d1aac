package rules

import (
	"strconv"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// NVIDIA's recommended ulimits for GPU containers.
const (
	recommendedStack int64 = 67108864
)

var shm030 = analyze.Rule{
	ID:       "SHM030",
	Name:     "gpu-ulimits",
	Severity: analyze.Info,
	Title:    "gpu service without the ulimits nvidia recommends",
	Doc: analyze.Doc{
		Rationale: "NVIDIA's containers print \"The SHMEM allocation limit is set to the default of 64MB\" and " +
			"recommend `--ulimit memlock=-1 --ulimit stack=67108864` next to a larger /dev/shm: NCCL and " +
			"CUDA pin host memory, which the default memlock limit caps.",
		Problematic: "services:\n  trainer:\n    image: nvcr.io/nvidia/pytorch:24.01-py3\n    shm_size: 2g\n",
		Correct:     "services:\n  trainer:\n    image: nvcr.io/nvidia/pytorch:24.01-py3\n    shm_size: 2g\n    ulimits:\n      memlock: -1\n      stack: 67108864\n",
		Exceptions: "A service that requests no GPU is not judged, whatever its image: a GPU image without `gpus`, a " +
			"device reservation or `runtime: nvidia` runs on the CPU, and so does a request of `count: 0` or " +
			"`NVIDIA_VISIBLE_DEVICES=void`. AMD ROCm services (`/dev/kfd`, `rocm/` images) are " +
			"not judged: these ulimits are NVIDIA's advice, and ROCm's Docker guide asks for no ulimits (only " +
			"`--device /dev/kfd --device /dev/dri` and, optionally, `--security-opt seccomp=unconfined`).",
		Sources: []string{
			"NVIDIA NCCL User Guide, troubleshooting (--shm-size=1g --ulimit memlock=-1): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
			"NVIDIA Triton/TensorRT Inference Server, running the server (--ulimit memlock=-1 --ulimit stack=67108864): https://docs.nvidia.com/deeplearning/sdk/inference-server-archived/tensorrt_inference_server_180/inference-release-notes/running.html",
			"AMD ROCm documentation, Running ROCm Docker containers (--device /dev/kfd --device /dev/dri, no ulimits): https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html",
		},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if !plan.GPU || plan.GPUVendor == analyze.VendorAMD {
			return
		}
		var missing []string
		var entries []analyze.KeyValue
		if plan.Memlock == nil || plan.Memlock.Soft != -1 {
			missing = append(missing, "memlock: -1")
			entries = append(entries, analyze.KeyValue{Key: "memlock", Value: "-1"})
		}
		if plan.Stack == nil || plan.Stack.Soft != -1 && plan.Stack.Soft < recommendedStack {
			missing = append(missing, "stack: 67108864")
			entries = append(entries, analyze.KeyValue{Key: "stack", Value: strconv.FormatInt(recommendedStack, 10)})
		}
		if len(missing) == 0 {
			return
		}
		f := analyze.Finding{
			Message:     "gpu service without the ulimits nvidia recommends: " + strings.Join(missing, ", "),
			Remediation: "Add ulimits: {" + strings.Join(missing, ", ") + "} to the service.",
		}
		f.Attach(fixUlimits(p, entries))
		p.Report(f)
	},
}
