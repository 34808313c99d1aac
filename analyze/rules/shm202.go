package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm202 = analyze.Rule{
	ID:       "SHM202",
	Name:     "write-probe-enospc",
	Severity: analyze.Error,
	Title:    "write probe hit no space left on device",
	Probe:    true,
	// The write probe wrote the need that SHM010 or SHM011 says does not fit, or the
	// shm_size that SHM002 or SHM003 says is ignored for a smaller /dev/shm.
	Reproduces: reproducesShortfall,
	Doc: analyze.Doc{
		Rationale: "The probe wrote the service's need (declared, or its workload's minimum) into an unlinked " +
			"file in /dev/shm with write(2) and got ENOSPC before the target: the same `No space left on " +
			"device` the service will see.",
		Problematic: "services:\n  db:\n    image: postgres:16   # 64 MiB /dev/shm, parallel query needs more\n",
		Correct:     "services:\n  db:\n    image: postgres:16\n    shm_size: 256m\n",
		Exceptions:  "A need declared larger than the service really uses: lower `x-shmdoctor.need`.",
		Sources:     []string{"write(2), ENOSPC: https://man7.org/linux/man-pages/man2/write.2.html"},
	},
	Check: func(p *analyze.Pass) { writeFailure(p, analyze.WriteENOSPC, "no space left on device (ENOSPC)") },
}
