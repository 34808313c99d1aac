package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm040 = analyze.Rule{
	ID:       "SHM040",
	Name:     "swarm-ignores-shm",
	Severity: analyze.Warning,
	Title:    "docker stack deploy ignores shm_size and ipc",
	Doc: analyze.Doc{
		Rationale: "Swarm services have no `shm_size` or `ipc`: `docker stack deploy` drops them and every " +
			"task gets the 64 MiB default. Only checked with `--target swarm`. The Swarm workaround is a " +
			"`volumes:` entry of type tmpfs at /dev/shm.",
		Problematic: "services:\n  chrome:\n    image: selenium/node-chrome\n    shm_size: 2g\n",
		Correct: "services:\n  chrome:\n    image: selenium/node-chrome\n    volumes:\n      - type: tmpfs\n" +
			"        target: /dev/shm\n        tmpfs:\n          size: 2147483648\n",
		Exceptions: "Files that are never deployed with docker stack deploy.",
		Sources:    []string{"docker stack deploy, unsupported compose keys: https://docs.docker.com/reference/compose-file/legacy-versions/"},
	},
	Check: func(p *analyze.Pass) {
		if p.Config.Target != analyze.TargetSwarm {
			return
		}
		size := analyze.RecommendedSize(p.Plan)
		if p.Plan.Configured != nil && *p.Plan.Configured > 0 {
			size = *p.Plan.Configured
		}
		fix := fmt.Sprintf("Use a volumes entry of type tmpfs at /dev/shm with tmpfs.size %d (%s).", size, analyze.FormatSize(size))
		for _, key := range []string{analyze.ShmKey, "ipc"} {
			if !p.Has(key) {
				continue
			}
			p.Report(analyze.Finding{
				Pos:         p.At(key),
				Message:     fmt.Sprintf("%s is ignored by docker stack deploy: tasks get the 64 MiB default /dev/shm", key),
				Remediation: fix,
			})
		}
	},
}
