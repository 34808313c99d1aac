package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm102 = analyze.Rule{
	ID:         "SHM102",
	Name:       "k8s-shm-emptydir-disk",
	Severity:   analyze.Warning,
	Title:      "emptyDir at /dev/shm without medium: Memory",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "An emptyDir without medium: Memory lives on the node's disk. Mounted at /dev/shm it is slow, " +
			"shares the node's ephemeral storage (and its eviction threshold), and is not the tmpfs programs " +
			"that use POSIX shared memory expect.",
		Problematic: "volumes:\n  - name: dshm\n    emptyDir: {}\n",
		Correct:     "volumes:\n  - name: dshm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 2Gi\n",
		Exceptions:  "None: a disk-backed scratch folder belongs elsewhere than /dev/shm.",
		Sources:     []string{srcEmptyDir},
	},
	Check: func(p *analyze.Pass) {
		plan := p.Plan
		if plan.Source != analyze.SourceEmptyDirDisk {
			return
		}
		size, ok := adviseSize(plan)
		if s := plan.K8s.SizeLimit; s != nil {
			size, ok = max(size, *s), true
		}
		medium := "no medium"
		if plan.K8s.Medium != "" {
			medium = "medium " + plan.K8s.Medium
		}
		f := analyze.Finding{
			Pos:     plan.K8s.VolumePos,
			Message: fmt.Sprintf("emptyDir %s at /dev/shm has %s: it is on the node's disk, not a tmpfs", plan.K8s.Volume, medium),
			Remediation: fmt.Sprintf("Set medium: Memory on the emptyDir, with a sizeLimit:%s%s",
				emptyDirSnippet(plan, size), k8sMemoryNote(plan, size)),
		}
		if !ok {
			f.Remediation = "Set medium: Memory on the emptyDir, with a sizeLimit of " + measured + "."
		} else {
			f.Attach(fixK8sEmptyDir(p, size))
		}
		p.Report(f)
	},
}
