package rules

import (
	"fmt"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// Sources the Kubernetes rules cite.
const (
	srcEmptyDir    = "Kubernetes documentation, Volumes: emptyDir (medium: Memory, sizeLimit, memory limits): https://kubernetes.io/docs/concepts/storage/volumes/#emptydir"
	srcEmptyDirAPI = "Kubernetes API reference, EmptyDirVolumeSource (sizeLimit of a memory medium): https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/volume/#EmptyDirVolumeSource"
	srcMemory      = "Kubernetes documentation, Resource Management for Pods and Containers (memory-backed emptyDir): https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#memory-backed-emptydir"
)

// yamlBlock indents a YAML snippet for a remediation, set off by blank lines.
func yamlBlock(lines ...string) string {
	var b strings.Builder
	b.WriteString("\n\n")
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// shmVolumeName is the volume name a fix uses: the existing one, else dshm.
func shmVolumeName(p *analyze.ShmPlan) string {
	if p.K8s.Volume != "" {
		return p.K8s.Volume
	}
	return "dshm"
}

// shmVolumeSnippet is the complete volumes and volumeMounts YAML that gives a container a
// memory-backed /dev/shm of size, the container under the key that holds it (containers,
// initContainers, an Argo template's container or sidecars).
func shmVolumeSnippet(p *analyze.ShmPlan, size int64) string {
	name := shmVolumeName(p)
	lines := []string{
		"volumes:",
		"  - name: " + name,
		"    emptyDir:",
		"      medium: Memory",
		"      sizeLimit: " + analyze.K8sSize(size),
	}
	mount := []string{"volumeMounts:", "  - name: " + name, "    mountPath: /dev/shm"}
	switch key := p.K8s.Key; key {
	case "container", "script": // an Argo template's one container
		lines = append(lines, key+":")
	default:
		if key == "" {
			key = "containers"
		}
		lines = append(lines, key+":", "  - name: "+p.K8s.Container)
		for i := range mount {
			mount[i] = "  " + mount[i]
		}
	}
	for _, l := range mount {
		lines = append(lines, "  "+l)
	}
	return yamlBlock(lines...)
}

// podShmSnippet is the volumes entry of a memory emptyDir of size and its volumeMounts in
// each of the pod's containers in plans, under the keys that hold them.
func podShmSnippet(plans []*analyze.ShmPlan, size int64) string {
	if len(plans) == 1 {
		return shmVolumeSnippet(plans[0], size)
	}
	lines := []string{
		"volumes:",
		"  - name: dshm",
		"    emptyDir:",
		"      medium: Memory",
		"      sizeLimit: " + analyze.K8sSize(size),
	}
	var keys []string
	byKey := map[string][]*analyze.ShmPlan{}
	for _, p := range plans {
		key := p.K8s.Key
		if key == "" {
			key = "containers"
		}
		if byKey[key] == nil {
			keys = append(keys, key)
		}
		byKey[key] = append(byKey[key], p)
	}
	for _, key := range keys {
		lines = append(lines, key+":")
		for _, p := range byKey[key] {
			lines = append(lines, "  - name: "+p.K8s.Container, "    volumeMounts:", "      - name: dshm", "        mountPath: /dev/shm")
		}
	}
	return yamlBlock(lines...)
}

// emptyDirSnippet is the volumes entry of a memory emptyDir of size.
func emptyDirSnippet(p *analyze.ShmPlan, size int64) string {
	return yamlBlock(
		"- name: "+shmVolumeName(p),
		"  emptyDir:",
		"    medium: Memory",
		"    sizeLimit: "+analyze.K8sSize(size),
	)
}

// k8sMemoryNote is the closing sentence of a fix that sizes /dev/shm: its pages count
// against the container's memory limit.
func k8sMemoryNote(p *analyze.ShmPlan, size int64) string {
	switch {
	case p.MemLimit == nil:
		return fmt.Sprintf("Give the container a memory limit (resources.limits.memory) well above %s: /dev/shm pages count against it.", analyze.K8sSize(size))
	case *p.MemLimit <= size:
		return fmt.Sprintf("Raise resources.limits.memory (now %s) well above %s too: /dev/shm pages count against it.", analyze.FormatSize(*p.MemLimit), analyze.K8sSize(size))
	}
	return fmt.Sprintf("Keep resources.limits.memory (now %s) above it plus what the process needs: /dev/shm pages count against it.", analyze.FormatSize(*p.MemLimit))
}

// podBound says what bounds a memory emptyDir without a sizeLimit.
func podBound(p *analyze.ShmPlan) string {
	if k := p.K8s; k.AllLimited && k.PodMemLimit != nil {
		return "the pod's memory limit (" + analyze.FormatSize(*k.PodMemLimit) + ")"
	}
	return "the node's allocatable memory"
}
