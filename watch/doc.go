// Package watch follows the running containers of a compose project (or of a whole engine,
// for the exporter) and reads their /dev/shm use over time: from the stats API's shmem
// counter where the engine reports it (cgroup v2), else with the agent's watch mode in a
// companion container that shares the watched container's PID namespace (labelled
// engine.LabelWatch, removed by the engine when the doctor's attach connection or the
// container ends), else with the image's df.
//
// A watch is a ledger (the containers seen, grouped by the /dev/shm they share, with their
// samples) and companions (the agents that read a group's /dev/shm). It shares the engine and
// the agent protocol with package probe, and nothing else.
package watch
