// Package probe is the doctor's side of a probe run: it measures each service's real
// /dev/shm in a throwaway container.
//
// The doctor predicts; the probe proves. For every analyze.ShmPlan the probe builds one
// least-privilege container spec that copies only the service's shared-memory settings (ipc,
// shm_size, the mount at /dev/shm, memory limits, memlock and stack ulimits), creates and
// attaches to it through package engine, grants the agent inside (package agent) its share of
// the run's write budget, and turns the agent's report (package agent/protocol) into an
// analyze.Measurement. Containers carry the engine.LabelProbe label and are removed on every
// path: normal end, error, Ctrl-C, timeout and a daemon that stops answering.
//
// A run is a session (runner: plan → spec → create, attach, measure) with a reaper beside it
// (the containers it created, their removal within engine.CleanupGrace, the final sweep).
package probe
