package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm105 = analyze.Rule{
	ID:         "SHM105",
	Name:       "k8s-host-ipc",
	Severity:   analyze.Info,
	Title:      "pod shares the node's ipc namespace (hostIPC)",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "hostIPC: true puts every container of the pod in the node's IPC namespace: /dev/shm is the node's, " +
			"shared with every other hostIPC pod and the node's own processes, sized by the node and not by the pod. " +
			"The Pod Security Standards forbid it from the baseline profile up. With --policy isolation the rule is a warning.",
		Problematic: "spec:\n  hostIPC: true\n  containers:\n    - name: sglang\n",
		Correct:     "spec:\n  containers:\n    - name: sglang\n      volumeMounts:\n        - name: dshm\n          mountPath: /dev/shm\n  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory\n        sizeLimit: 32Gi\n",
		Exceptions:  "Pods that must share memory with node processes (some CUDA IPC or MPI setups) keep hostIPC on purpose.",
		Sources: []string{"Kubernetes documentation, Pod Security Standards (host namespaces): https://kubernetes.io/docs/concepts/security/pod-security-standards/",
			srcEmptyDir},
	},
	Check: func(p *analyze.Pass) {
		plan, k := p.Plan, p.Plan.K8s
		if !k.HostIPC || !k.FirstInPod {
			return
		}
		size := analyze.RecommendedSize(plan)
		msg := "hostIPC is true: the pod shares the node's ipc namespace and /dev/shm"
		if plan.Source != analyze.SourceHost {
			msg = fmt.Sprintf("hostIPC is true: the pod shares the node's ipc namespace (this container's /dev/shm is its %s volume)", plan.Source)
		}
		f := analyze.Finding{
			Pos:     k.HostIPCPos,
			Message: msg,
			Remediation: fmt.Sprintf("Keep hostIPC: true only if the pod must share memory with the node; otherwise remove it and mount a memory emptyDir at /dev/shm:%s%s",
				shmVolumeSnippet(plan, size), k8sMemoryNote(plan, size)),
		}
		if p.Config.Policy == analyze.PolicyIsolation {
			f.Severity = analyze.Warning
			f.Remediation = fmt.Sprintf("Remove hostIPC: true and mount a memory emptyDir at /dev/shm:%s%s", shmVolumeSnippet(plan, size), k8sMemoryNote(plan, size))
		}
		if plan.Source != analyze.SourceHost {
			// the container's /dev/shm is its own volume already: keep it as it is
			f.Remediation = fmt.Sprintf("Keep hostIPC: true only if the pod must share memory with the node; otherwise remove it: /dev/shm is already the %s volume %s.", plan.Source, k.Volume)
			if p.Config.Policy == analyze.PolicyIsolation {
				f.Remediation = fmt.Sprintf("Remove hostIPC: true: /dev/shm is already the %s volume %s.", plan.Source, k.Volume)
			}
		}
		p.Report(f)
	},
}
