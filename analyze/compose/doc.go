// Package compose loads compose projects exactly as docker compose does (compose-go with
// docker compose's own options, environment and profiles), indexes where every key was
// written across override files, extends, include and anchors, and resolves each service's
// /dev/shm into a plan. Load also finds the projects of folders (-r) and hands the
// manifests it meets to kube.
package compose
