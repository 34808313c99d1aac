package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm015 = analyze.Rule{
	ID:       "SHM015",
	Name:     "gpu-without-shm-evidence",
	Severity: analyze.Info,
	Title:    "gpu service with no sign of a shared-memory workload",
	Doc: analyze.Doc{
		Rationale: "A GPU alone does not use /dev/shm: single-process servers (Ollama, TensorBoard, Milvus, Text Embeddings " +
			"Inference) run on Docker's 64 MiB default with one GPU. What needs more is " +
			"what runs on it: PyTorch DataLoader workers, several GPU processes talking through NCCL, or a " +
			"serving stack whose vendor asks for `--shm-size` (vLLM, SGLang, TGI, Triton, NIM). When none of " +
			"these shows in the image, the command, the GPU count or `x-shmdoctor`, the doctor says so once, " +
			"as information, and names what would make it matter.",
		Problematic: "services:\n  app:\n    image: myorg/detector:1.0\n    gpus: 1\n",
		Correct: "services:\n  app:\n    image: myorg/detector:1.0\n    gpus: 1\n    shm_size: 1g\n" +
			"    x-shmdoctor:\n      dataloader: {workers: 4, batch_bytes: 64MiB}\n",
		Exceptions: "A service that truly needs only the default; silence it with `x-shmdoctor: {ignore: [SHM015]}`.",
		Sources: []string{
			"NVIDIA NCCL User Guide, troubleshooting (shared memory for GPUs of one node): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/runtime_and_mpi_issues.html",
			"PyTorch README, Using pre-built images (DataLoader workers and shared memory): https://github.com/pytorch/pytorch#using-pre-built-images",
		},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if !plan.GPU || plan.Workload() || plan.Profile != nil || !onDefault(plan) {
			return
		}
		p.Report(analyze.Finding{
			Message: fmt.Sprintf("%s is requested and nothing shows a shared-memory workload: /dev/shm stays the 64 MiB default", gpuWords(plan.GPUs)),
			Remediation: "Nothing to change if the service runs one process on one GPU. If it runs PyTorch DataLoader " +
				"workers, several GPU processes or NCCL, declare it with x-shmdoctor.dataloader or x-shmdoctor.need " +
				"and set shm_size to match.",
		})
	},
}

// gpuWords names a GPU count in a message.
func gpuWords(n int) string {
	switch n {
	case analyze.AllGPUs:
		return "every gpu"
	case 1:
		return "one gpu"
	}
	return fmt.Sprintf("%d gpus", n)
}
