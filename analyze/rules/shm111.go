package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm111 = analyze.Rule{
	ID:         "SHM111",
	Name:       "k8s-shm-too-small",
	Severity:   analyze.Warning,
	Title:      "sizeLimit of /dev/shm below what the workload needs",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "A memory emptyDir's sizeLimit is the size of /dev/shm. Below the need the workload's parameters " +
			"give (NCCL ranks, vLLM's queues, a Ray object store: docs/needs.md) or the need declared through the " +
			"annotation shmdoctor.io/need or --need, writers fail with ENOSPC or SIGBUS; a Ray store that does not " +
			"fit goes to /tmp, slower (info). Where the parameters give no size, this rule says nothing.",
		Problematic: "metadata:\n  annotations:\n    shmdoctor.io/need: 8Gi\nspec:\n  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory\n        sizeLimit: 1Gi\n",
		Correct:     "metadata:\n  annotations:\n    shmdoctor.io/need: 8Gi\nspec:\n  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory\n        sizeLimit: 8Gi\n",
		Exceptions:  "A formula counts documented buffers: where the workload is known to use less, declare the real need with shmdoctor.io/need.",
		Sources:     []string{srcEmptyDir, "vLLM documentation, Using Kubernetes: https://docs.vllm.ai/en/stable/deployment/k8s/"},
	},
	Check: func(p *analyze.Pass) {
		plan, k := p.Plan, p.Plan.K8s
		if plan.Source != analyze.SourceEmptyDirMemory || k.SizeLimit == nil || !plan.Sized() || *k.SizeLimit >= plan.Target() {
			return
		}
		size := analyze.RecommendedSize(plan)
		f := analyze.Finding{
			Severity: plan.Severity(),
			Pos:      k.SizeLimitPos,
			Message:  fmt.Sprintf("sizeLimit %s of /dev/shm is below what the workload needs: %s", analyze.FormatSize(*k.SizeLimit), analyze.NeedBasis(plan)),
			Remediation: fmt.Sprintf("Raise sizeLimit to %s:%s%s", analyze.K8sSize(size),
				emptyDirSnippet(plan, size), k8sMemoryNote(plan, size)),
		}
		f.Attach(fixK8sEmptyDir(p, size))
		p.Report(f)
	},
}
