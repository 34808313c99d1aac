// Package faults is the fault suite of `make faults`: it drives the built doctor
// (bin/shmdoctor) against a private dockerd that the suite starts and stops itself, on its
// own socket, data root, exec root, containerd, cgroup parent (with a memory limit) and mount
// and network namespaces, so that the machine's engine is never touched. It signals the
// doctor mid-probe and mid-watch, kills and hangs the daemon, races `probe --clean` with
// live runs, starts concurrent doctors on a cold cache and probes oversized services, then
// prints the fault matrix: fault, expected, observed, and what was left after N runs.
//
// Its tests carry the build tag faults, so that `go test ./...` does not run them; they
// need root, util-linux's unshare and Debian's docker.io (dockerd, containerd, runc).
package faults
