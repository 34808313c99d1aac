package main

import (
	"context"
	"fmt"
	"io"

	"github.com/shmdoctor/shmdoctor/analyze/source"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/spf13/pflag"
)

// defaultBaseline is the file shmdoctor baseline writes when no --output names one.
const defaultBaseline = ".shmdoctor-baseline.json"

const baselineUsage = `Usage: shmdoctor baseline [flags] [PATH...]

Runs the check as shmdoctor [flags] [PATH...] does, without the probe unless asked
(--probe never is the default here: writing a baseline starts no container), and writes the
findings it reports to .shmdoctor-baseline.json (or -o FILE) instead of printing them.
Commit the file; later runs with --baseline FILE report only the findings it does not hold,
and only those count for --fail-on. A finding is matched by its rule, service, file and
message, not its line: it stays accepted when lines above it move, and a changed value is a
new finding. To accept the probe's findings too, give --probe auto or always: a later run
that probes reports them as new otherwise.

Example:
  shmdoctor baseline -r .                     # adopt: accept what is there today
  shmdoctor -r --baseline .shmdoctor-baseline.json .   # CI: fail on new findings only

Flags:
`

// baseline is shmdoctor baseline.
func baseline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return checkOrBaseline(ctx, args, stdin, stdout, stderr, true)
}

// baselineMode makes the baseline command's report the baseline file: one output, no
// failing findings.
func (f *checkFlags) baselineMode(fs *pflag.FlagSet) error {
	if !f.writeBaseline {
		return nil
	}
	for _, flag := range []string{"format", "baseline", "fix", "write"} {
		if fs.Changed(flag) {
			return usagef("baseline: --%s does not apply: the command writes a baseline file (-o names it)", flag)
		}
	}
	if len(f.outputs) > 1 {
		return usagef("baseline: one -o, the baseline file")
	}
	f.formats = []string{"baseline"}
	if len(f.outputs) == 0 {
		f.outputs = []string{defaultBaseline}
	}
	f.failOn = "never"
	return nil
}

// applyBaseline suppresses the findings the baseline file holds.
func applyBaseline(rep *report.Report, file string) error {
	data, err := source.ReadInput(file)
	if err != nil {
		return usagef("--baseline: %v", err)
	}
	b, err := report.ParseBaseline(data, file)
	if err != nil {
		return usagef("--baseline %v", err)
	}
	_, err = rep.ApplyBaseline(b, file)
	if err != nil {
		return fmt.Errorf("applying the baseline: %w", err)
	}
	return nil
}
