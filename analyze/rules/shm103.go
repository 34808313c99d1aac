package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm103 = analyze.Rule{
	ID:         "SHM103",
	Name:       "k8s-shm-unsized",
	Severity:   analyze.Warning,
	Title:      "memory emptyDir at /dev/shm without sizeLimit",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "Since Kubernetes 1.22 a memory-backed emptyDir is sized to the smallest of the node's allocatable " +
			"memory, the pod's memory limit (when every container has one) and sizeLimit. Without sizeLimit, " +
			"/dev/shm is as large as the pod's limit or the node's memory, and a runaway writer ends in an OOM " +
			"kill or node memory pressure instead of ENOSPC.",
		Problematic: "volumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n",
		Correct:     "volumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 2Gi\n",
		Exceptions: "A pod whose containers all have memory limits is bounded by them; the rule still asks for an explicit size. " +
			"When the container has no memory limit either, the message says so: that is one problem, reported once here, not also under SHM104.",
		Sources: []string{srcEmptyDir, srcEmptyDirAPI, srcMemory},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Source != analyze.SourceEmptyDirMemory || plan.K8s.SizeLimit != nil {
			return
		}
		size, ok := adviseSize(plan)
		nolimit := ""
		if plan.MemLimit == nil {
			nolimit = " and the container has no memory limit"
		}
		f := analyze.Finding{
			Pos:     plan.K8s.VolumePos,
			Message: fmt.Sprintf("memory emptyDir %s at /dev/shm has no sizeLimit%s: it is bounded only by %s", plan.K8s.Volume, nolimit, podBound(plan)),
			Remediation: fmt.Sprintf("Add a sizeLimit to the emptyDir:%s%s",
				emptyDirSnippet(plan, size), k8sMemoryNote(plan, size)),
		}
		switch {
		case ok:
			f.Attach(fixK8sEmptyDir(p, size))
		case plan.MemLimit != nil:
			// bounded by the limit: an OOM kill instead of ENOSPC, and no size to advise
			f.Severity = analyze.Info
			f.Remediation = "Add a sizeLimit of " + measured + " to the emptyDir."
		default:
			f.Remediation = "Add a sizeLimit of " + measured + " to the emptyDir, and a memory limit to the container."
		}
		p.Report(f)
	},
}
