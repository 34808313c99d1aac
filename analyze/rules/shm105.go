package rules

import (
	"fmt"
	"strings"

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
		k := p.Plan.K8s
		if !k.HostIPC || !k.FirstInPod {
			return
		}
		// the pod's containers whose /dev/shm is the node's: the others mount a volume there
		var hosted []*analyze.ShmPlan
		all := true
		for _, q := range p.Project.Plans {
			if q.K8s == nil || q.K8s.Pod != k.Pod || q.K8s.HostIPCPos != k.HostIPCPos {
				continue
			}
			if q.Source == analyze.SourceHost {
				hosted = append(hosted, q)
			} else {
				all = false
			}
		}
		f := analyze.Finding{Pos: k.HostIPCPos, Message: "hostIPC is true: the pod shares the node's ipc namespace and /dev/shm"}
		isolation := p.Config.Policy == analyze.PolicyIsolation
		if isolation {
			f.Severity = analyze.Warning
		}
		if len(hosted) == 0 {
			f.Message = "hostIPC is true: the pod shares the node's ipc namespace (each container mounts its own volume at /dev/shm)"
			f.Remediation = "Keep hostIPC: true only if the pod must share memory with the node; otherwise remove it: /dev/shm is already a volume in every container."
			if isolation {
				f.Remediation = "Remove hostIPC: true: /dev/shm is already a volume in every container."
			}
			p.ReportPod(f)
			return
		}
		if !all {
			var names []string
			for _, q := range hosted {
				names = append(names, containerLabel(q))
			}
			f.Message = fmt.Sprintf("hostIPC is true: the pod shares the node's ipc namespace, and %s see the node's /dev/shm", andList(names))
		}
		var size int64
		for _, q := range hosted {
			size = max(size, analyze.RecommendedSize(q))
		}
		advice := podShmSnippet(hosted, size)
		if len(hosted) == 1 {
			advice += k8sMemoryNote(hosted[0], size)
		} else {
			advice += fmt.Sprintf("Keep each container's memory limit (resources.limits.memory) well above %s: /dev/shm pages count against the container that writes them.", analyze.K8sSize(size))
		}
		f.Remediation = "Keep hostIPC: true only if the pod must share memory with the node; otherwise remove it and mount a memory emptyDir at /dev/shm:" + advice
		if isolation {
			f.Remediation = "Remove hostIPC: true and mount a memory emptyDir at /dev/shm:" + advice
		}
		p.ReportPod(f)
	},
}

// containerLabel names a container within its pod: its name, and its role when it is not
// one of the main containers.
func containerLabel(p *analyze.ShmPlan) string {
	if p.K8s.Role != "" {
		return p.K8s.Container + " (" + p.K8s.Role + ")"
	}
	return p.K8s.Container
}

// andList joins names as a sentence does: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
