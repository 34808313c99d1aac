package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/spf13/pflag"
)

const checkUsage = `shmdoctor finds /dev/shm and IPC misconfiguration in Docker Compose stacks
and Kubernetes manifests.

Usage:
  shmdoctor [flags] [PATH...]
  shmdoctor --fix [PATH...]       print a diff that fixes the mechanical findings
  shmdoctor --fix --write         apply it to the files
  shmdoctor rules                 list the rules
  shmdoctor explain SHM001        print a rule's documentation (or by name:
                                  shmdoctor explain ipc-host)
  shmdoctor host [--need 8g]      describe the Docker host for onboarding scripts
  shmdoctor probe --clean         remove probe images and leftover probe containers
  shmdoctor watch [PATH]          size shm_size from what the running stack really uses
  shmdoctor baseline [PATH...]    accept today's findings; later runs with --baseline
                                  .shmdoctor-baseline.json report only new ones
  shmdoctor version               (also --version, -V)
  shmdoctor help [COMMAND]        this help, or a command's

With no PATH, the project is found as docker compose finds it: COMPOSE_FILE, or
compose.yaml / compose.yml / docker-compose.yaml / docker-compose.yml (plus the
matching override file) in this folder or the nearest parent. A PATH may be a compose
file, a folder (treated as docker compose treats its working folder, .env included),
or - to read one compose file from standard input. Each PATH is its own project.

A file (or standard input) whose documents have apiVersion and kind is a Kubernetes
manifest, multi-document files included; a folder without a compose file, and -r,
take every manifest in it, one project per file. Render Helm charts first:
helm template ... | shmdoctor -, kustomize build ... | shmdoctor -. Manifests are
never probed.

When a Docker daemon answers (--probe auto), every service is then started in a
throwaway container with the same shared-memory settings, from a probe image built
locally from this binary (never pulled): the real /dev/shm is measured and a bounded
write probe reproduces ENOSPC, SIGBUS or an OOM kill. Prediction and measurement are
printed side by side; nothing is left behind.

A comment "# shmdoctor-ignore SHM020 reason" (or the rule's name, ipc-host) on a
line, or alone on the line above,
suppresses those rules' findings there; on (or above) a service key or a Kubernetes
container's name, in the whole service. x-shmdoctor.ignore and the shmdoctor.io/ignore
annotation do the same. Suppressed findings are counted, listed with --show-suppressed
and kept in SARIF; a suppression that matches nothing is reported (SHM090).

-r also checks the compose variants beside the default names (any .yml/.yaml whose
name or folder contains "compose" and that has services: docker-compose.gpu.yml,
compose.cuda.yaml, deploy/compose/nims.yaml; and any YAML file with only compose's keys
and complete services):
an overlay of the folder's default file as -f base -f variant, a complete stack alone;
the report says which.

Settings are read from .shmdoctor.yaml (or .shmdoctor.yml) in this folder or the
nearest parent (--config names another, --no-config reads none): policy, target,
fail-on, need, severity (per rule), ignore (rule IDs or names, such as ipc-host)
and ignore-paths (globs relative to the file). Flags win.

Examples:
  shmdoctor                                  # the project in this folder
  shmdoctor -f compose.yaml -f compose.gpu.yaml
  shmdoctor -r .                             # every project in a monorepo
  helm template ./chart | shmdoctor -        # a rendered Helm chart
  shmdoctor --format json --fail-on error deploy/
  shmdoctor --format text --format sarif -o - -o out.sarif  # log and SARIF
  shmdoctor --need 8g --policy isolation

--fix prints a unified diff (patch -p1, git apply) for the findings a mechanical
change resolves: an ignored shm_size removed, shm_size sized to the workload, the
NVIDIA ulimits, a /dev/shm emptyDir in a pod. Comments, quoting and the rest of the
file are left as they are; what it does not fix, and why, goes to stderr. Nothing is
probed. --fix --write applies the diff instead of printing it.

Exit status: 0 nothing at or above --fail-on, 1 findings at or above it,
2 usage or load errors, 130 interrupted. With --fix: 0 nothing to fix, 1 a diff
was printed; --fix --write: 0 once the files are written.

Flags:
`

type checkFlags struct {
	load      compose.Options
	need      string
	formats   []string
	outputs   []string
	failOn    string
	policy    string
	target    string
	probe     string
	probeWait time.Duration
	write     string
	color     string
	quiet     bool
	verbose   bool
	// config is --config; noConfig is --no-config.
	config         string
	noConfig       bool
	showSuppressed bool
	// ignore is --ignore: rule IDs or names, repeated or comma-separated.
	ignore   []string
	fix      bool
	fixWrite bool
	// sourceRoot is --source-root: what SARIF names files relative to.
	sourceRoot string
	// baseline is --baseline: the findings it holds are suppressed.
	baseline string
	// writeBaseline is the baseline command: the report is a baseline file.
	writeBaseline bool
}

func check(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return checkOrBaseline(ctx, args, stdin, stdout, stderr, false)
}

// checkOrBaseline is the check, or with writeBaseline the baseline command: the same
// analysis and probe, written as a baseline file.
func checkOrBaseline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, writeBaseline bool) (int, error) {
	f := checkFlags{writeBaseline: writeBaseline}
	fs := pflag.NewFlagSet("shmdoctor", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	addComposeFlags(fs, &f.load)
	fs.BoolVarP(&f.load.Recursive, "recursive", "r", false, "analyse every compose project and variant (docker-compose.gpu.yml) under the folders given (skips .git, node_modules, vendor)")
	fs.BoolVar(&f.load.AllowEmpty, "allow-empty", false, "with -r: a folder with no compose project or Kubernetes manifest is not an error (pre-commit hooks)")
	fs.BoolVar(&f.load.StrictEnv, "strict-env", false, "treat unset variables and missing env files as errors, as docker compose does")
	fs.StringVar(&f.need, "need", "", "the /dev/shm every service needs, such as 8g (overrides x-shmdoctor)")
	fs.StringArrayVar(&f.formats, "format", []string{"text"}, "output `format`: "+report.FormatNames()+" (repeatable, with one --output each)")
	fs.StringArrayVarP(&f.outputs, "output", "o", nil, "write the report to this `file`, atomically, keeping its mode and owner (a device or FIFO in place; never an input, a read-only file, or through a symlink that leads out of the project root); - is standard output (one per --format, in order)")
	fs.StringVar(&f.failOn, "fail-on", "warning", "exit 1 on findings at or above: error|warning|info|never")
	fs.StringVar(&f.policy, "policy", "stability", "remediation strategy around ipc: host: stability (keep it) | isolation (replace it)")
	fs.StringVar(&f.target, "target", "compose", "deployment engine: compose|swarm|podman (podman when the probe finds Podman and no target is given)")
	probeDefault, probeHelp := "auto", "measure /dev/shm in throwaway containers: auto|always|never"
	if writeBaseline {
		probeDefault, probeHelp = "never", "measure /dev/shm in throwaway containers: auto|always|never (writing a baseline starts none unless asked)"
	}
	fs.StringVar(&f.probe, "probe", probeDefault, probeHelp)
	fs.DurationVar(&f.probeWait, "probe-timeout", 60*time.Second, fmt.Sprintf("time limit for the whole probe, the daemon's first answer included; removing the containers may take %s more (the cleanup grace)", engine.CleanupGrace))
	fs.StringVar(&f.write, "write-probe", "auto", "write probe target: auto, off, or a size such as 512m")
	fs.StringVar(&f.sourceRoot, "source-root", "", "SARIF names files relative to this `folder` (default: the git repository holding the working folder, else the working folder)")
	fs.StringVar(&f.color, "color", "auto", "colour: auto|always|never (auto follows the terminal, NO_COLOR and FORCE_COLOR)")
	noColor := fs.Bool("no-color", false, "no colour: --color never")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors and warnings: no info, table or notes")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "show how each service's /dev/shm was derived, and the config file read")
	fs.StringArrayVar(&f.ignore, "ignore", nil, "do not report this `rule`'s findings: an ID or a name, such as SHM030 or gpu-ulimits (repeatable, or comma-separated; counted as suppressed, as the config file's ignore)")
	fs.BoolVar(&f.showSuppressed, "show-suppressed", false, "list suppressed findings too (text and JSON; SARIF always records them)")
	fs.StringVar(&f.config, "config", "", "read settings from this `file` (default: .shmdoctor.yaml here or in the nearest parent)")
	fs.BoolVar(&f.noConfig, "no-config", false, "read no config file")
	fs.BoolVar(&f.fix, "fix", false, "print a unified diff that fixes the mechanical findings, instead of the report")
	fs.BoolVar(&f.fixWrite, "write", false, "with --fix: apply the fixes to the files instead of printing the diff")
	fs.StringVar(&f.baseline, "baseline", "", "report only findings that this baseline `file` (written by shmdoctor baseline) does not hold")
	showVersion := fs.BoolP("version", "V", false, "print the version and exit (as shmdoctor version)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return exitUsage, flagError(fs, err)
	}
	if *help {
		usage := checkUsage
		if writeBaseline {
			usage = baselineUsage
		}
		fmt.Fprint(stdout, fitHelp(usage, helpWidth)+flagUsages(fs))
		return exitClean, nil
	}
	if *showVersion {
		return version(ctx, nil, stdin, stdout, stderr)
	}
	if err := noColorFlag(fs, *noColor, &f.color); err != nil {
		return exitUsage, err
	}
	f.load.Paths = fs.Args()
	f.load.Stdin = stdin
	conf, err := f.loadConfig(fs)
	if err != nil {
		return exitUsage, err
	}
	if err := f.baselineMode(fs); err != nil {
		return exitUsage, err
	}
	renders, cfg, failOn, err := f.validate()
	if err == nil {
		err = validateFix(&f, fs)
	}
	if err != nil {
		return exitUsage, err
	}
	ignored, err := ignoreFlags(f.ignore)
	if err != nil {
		return exitUsage, err
	}
	cfg.Severity, cfg.Ignore = conf.Severity, append(slices.Clone(conf.Ignore), ignored...)
	d := inferTarget(ctx, &f, fs.Changed("target") || conf.Target != "" || f.fix)
	if d != nil && d.close != nil {
		defer d.close()
	}
	if d != nil && d.err == nil {
		cfg.Target = engine.TargetOf(d.engine)
	}
	srcRoot, err := sourceRoot(f.sourceRoot, fs.Changed("source-root"))
	if err != nil {
		return exitUsage, err
	}

	f.load.Target = cfg.Target
	projects := compose.Load(ctx, f.load)
	if err := refuseInputs(f.outputs, append(inputFiles(projects, &f.load, conf.Path), f.baseline)); err != nil {
		return exitUsage, err
	}
	if f.fix {
		return fixProjects(projects, cfg, &f, stdout, stderr)
	}
	rep := &report.Report{Version: versionString(), Config: conf.Path, SourceRoot: srcRoot}
	static := map[*report.Project][]analyze.Finding{}
	for _, p := range projects {
		rp := &report.Project{Project: p}
		if p.Loaded() {
			static[rp] = rules.Check(p, cfg)
		}
		rep.Projects = append(rep.Projects, rp)
	}
	probed := map[*report.Project][]analyze.Finding{}
	probing := f.probe != "never" && rep.Errors() == 0 || f.probe == "always"
	if ctx.Err() != nil && !probing {
		return exitInterrupted, ctx.Err()
	}
	if probing {
		if err := probeAll(ctx, &f, d, rep, cfg, probed, stderr); err != nil && ctx.Err() == nil {
			return exitUsage, fmt.Errorf("probe: %w", err)
		}
	}
	// Ctrl-C during the probe: what was found before it still makes a report, which says
	// so, and the exit status says the run was interrupted.
	interrupted := ctx.Err() != nil
	if interrupted {
		rep.Interrupted = true
		rep.ProbeNote = "interrupted (Ctrl-C): the report holds what was found before it"
	}
	if interrupted && f.writeBaseline {
		return exitInterrupted, ctx.Err() // a baseline of half a probe would accept too little
	}
	settle(rep, static, probed)
	if f.baseline != "" {
		if err := applyBaseline(rep, f.baseline); err != nil {
			return exitUsage, err
		}
	}
	for i, render := range renders {
		o := report.Options{Verbose: f.verbose, Quiet: f.quiet, ShowSuppressed: f.showSuppressed, FailOn: failOn, Width: textWidth(nil)}
		if out := f.outputs[i]; out != "-" {
			var b bytes.Buffer
			err := render(&b, rep, o)
			if err == nil {
				err = writeFile(out, analyze.SecretsOf(ctx).Scrub(b.Bytes()))
			}
			if err != nil {
				return exitUsage, fmt.Errorf("writing %s report: %w", f.formats[i], err)
			}
			continue
		}
		o.Color = useColor(f.color, stdout)
		o.Width = textWidth(stdout)
		if err := render(stdout, rep, o); err != nil {
			return exitUsage, fmt.Errorf("writing report: %w", err)
		}
	}
	if f.writeBaseline {
		n := rep.Summarize().Reported()
		note, out := stdout, report.Visible(f.outputs[0])
		if f.outputs[0] == "-" {
			note = stderr // stdout holds the baseline, which must stay JSON
		}
		fmt.Fprintf(note, "wrote %d %s to %s: later runs with --baseline %s report only new findings\n", n, plural(n, "finding", "findings"), out, out)
	}
	switch {
	case interrupted:
		return exitInterrupted, nil
	case rep.Errors() > 0:
		return exitUsage, nil
	case failOn != 0 && rep.Worst() >= failOn:
		return exitFindings, nil
	}
	return exitClean, nil
}

// settle makes each project's findings from its static ones and the probe's: a measurement
// that reproduces a prediction becomes the predicting finding's evidence, a variant leaves
// out what its base project reports at the same place, and a finding in a file several
// projects read is reported once, naming them all.
func settle(rep *report.Report, static, probed map[*report.Project][]analyze.Finding) {
	final := map[*analyze.Project][]analyze.Finding{}
	for _, rp := range rep.Projects {
		fs := analyze.WithEvidence(rules.All, rp.Project, static[rp], probed[rp], rp.Measurements)
		if v := rp.Variant; v != nil {
			fs = v.Unrepeated(fs, final[v.Of])
		}
		final[rp.Project] = fs
		rp.Findings = fs
	}
	rep.OnePerPlace()
}

// inputFiles lists every file the projects were read from, as far as the doctor knows them:
// the paths and flags given, the compose files and what they include or extend, manifests,
// env files, and the config file.
func inputFiles(projects []*analyze.Project, o *compose.Options, config string) []string {
	files := slices.Concat(o.Paths, o.Files, o.EnvFiles, []string{config})
	for _, p := range projects {
		files = append(files, p.Files...)
		if p.Doc != nil {
			files = append(files, p.Doc.FilesRead()...)
		}
		if p.Dir != "" {
			files = append(files, filepath.Join(p.Dir, ".env"))
		}
		files = append(files, p.EnvFiles...)
	}
	return files
}

// refuseInputs is a usage error when an output is one of the input files, under its own
// name or another (a symlink, a hard link): the report would overwrite what it is about.
func refuseInputs(outputs, inputs []string) error {
	for _, out := range outputs {
		ost, err := os.Stat(out)
		if out == "-" || err != nil {
			continue
		}
		for _, in := range inputs {
			if in == "" || in == "-" || in == analyze.StdinName {
				continue
			}
			if ist, err := os.Stat(in); err == nil && ist.Mode().IsRegular() && os.SameFile(ost, ist) {
				return usagef("--output %s is %s, an input of this run: write the report to another file", out, in)
			}
		}
	}
	return nil
}

// sourceRoot is the absolute folder SARIF names files relative to: dir when it was given,
// else the nearest folder at or above the working folder holding .git (a folder, or the
// file of a worktree or submodule), else the working folder. Not given, it is also the
// project root that outputs follow no symlink out of (see locate).
func sourceRoot(dir string, given bool) (string, error) {
	if given {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", usagef("--source-root %q: %v", dir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", usagef("--source-root %q is not a folder", dir)
		}
		return abs, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the source root: %w", err)
	}
	for d := cwd; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return cwd, nil
		}
	}
}

// addComposeFlags adds docker compose's own project flags, which every command that loads a
// compose project takes.
func addComposeFlags(fs *pflag.FlagSet, o *compose.Options) {
	fs.StringArrayVarP(&o.Files, "file", "f", nil, "compose file (repeatable, merged into one project as with docker compose -f)")
	fs.StringVar(&o.ProjectDir, "project-directory", "", "the project's working folder (default: the first compose file's folder)")
	fs.StringArrayVar(&o.EnvFiles, "env-file", nil, "environment file for interpolation (repeatable; default: the project folder's .env)")
	fs.StringVarP(&o.ProjectName, "project-name", "p", "", "project name")
	fs.StringArrayVar(&o.Profiles, "profile", nil, "analyse only services enabled by this profile (repeatable; default: every service)")
	fs.StringArrayVar(&o.AllowOutside, "allow-outside", nil, "also read includes, extends, env files and .env from this `folder` (repeatable; default: only inside the git repository holding the project, else the folder given)")
}

func (f *checkFlags) validate() ([]report.Renderer, analyze.Config, analyze.Severity, error) {
	var cfg analyze.Config
	renders, err := f.validateOutputs()
	if err != nil {
		return nil, cfg, 0, err
	}
	var failOn analyze.Severity
	if f.failOn != "never" {
		s, err := analyze.ParseSeverity(f.failOn)
		if err != nil {
			return nil, cfg, 0, usagef("--fail-on: %v, or never", err)
		}
		failOn = s
	}
	switch p := analyze.Policy(f.policy); p {
	case analyze.PolicyStability, analyze.PolicyIsolation:
		cfg.Policy = p
	default:
		return nil, cfg, 0, usagef("--policy %q: use stability or isolation", f.policy)
	}
	switch t := analyze.Target(f.target); t {
	case analyze.TargetCompose, analyze.TargetSwarm, analyze.TargetPodman:
		cfg.Target = t
	default:
		return nil, cfg, 0, usagef("--target %q: use compose, swarm or podman", f.target)
	}
	if f.need != "" {
		n, err := analyze.ParseSize(f.need)
		if err != nil {
			return nil, cfg, 0, usagef("--need: %v", err)
		}
		f.load.Need = &n
	}
	switch f.probe {
	case "auto", "always", "never":
	default:
		return nil, cfg, 0, usagef("--probe %q: use auto, always or never", f.probe)
	}
	if f.write != "auto" && f.write != "off" {
		if _, err := analyze.ParseSize(f.write); err != nil {
			return nil, cfg, 0, usagef("--write-probe: %v, or auto or off", err)
		}
	}
	switch f.color {
	case "auto", "always", "never":
	default:
		return nil, cfg, 0, usagef("--color %q: use auto, always or never", f.color)
	}
	if f.quiet && f.verbose {
		return nil, cfg, 0, usagef("--quiet and --verbose exclude each other")
	}
	if len(slices.DeleteFunc(slices.Clone(f.load.Paths), func(p string) bool { return p != "-" })) > 1 {
		return nil, cfg, 0, usagef("standard input can be read once: give - only once")
	}
	return renders, cfg, failOn, nil
}

// ignoreFlags reads --ignore: each value names rules by ID (any case) or name, parted by
// commas or blanks. They silence their rules' findings everywhere, as an ignore entry of
// the config file does, so that they are counted as suppressed and never reported; an
// unknown rule is a usage error, not a silent no-op.
func ignoreFlags(values []string) ([]analyze.ConfigIgnore, error) {
	var ids []string
	for _, v := range values {
		toks := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(toks) == 0 {
			return nil, usagef("--ignore needs a rule ID or name, such as SHM030 or gpu-ulimits")
		}
		for _, tok := range toks {
			r := ruleNamed(tok)
			if r == nil {
				return nil, usagef("--ignore %s: no such rule (see shmdoctor rules)", tok)
			}
			if !slices.Contains(ids, r.ID) {
				ids = append(ids, r.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return []analyze.ConfigIgnore{{Kind: analyze.SuppressFlag, Rules: ids}}, nil
}

// validateOutputs pairs every --format with its --output, in order; a single format with no
// --output goes to standard output.
func (f *checkFlags) validateOutputs() ([]report.Renderer, error) {
	var renders []report.Renderer
	for _, name := range f.formats {
		render, ok := report.Formats[name]
		if !ok {
			return nil, usagef("unknown format %q: use %s", name, report.FormatNames())
		}
		renders = append(renders, render)
	}
	if len(f.outputs) == 0 && len(f.formats) == 1 {
		f.outputs = []string{"-"}
	}
	if len(f.outputs) != len(f.formats) {
		return nil, usagef("%d --format and %d --output: give one --output per --format, in the same order (- for standard output)", len(f.formats), len(f.outputs))
	}
	seen := map[string]bool{}
	for _, out := range f.outputs {
		key := out
		if out != "-" {
			key = filepath.Clean(out)
		}
		if out == "" {
			return nil, usagef("--output needs a file name, or - for standard output")
		}
		if seen[key] {
			return nil, usagef("--output %s is given twice: each report needs its own", out)
		}
		seen[key] = true
	}
	return renders, nil
}

// useColor decides colour: --color (and --no-color) win, then FORCE_COLOR, then NO_COLOR
// and TERM=dumb, then whether out is a terminal. FORCE_COLOR is for CI logs that render
// colour without being terminals; FORCE_COLOR=0 or false asks for none, even on a
// terminal, as Node's and chalk's readers of it take it.
func useColor(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	switch v := os.Getenv("FORCE_COLOR"); v {
	case "":
	case "0", "false":
		return false
	default:
		return true
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(out)
}

// noColorFlag applies --no-color to --color: the two agree or it is a usage error.
func noColorFlag(fs *pflag.FlagSet, noColor bool, color *string) error {
	if !noColor {
		return nil
	}
	if fs.Changed("color") && *color != "never" {
		return usagef("--no-color and --color %s exclude each other", *color)
	}
	*color = "never"
	return nil
}

// textWidth is the width text is laid out for: COLUMNS when it holds a number, else the
// width of the terminal out is (nil for a file), else report.DefaultWidth.
func textWidth(out io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := out.(interface{ Fd() uintptr }); ok && isTerminal(out) {
		if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
			return w
		}
	}
	return report.DefaultWidth
}

// isTerminal reports whether w is a terminal: a file, or a writer on one (scrubbed).
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(f.Fd())
}
