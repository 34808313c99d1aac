package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm106 = analyze.Rule{
	ID:         "SHM106",
	Name:       "k8s-hostpath-shm",
	Severity:   analyze.Warning,
	Title:      "hostPath of the node's /dev/shm in a container",
	Kubernetes: true,
	Doc: analyze.Doc{
		Rationale: "A hostPath volume of /dev/shm hands the container the node's shared memory: its size is the node's, " +
			"its contents are shared with every process and pod on the node, and what the pod writes there is not " +
			"charged to the pod and outlives it. A memory emptyDir gives the pod a private, sized /dev/shm.",
		Problematic: "volumes:\n  - name: shm\n    hostPath:\n      path: /dev/shm\n",
		Correct:     "volumes:\n  - name: shm\n    emptyDir:\n      medium: Memory\n      sizeLimit: 8Gi\n",
		Exceptions:  "Pods that exchange shared memory with node daemons on purpose.",
		Sources: []string{"Kubernetes documentation, Volumes: hostPath (security risks): https://kubernetes.io/docs/concepts/storage/volumes/#hostpath",
			srcEmptyDir},
	},
	Check: func(p *analyze.Pass) {
		plan, k := p.Plan, p.Plan.K8s
		if k.HostShm == "" {
			return
		}
		size, ok := adviseSize(plan)
		if plan.Source != analyze.SourceHostPath && ok {
			// the node's /dev/shm mounted elsewhere: the volume itself is the fault
			size = max(size, 1<<30)
		}
		fix := fmt.Sprintf("Replace the hostPath with a memory emptyDir of the same name:%s%s",
			yamlBlock("- name: "+k.HostShm, "  emptyDir:", "    medium: Memory", "    sizeLimit: "+analyze.K8sSize(size)), k8sMemoryNote(plan, size))
		if !ok {
			fix = "Replace the hostPath with a memory emptyDir of the same name, with a sizeLimit of " + measured + "."
		}
		p.Report(analyze.Finding{
			Pos:         k.HostShmPos,
			Message:     fmt.Sprintf("hostPath volume %s mounts the node's /dev/shm: the container shares the node's shared memory and its size", k.HostShm),
			Remediation: fix,
		})
	},
}
