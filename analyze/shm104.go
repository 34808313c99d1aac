package analyze

import "fmt"

var shm104 = Rule{
	ID:         "SHM104",
	Name:       "k8s-shm-over-memory-limit",
	Severity:   Error,
	Title:      "memory emptyDir at or above the container's memory limit",
	Kubernetes: true,
	Doc: Doc{
		Rationale: "Pages written to a memory-backed emptyDir are charged to the memory cgroup of the container that " +
			"writes them. With a sizeLimit at or above the container's memory limit, the container is OOM-killed " +
			"before /dev/shm fills. A container with no memory limit at all (warning) is bounded by nothing but " +
			"the node, and its pod's limit does not cap the volume either.",
		Problematic: "containers:\n  - name: trainer\n    resources:\n      limits:\n        memory: 6Gi\nvolumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 8Gi\n",
		Correct:     "containers:\n  - name: trainer\n    resources:\n      limits:\n        memory: 16Gi\nvolumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 8Gi\n",
		Exceptions:  "None.",
		Sources:     []string{srcEmptyDir, srcMemory},
	},
	Check: func(p *Pass) {
		plan, k := p.Plan, p.Plan.K8s
		if plan.Source != SourceEmptyDirMemory {
			return
		}
		if plan.MemLimit == nil {
			size := recommend(plan)
			if k.SizeLimit != nil {
				size = *k.SizeLimit
			}
			limit := friendly(size + 4<<30)
			p.Report(Finding{
				Severity: Warning,
				Message:  fmt.Sprintf("the container has no memory limit but mounts memory emptyDir %s at /dev/shm: its /dev/shm pages are bounded only by the node", k.Volume),
				Remediation: fmt.Sprintf("Give the container a memory limit above the sizeLimit plus what the process needs:%s"+
					"With a limit on every container, the pod's limit also caps the volume.",
					yamlBlock("resources:", "  limits:", "    memory: "+K8sSize(limit))),
			})
			return
		}
		if k.SizeLimit == nil || *k.SizeLimit < *plan.MemLimit {
			return
		}
		p.Report(Finding{
			Pos: k.SizeLimitPos,
			Message: fmt.Sprintf("sizeLimit %s of /dev/shm is at or above the container's memory limit %s: the container is OOM-killed before /dev/shm fills",
				FormatSize(*k.SizeLimit), FormatSize(*plan.MemLimit)),
			Remediation: fmt.Sprintf("Raise the memory limit above the sizeLimit plus what the process itself needs, or lower sizeLimit below %s:%s"+
				"The /dev/shm pages count against this limit.",
				K8sSize(*plan.MemLimit), yamlBlock("resources:", "  limits:", "    memory: "+K8sSize(friendly(*k.SizeLimit+*plan.MemLimit)))),
		})
	},
}
