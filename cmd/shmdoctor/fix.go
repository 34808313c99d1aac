package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/spf13/pflag"
)

// validateFix checks the flags that --fix and --write change the meaning of.
func validateFix(f *checkFlags, fs *pflag.FlagSet) error {
	switch {
	case f.fixWrite && !f.fix:
		return usagef("--write applies the fixes of --fix: give both")
	case !f.fix:
		return nil
	case fs.Changed("format") || fs.Changed("output"):
		return usagef("--fix prints a diff, not a report: --format and --output do not apply")
	case f.fixWrite && slices.Contains(f.load.Paths, "-"):
		return usagef("--write cannot write to standard input: use --fix alone for a diff")
	}
	return nil
}

// fixProjects prints the fixes of every project as one unified diff on stdout, with what
// was and was not fixed on stderr, or with --write applies them to the files and prints
// that on stdout. Projects are fixed from their files as loaded: when two projects' fixes
// edit one file, the later project's wait for the next run. Every line it prints but the
// diff's is escaped as report.Visible escapes it, the diff as report.VisiblePatch does.
func fixProjects(projects []*analyze.Project, cfg analyze.Config, f *checkFlags, stdout, stderr io.Writer) (int, error) {
	log := stderr
	if f.fixWrite {
		log = stdout
	}
	if f.quiet {
		log = io.Discard
	}
	// Without --write nothing is fixed yet: the lines say what the diff would fix.
	done := "would fix"
	if f.fixWrite {
		done = "fixed"
	}
	// lines say what became of each finding, once the files are written or the diff printed.
	var lines bytes.Buffer
	var changes []fix.FileChange
	claimed := map[string]bool{}
	var fixed, skipped, cannot, decide, failed int
	for _, p := range projects {
		for _, e := range p.Errors {
			fmt.Fprintf(stderr, "shmdoctor: %s\n", report.Visible(e.Error()))
			failed++
		}
		if !p.Loaded() {
			continue
		}
		findings := rules.Check(p, cfg)
		var fixes []*analyze.Fix
		for _, fd := range findings {
			if fd.Fix != nil && !touches(fd.Fix, claimed) {
				fixes = append(fixes, fd.Fix)
			}
		}
		pt, err := fix.Apply(p, fixes)
		if err != nil {
			return exitUsage, err
		}
		for _, c := range pt.Files {
			claimed[c.Path] = true
		}
		changes = append(changes, pt.Files...)
		for _, fd := range findings {
			if fd.Suppressed != nil {
				continue // kept on purpose: neither fixed nor a decision left to take
			}
			at := report.Visible(fmt.Sprintf("%s: %s %s", fd.Pos, fd.Rule, fd.Service))
			switch {
			case fd.Fix != nil && slices.Contains(pt.Applied, fd.Fix):
				fixed++
				fmt.Fprintf(&lines, "%s: %s: %s\n", at, done, report.Visible(fd.Fix.Description))
			case fd.Fix != nil:
				skipped++
				fmt.Fprintf(&lines, "%s: left for the next run: the fix overlaps another\n", at)
			case fd.NoFix != "":
				cannot++
				fmt.Fprintf(&lines, "%s: not fixed: %s\n", at, report.Visible(fd.NoFix))
			default:
				decide++
			}
		}
	}
	if f.fixWrite {
		if err := replaceFiles(changes); err != nil {
			return exitUsage, err
		}
	} else {
		for _, c := range changes {
			if _, err := io.WriteString(stdout, report.VisiblePatch(c.Diff())); err != nil {
				return exitUsage, fmt.Errorf("writing the diff: %w", err)
			}
		}
	}
	lines.WriteTo(log)
	if f.fixWrite {
		for _, c := range changes {
			fmt.Fprintf(log, "wrote %s\n", report.Visible(c.Name))
		}
	}
	files := fmt.Sprintf("%d %s", len(changes), plural(len(changes), "file", "files"))
	switch {
	case fixed+skipped+cannot+decide == 0:
		fmt.Fprint(log, "nothing to fix")
	case f.fixWrite:
		fmt.Fprintf(log, "%d %s fixed in %s", fixed, plural(fixed, "finding", "findings"), files)
	default:
		fmt.Fprintf(log, "would fix %d %s in %s", fixed, plural(fixed, "finding", "findings"), files)
	}
	if cannot > 0 {
		fmt.Fprintf(log, ", %d cannot be fixed here", cannot)
	}
	if decide > 0 {
		fmt.Fprintf(log, ", %d %s a decision (see the report)", decide, plural(decide, "takes", "take"))
	}
	if skipped > 0 {
		fmt.Fprintf(log, "; %d overlap other fixes: run --fix again once these are applied", skipped)
	}
	if fixed > 0 && !f.fixWrite {
		fmt.Fprint(log, "; run with --write to apply")
	}
	fmt.Fprintln(log)
	switch {
	case failed > 0:
		return exitUsage, nil
	case len(changes) > 0 && !f.fixWrite:
		return exitFindings, nil
	}
	return exitClean, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// touches reports whether a fix edits a file another project has already changed.
func touches(fx *analyze.Fix, claimed map[string]bool) bool {
	for _, e := range fx.Edits {
		if claimed[e.Path] {
			return true
		}
	}
	return false
}

// replaceFiles writes fixed files all or none: every file is checked and staged first (see
// prepareWrite), and only then are they written. A file that changed since the doctor read
// it, or that cannot be written, leaves every file as it was.
func replaceFiles(changes []fix.FileChange) error {
	var staged []*pendingWrite
	defer func() {
		for _, w := range staged {
			w.discard() // nothing once committed
		}
	}()
	for _, c := range changes {
		w, err := stageFile(c)
		if err != nil {
			return fmt.Errorf("writing %s: %w (no file was written)", c.Name, err)
		}
		staged = append(staged, w)
	}
	for i, w := range staged {
		if err := w.commit(); err != nil {
			done := ""
			if i > 0 {
				done = fmt.Sprintf(" (%d of %d files were written)", i, len(staged))
			}
			return fmt.Errorf("writing %s: %w%s", changes[i].Name, err, done)
		}
	}
	return nil
}

// stageFile stages a fixed file (through a symlink within the project root to its target,
// so the link stays; see locate). A file that changed since the doctor read it is refused.
func stageFile(c fix.FileChange) (*pendingWrite, error) {
	p, err := locate(c.Path)
	if err != nil {
		return nil, err
	}
	same, err := p.holds(c.Before)
	if err == nil && !same {
		err = fmt.Errorf("the file changed since it was read: run the fix again")
	}
	if err != nil {
		p.dir.Close()
		return nil, err
	}
	return p.prepare(c.After)
}
