package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm101 = analyze.Rule{
	ID:         "SHM101",
	Name:       "k8s-shm-default",
	Severity:   analyze.Warning,
	Title:      "shared-memory container without a volume at /dev/shm",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "Kubernetes does not size /dev/shm: a container gets the runtime's 64 MiB unless a volume is " +
			"mounted there. PyTorch DataLoader workers, NCCL, vLLM, Triton, Ray and browsers outgrow it and die of " +
			"SIGBUS or ENOSPC. The fix is an emptyDir with medium: Memory mounted at /dev/shm, with a sizeLimit.",
		Problematic: "spec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.6.3\n",
		Correct: "spec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.6.3\n      resources:\n        limits:\n          memory: 16Gi\n" +
			"      volumeMounts:\n        - name: dshm\n          mountPath: /dev/shm\n  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory\n        sizeLimit: 2Gi\n",
		Exceptions: "Containers that share memory with the node on purpose (hostIPC: true, SHM105) get the node's /dev/shm instead. " +
			"The Ray container of a KubeRay head or worker group gets a memory emptyDir from the operator, unless rayStartParams sets plasma-directory.",
		Sources: []string{srcEmptyDir, "vLLM documentation, Using Kubernetes (a 2Gi memory emptyDir at /dev/shm): https://docs.vllm.ai/en/stable/deployment/k8s/"},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Source != analyze.SourceDefault || !plan.Workload() {
			return
		}
		if plan.Sized() && plan.Target() <= analyze.DefaultShmSize {
			return // the need fits the default
		}
		if !plan.Sized() {
			p.Report(analyze.Finding{
				Severity:    analyze.Info,
				Message:     fmt.Sprintf("no volume is mounted at /dev/shm: the container gets the runtime's 64 MiB, and %s", analyze.NeedBasis(plan)),
				Remediation: "Measure the peak with shmdoctor watch and declare it with the shmdoctor.io/need annotation; the doctor then checks the pod's /dev/shm against it.",
			})
			return
		}
		size := analyze.RecommendedSize(plan)
		f := analyze.Finding{
			Severity: defaultSeverity(plan),
			Message:  fmt.Sprintf("no volume is mounted at /dev/shm: the container gets the runtime's 64 MiB, and %s", analyze.NeedBasis(plan)),
			Remediation: fmt.Sprintf("Mount a memory-backed emptyDir at /dev/shm in the pod spec:%s%s",
				shmVolumeSnippet(plan, size), k8sMemoryNote(plan, size)),
		}
		f.Attach(fixK8sVolume(p, size))
		p.Report(f)
	},
}
