package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm020 = analyze.Rule{
	ID:       "SHM020",
	Name:     "ipc-host",
	Severity: analyze.Info,
	Title:    "ipc: host shares the host's ipc namespace",
	Doc: analyze.Doc{
		Rationale: "`ipc: host` is the quick fix many ML images document: the container sees the host's " +
			"/dev/shm, System V IPC and POSIX message queues. It works, but the container can read and fill " +
			"the host's shared memory and its size follows the host. With `--policy isolation` this is a " +
			"warning and the fix is a private, sized /dev/shm.",
		Problematic: "services:\n  vllm:\n    image: vllm/vllm-openai\n    ipc: host\n",
		Correct:     "services:\n  vllm:\n    image: vllm/vllm-openai\n    shm_size: 2g\n",
		Exceptions:  "Multi-container setups that share memory through the host on purpose.",
		Sources:     []string{"Docker run reference, --ipc: https://docs.docker.com/reference/cli/docker/container/run/#ipc"},
	},
	Check: func(p *analyze.Pass) {
		if p.Plan.IPC != "host" {
			return
		}
		size, ok := adviseSize(p.Plan)
		shm := "shm_size: " + analyze.ComposeSize(size)
		if !ok {
			shm = "shm_size set to " + measured
		}
		f := analyze.Finding{
			Pos:         p.At("ipc"),
			Message:     "ipc is host: the container shares the host's ipc namespace and /dev/shm",
			Remediation: "Keep ipc: host only if the service must share memory with the host; otherwise replace it with " + shm + ".",
		}
		if p.Config.Policy == analyze.PolicyIsolation {
			f.Severity = analyze.Warning
			f.Remediation = "Replace ipc: host with " + shm + "."
			if ok {
				f.Remediation += memoryNote(p.Plan, size)
				f.Attach(fixPrivate(p))
			}
		}
		p.Report(f)
	},
}
