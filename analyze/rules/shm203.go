package rules

import (
	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm203 = analyze.Rule{
	ID:       "SHM203",
	Name:     "write-probe-sigbus",
	Severity: analyze.Error,
	Title:    "write probe got sigbus touching mapped /dev/shm pages",
	Probe:    true,
	// The write probe wrote the need that SHM010 or SHM011 says does not fit, or the
	// shm_size that SHM002 or SHM003 says is ignored for a smaller /dev/shm.
	Reproduces: reproducesShortfall,
	Doc: analyze.Doc{
		Rationale: "The probe mapped a file in /dev/shm truncated to the target and touched its pages: past " +
			"the tmpfs size the kernel raises SIGBUS. This is how PyTorch DataLoader workers die " +
			"(`DataLoader worker (pid N) is killed by signal: Bus error`).",
		Problematic: "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 256m\n    x-shmdoctor: {need: 2g}\n",
		Correct:     "services:\n  trainer:\n    image: pytorch/pytorch\n    shm_size: 2g\n    x-shmdoctor: {need: 2g}\n",
		Exceptions:  "None.",
		Sources:     []string{"mmap(2), SIGBUS: https://man7.org/linux/man-pages/man2/mmap.2.html"},
	},
	Check: func(p *analyze.Pass) { writeFailure(p, analyze.WriteSIGBUS, "bus error (SIGBUS)") },
}
