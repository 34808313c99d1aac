package analyze

var shm020 = Rule{
	ID:       "SHM020",
	Name:     "ipc-host",
	Severity: Info,
	Title:    "ipc: host shares the host's ipc namespace",
	Doc: Doc{
		Rationale: "`ipc: host` is the quick fix many ML images document: the container sees the host's " +
			"/dev/shm, System V IPC and POSIX message queues. It works, but the container can read and fill " +
			"the host's shared memory and its size follows the host. With `--policy isolation` this is a " +
			"warning and the fix is a private, sized /dev/shm.",
		Problematic: "services:\n  vllm:\n    image: vllm/vllm-openai\n    ipc: host\n",
		Correct:     "services:\n  vllm:\n    image: vllm/vllm-openai\n    shm_size: 2g\n",
		Exceptions:  "Multi-container setups that share memory through the host on purpose.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *Pass) {
		if p.Plan.IPC != "host" {
			return
		}
		size := keepSize(p.Plan)
		f := Finding{
			Pos:         p.At("ipc"),
			Message:     "ipc is host: the container shares the host's ipc namespace and /dev/shm",
			Remediation: "Keep ipc: host only if the service must share memory with the host; otherwise replace it with shm_size: " + ComposeSize(size) + ".",
		}
		if p.Config.Policy == PolicyIsolation {
			f.Severity = Warning
			f.Remediation = "Replace ipc: host with shm_size: " + ComposeSize(size) + "." + memoryNote(p.Plan, size)
			f.Attach(fixPrivate(p))
		}
		p.Report(f)
	},
}
