// Package kube turns Kubernetes manifests into plans: every pod spec of a workload, a List,
// an Argo workflow or a custom resource that embeds one (KubeRay, Kubeflow, JobSet,
// LeaderWorkerSet, Volcano, KServe), each container (init containers and sidecars too) with
// its /dev/shm volume, memory limits and annotations, and what the operators it models add.
// A manifest is a project of its own, and its own Document.
package kube
