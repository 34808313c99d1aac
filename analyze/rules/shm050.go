package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm050 = analyze.Rule{
	ID:       "SHM050",
	Name:     "compose-refuses",
	Severity: analyze.Error,
	Title:    "docker compose would refuse this service as written",
	Doc: analyze.Doc{
		Rationale: "Some mistakes stop `docker compose up` before any container starts, yet say nothing about " +
			"/dev/shm: a required variable (`${X?message}`, `${X:?message}`) that is not set, a `volumes` entry " +
			"compose cannot parse (`/a:/b:ro:x`) or whose target is not an absolute path (the engine refuses the " +
			"container), a required `env_file` that does not exist. The doctor reports each at its entry and " +
			"still analyses the rest of the project. A defect of the file (a volume entry) is an error; what the " +
			"environment must give (a required variable, an env file kept out of the repository, as CI checkouts " +
			"have them) is info. In both cases it " +
			"goes on as if the entry were fixed. It names the variable or the " +
			"file, never a value, a file's content or the message written after `?`.",
		Problematic: "services:\n  app:\n    image: \"myorg/app:${TAG:?set TAG}\"\n    volumes:\n      - ./data:data\n" +
			"    env_file:\n      - path: app.env\n        required: true\n",
		Correct: "services:\n  app:\n    image: \"myorg/app:${TAG:-latest}\"\n    volumes:\n      - ./data:/data\n" +
			"    env_file:\n      - path: app.env\n        required: false\n",
		Exceptions: "A variable or env file that only the deployment provides: run the doctor with `--env-file`, " +
			"or set the rule's severity in the config file. A `volumes` mode compose does not know (`./x:/y:bogus`) " +
			"is dropped by compose without a word, so it is not reported here.",
		Sources: []string{
			"Compose Specification, interpolation (required values): https://github.com/compose-spec/compose-spec/blob/main/12-interpolation.md",
			"Compose Specification, services.volumes short syntax: https://github.com/compose-spec/compose-spec/blob/main/05-services.md#short-syntax-5",
			"Compose Specification, services.env_file required: https://github.com/compose-spec/compose-spec/blob/main/05-services.md#env_file",
		},
	},
	Check: func(p *analyze.Pass) {
		for _, r := range p.Plan.Refusals {
			f := analyze.Finding{
				Pos:         r.Pos,
				Message:     r.Msg,
				Remediation: "Correct the entry before running docker compose.",
			}
			if r.Environment {
				// A checkout in CI lacks what only the deployment gives: info, not a defect.
				f.Severity = analyze.Info
				f.Remediation = "Set what it requires where the stack starts, or run the doctor with --env-file."
			}
			p.Report(f)
		}
	},
}
