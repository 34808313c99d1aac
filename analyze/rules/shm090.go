package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm090 = analyze.Rule{
	ID:       "SHM090",
	Name:     "unused-suppression",
	Severity: analyze.Info,
	Title:    "a suppression matches no finding",
	Doc: analyze.Doc{
		Rationale: "A `# shmdoctor-ignore` comment, an `x-shmdoctor.ignore` entry or a `shmdoctor.io/ignore` " +
			"annotation that silences nothing is stale: the problem was fixed or moved, and the ignore now " +
			"waits to hide the next one. Each rule a suppression names is judged on its own, in the services " +
			"or on the line it covers. Rules that judge a measurement are judged only where the probe ran, and " +
			"a line in a service that `--profile` left out is not judged. The config file's `ignore` and " +
			"`ignore-paths` are not reported: they apply to whatever a run analyses, and a run over part of a " +
			"repository would call them stale.",
		Problematic: "services:\n  web:\n    image: nginx\n    shm_size: 256m  # shmdoctor-ignore SHM001 ipc: host was removed\n",
		Correct:     "services:\n  web:\n    image: nginx\n    shm_size: 256m\n",
		Exceptions: "A suppression kept on purpose for a finding that comes and goes (with `--target swarm`, say) " +
			"can name SHM090 too, or the config file can set `ignore: [SHM090]`.",
		Sources: []string{
			"ESLint, report unused disable directives: https://eslint.org/docs/latest/use/configure/rules#report-unused-eslint-disable-comments",
			"SARIF 2.1.0, suppressions: https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/sarif-v2.1.0-errata01-os-complete.html#_Toc141790910",
		},
	},
	// Check reports nothing: the unused suppressions are found after every rule has run.
	Check: func(*analyze.Pass) {},
}
