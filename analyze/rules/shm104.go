package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm104 = analyze.Rule{
	ID:         "SHM104",
	Name:       "k8s-shm-over-memory-limit",
	Severity:   analyze.Error,
	Title:      "memory emptyDir at or above the container's memory limit",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "Pages written to a memory-backed emptyDir are charged to the memory cgroup of the container that " +
			"writes them. With a sizeLimit at or above the container's memory limit, the container is OOM-killed " +
			"before /dev/shm fills.",
		Problematic: "containers:\n  - name: trainer\n    resources:\n      limits:\n        memory: 6Gi\nvolumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 8Gi\n",
		Correct:     "containers:\n  - name: trainer\n    resources:\n      limits:\n        memory: 16Gi\nvolumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 8Gi\n",
		Exceptions: "A container without a memory limit: since Kubernetes 1.22 the sizeLimit sizes the tmpfs, so it caps " +
			"the volume (a volume with neither is SHM103's). The volume KubeRay mounts is sized to the container's " +
			"memory limit by design and is not reported.",
		Sources: []string{srcEmptyDir, srcMemory},
	},
	Check: func(p *analyze.Pass) {
		plan, k := p.Plan, p.Plan.K8s
		if plan.Source != analyze.SourceEmptyDirMemory {
			return
		}
		// without a memory limit the sizeLimit caps the volume; without either, SHM103 reports it
		if plan.MemLimit == nil || k.SizeLimit == nil || *k.SizeLimit < *plan.MemLimit {
			return
		}
		p.Report(analyze.Finding{
			Pos: k.SizeLimitPos,
			Message: fmt.Sprintf("sizeLimit %s of /dev/shm is at or above the container's memory limit %s: the container is OOM-killed before /dev/shm fills",
				analyze.FormatSize(*k.SizeLimit), analyze.FormatSize(*plan.MemLimit)),
			Remediation: fmt.Sprintf("Raise the memory limit above the sizeLimit plus what the process itself needs, or lower sizeLimit below %s:%s"+
				"The /dev/shm pages count against this limit.",
				analyze.K8sSize(*plan.MemLimit), yamlBlock("resources:", "  limits:", "    memory: "+analyze.K8sSize(analyze.Friendly(*k.SizeLimit+*plan.MemLimit)))),
		})
	},
}
