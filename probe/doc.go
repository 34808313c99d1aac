// Package probe measures each service's real /dev/shm in a throwaway container.
//
// The doctor predicts; the probe proves. For every analyze.ShmPlan the probe creates one
// least-privilege container that copies only the service's shared-memory settings (ipc,
// shm_size, the mount at /dev/shm, memory limits, memlock and stack ulimits), runs the agent
// inside it (a hidden subcommand of the doctor's own binary, put in a scratch image built
// locally through the image import API), and turns the agent's JSON report into an
// analyze.Measurement. Containers carry the io.shmdoctor.probe label and are removed on every
// path: normal end, error, Ctrl-C, timeout and a daemon that stops answering.
//
// The agent's write probe writes into unlinked files in /dev/shm from a child process (a
// re-exec of the agent), so nothing is left behind even when the kernel kills the writer, and
// it streams its progress so that an OOM kill still tells how far it got.
//
// Watch (`shmdoctor watch`) follows the running containers of a compose project instead and
// reads their /dev/shm use over time: from the stats API's shmem counter where the engine
// reports it (cgroup v2), else with the agent's watch mode in a companion container that
// shares the watched container's PID namespace (labelled io.shmdoctor.watch, removed by the
// engine when the doctor's attach connection or the container ends), else with the image's df.
//
// The binary that contains the agent must dispatch `<binary> agent ARGS...` to
// AgentMain(ARGS, os.Stdout, os.Stderr): the agent re-executes itself that way.
package probe
