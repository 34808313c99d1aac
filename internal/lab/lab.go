// Package lab is the truth lab: it runs real workloads (Debian's PyTorch DataLoader and
// PostgreSQL parallel queries, in images built locally from Debian packages) in the compose
// stacks of testdata/lab and sets beside each the doctor's verdict, the probe's outcome, the
// real outcome and shmdoctor watch's measured peak against the doctor's need estimate.
//
// The runner is the test TestLab, behind the build tag lab (make lab): it needs the engine,
// mmdebstrap and some minutes. This file holds what it decides with, tested on its own.
package lab

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Real outcomes of a workload.
const (
	Pass     = "pass"
	BusError = "bus_error" // SIGBUS touching /dev/shm pages: PyTorch's "killed by signal: Bus error"
	ENOSPC   = "enospc"    // a write or resize ran out of /dev/shm: "No space left on device"
	OOM      = "oom_137"   // the memory cgroup killed it
	Crash    = "crash"     // any other failure
	Timeout  = "timeout"   // it did not end in time
)

var (
	busError = regexp.MustCompile(`(?i)bus error|SIGBUS|out of shared memory`)
	noSpace  = regexp.MustCompile(`(?i)no space left on device|ENOSPC|could not resize shared memory segment`)
)

// Classify names a workload's outcome from its exit code, the engine's OOMKilled flag and
// its logs. OOM comes first: a killed container says nothing.
func Classify(exitCode int, oomKilled bool, logs string) string {
	switch {
	case oomKilled:
		return OOM
	case exitCode == 0:
		return Pass
	case busError.MatchString(logs) || exitCode == 128+7:
		return BusError
	case noSpace.MatchString(logs):
		return ENOSPC
	case exitCode == 137:
		return OOM
	}
	return Crash
}

// Failed reports whether an outcome is a failure.
func Failed(outcome string) bool { return outcome != Pass }

// Finding is the part of a doctor's JSON finding the lab reads.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Service  string `json:"service"`
	Message  string `json:"message"`
}

// sizeRules are the rules whose finding says that /dev/shm will not hold the workload:
// too small (SHM010, SHM011), none at all (SHM005), or a probe that ran out (SHM202-204)
// or could not start the container (SHM205). The others (ipc: host, ulimits, info) are no
// prediction of a failure.
var sizeRules = map[string]bool{
	"SHM005": true, "SHM010": true, "SHM011": true, "SHM012": true,
	"SHM202": true, "SHM203": true, "SHM204": true, "SHM205": true,
}

// Verdict is the doctor's verdict on one service: "fails" with the rules that say so, or
// "passes".
func Verdict(findings []Finding, service string) (fails bool, rules []string) {
	for _, f := range findings {
		if f.Service != service || !sizeRules[f.Rule] || f.Severity == "info" {
			continue
		}
		rules = append(rules, f.Rule)
	}
	return len(rules) > 0, rules
}

// Scenario is one stack of testdata/lab.
type Scenario struct {
	Name    string
	Dir     string
	Service string // the stack's one service
	Expect  string // the real outcome the scenario is built to show (x-lab.expect)
	Note    string // the compose file's first comment line
	// Loader is the DataLoader declaration, nil for other workloads.
	Loader *Loader
	Env    map[string]string // the service's environment, written as a mapping
}

// Loader is a DataLoader declaration: x-shmdoctor.dataloader.
type Loader struct {
	Workers, Prefetch, BatchBytes int64
	Persistent                    bool
	StartMethod                   string // fork unless declared
}

// OldNeed is the need the doctor estimated before the lab: (workers × prefetch + 1) × batch.
func (l *Loader) OldNeed() int64 { return (l.Workers*l.Prefetch + 1) * l.BatchBytes }

// ReadScenario reads dir/compose.yaml: its one service, x-lab.expect and the DataLoader
// declaration.
func ReadScenario(name, dir string) (*Scenario, error) {
	path := dir + "/compose.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Lab struct {
			Expect string `yaml:"expect"`
		} `yaml:"x-lab"`
		Services map[string]struct {
			Env    map[string]string `yaml:"environment"`
			Intent struct {
				Dataloader *struct {
					Workers    int64  `yaml:"workers"`
					Prefetch   *int64 `yaml:"prefetch_factor"`
					Batch      string `yaml:"batch_bytes"`
					Persistent bool   `yaml:"persistent_workers"`
					Start      string `yaml:"start_method"`
				} `yaml:"dataloader"`
			} `yaml:"x-shmdoctor"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(doc.Services) != 1 {
		return nil, fmt.Errorf("%s: a lab stack has one service, not %d", path, len(doc.Services))
	}
	switch doc.Lab.Expect {
	case Pass, BusError, ENOSPC, OOM, Crash:
	default:
		return nil, fmt.Errorf("%s: x-lab.expect %q is not one of pass, bus_error, enospc, oom_137, crash", path, doc.Lab.Expect)
	}
	s := &Scenario{Name: name, Dir: dir, Expect: doc.Lab.Expect}
	if first, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(first, "# ") {
		s.Note = strings.TrimPrefix(first, "# ")
	}
	for svc, v := range doc.Services {
		s.Service, s.Env = svc, v.Env
		if d := v.Intent.Dataloader; d != nil {
			batch, err := parseMiB(d.Batch)
			if err != nil {
				return nil, fmt.Errorf("%s: batch_bytes: %w", path, err)
			}
			l := &Loader{Workers: d.Workers, Prefetch: 2, BatchBytes: batch, Persistent: d.Persistent, StartMethod: "fork"}
			if d.Start != "" {
				l.StartMethod = d.Start
			}
			if d.Prefetch != nil {
				l.Prefetch = *d.Prefetch
			}
			s.Loader = l
		}
	}
	return s, nil
}

// LoaderEnv is the environment testdata/lab/loader.py reads to run loader l.
func (l *Loader) LoaderEnv() map[string]string {
	flag := map[bool]string{false: "0", true: "1"}
	return map[string]string{
		"WORKERS":      fmt.Sprint(l.Workers),
		"PREFETCH":     fmt.Sprint(l.Prefetch),
		"BATCH":        fmt.Sprint(l.BatchBytes >> 20),
		"PERSISTENT":   flag[l.Persistent],
		"START_METHOD": l.StartMethod,
	}
}

// parseMiB reads the lab's batch sizes, written as "24MiB".
func parseMiB(s string) (int64, error) {
	var n int64
	if _, err := fmt.Sscanf(s, "%dMiB", &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size in MiB such as 24MiB", s)
	}
	return n << 20, nil
}
