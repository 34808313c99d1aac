// Package kube turns Kubernetes manifests into plans: every pod spec of a workload, a List,
// an Argo workflow or a KubeRay or Kubeflow object, each container with its /dev/shm volume,
// memory limits and annotations. A manifest is a project of its own, and its own Document.
package kube
