//go:build hostile

package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// bin is the doctor under test, built by make hostile.
var bin string

// guard ends a run that has not ended by then: it stops a runaway, and the run fails.
const guard = 60 * time.Second

func TestMain(m *testing.M) {
	bin = os.Getenv("SHMDOCTOR_BIN")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "SHMDOCTOR_BIN must name the built doctor (make hostile sets it)")
		os.Exit(2)
	}
	code := m.Run()
	printMatrix(os.Stdout)
	os.Exit(code)
}

// row is a line of the matrix: a class of attack, what must hold, how many cases were
// tried and how many broke it, and a figure worth reading (the slowest run, the most
// memory).
type row struct {
	class, holds string
	cases        int
	broken       int
	figure       string
}

var (
	matrixMu sync.Mutex
	matrix   []*row
)

func newRow(class, holds string) *row {
	r := &row{class: class, holds: holds}
	matrixMu.Lock()
	matrix = append(matrix, r)
	matrixMu.Unlock()
	return r
}

// tried counts a case, and a broken one when err is not nil.
func (r *row) tried(t *testing.T, what string, err error) {
	t.Helper()
	matrixMu.Lock()
	r.cases++
	if err != nil {
		r.broken++
	}
	matrixMu.Unlock()
	if err != nil {
		t.Errorf("%s: %s: %v", r.class, what, err)
	}
}

func printMatrix(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCLASS\tMUST HOLD\tCASES\tBROKEN\tFIGURE")
	for _, r := range matrix {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.class, r.holds, r.cases, r.broken, r.figure)
	}
	tw.Flush()
}

// result is one run of the doctor.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	killed         bool
}

// doctor runs the doctor in dir with env added to the environment, and ends it at guard.
// wrap, when given, is the command line that runs it (a memory cgroup).
func doctor(t *testing.T, dir string, env []string, wrap []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	argv := append(append(slices.Clone(wrap), bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"NO_COLOR=1", "COLUMNS=80"}, env...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), killed: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running the doctor: %v", err)
	}
	return r
}

// project writes files (paths relative to a new folder, which holds a .git folder so that
// it is the project root) and returns the folder.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{".git/HEAD": "ref: refs/heads/main\n"}
	for name, body := range files {
		all[name] = body
	}
	return testutil.WriteFiles(t, all)
}

// reportArgs writes every format: text on standard output, the others into dir.
func reportArgs(dir string) []string {
	args := []string{"--format", "text", "-o", "-"}
	for _, f := range []string{"json", "sarif", "junit", "github", "codeclimate"} {
		args = append(args, "--format", f, "-o", filepath.Join(dir, "out."+f))
	}
	return args
}

// outputs collects what a run printed and the report files it wrote into dir, and removes
// the files so that the next run writes its own.
func outputs(r result, dir string) map[string]string {
	out := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
	written, _ := filepath.Glob(filepath.Join(dir, "out.*"))
	written = append(written, filepath.Join(dir, "baseline.json"))
	for _, f := range written {
		if b, err := os.ReadFile(f); err == nil {
			out[filepath.Base(f)] = string(b)
			os.Remove(f)
		}
	}
	return out
}

// checkOutputs holds every output to what its kind must keep: JSON and XML reports parse and
// their strings are visible, text is visible, the github report holds only its commands.
func checkOutputs(outs map[string]string, fix bool) error {
	for where, text := range outs {
		var err error
		switch where {
		case "out.json", "out.sarif", "out.codeclimate", "baseline.json":
			err = testutil.CheckJSON([]byte(text))
		case "out.junit":
			err = testutil.CheckXML([]byte(text))
		case "out.github":
			err = testutil.CheckVisible(text, testutil.GitHubCommand)
		case "stdout":
			if fix {
				err = testutil.CheckPatch(text)
			} else {
				err = testutil.CheckVisible(text, nil)
			}
		default:
			err = testutil.CheckVisible(text, nil)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// secretRuns are the runs of the secret grid over the project in dir: every format, --fix,
// and a baseline.
func secretRuns(dir, probe string) [][]string {
	return [][]string{
		append([]string{"-v", "--probe", probe, "."}, reportArgs(dir)...),
		{"--fix", "."},
		{"baseline", "--probe", probe, "-o", "baseline.json", "."},
	}
}

// neutral is a value no secret shares a run with: the control for what the doctor prints
// whatever the value.
const neutral = "n3utr4l-v4lu3-0000"

// probeKeys are the keys of testutil.SecretKeys the probe reads: the probed grid runs them.
var probeKeys = []string{"shm_size", "shm_size-suffix", "ipc", "ipc-service", "ipc-container", "name",
	"name-prefix", "volumes-shm", "volumes-long", "tmpfs-size", "mem_limit", "deploy-memory", "ulimits",
	"container_name", "runtime-nvidia-envs"}

// TestSecrets puts each shape of secret into each key, from the environment as CI has it,
// and runs the doctor in every format, with --fix and as a baseline, with the probe off, and
// on for the keys the probe reads: no run of analyze.SecretRun bytes of the secret may be
// in any byte of standard output, standard error or a file written.
func TestSecrets(t *testing.T) {
	for _, probe := range []string{"never", "always"} {
		r := newRow("secrets, --probe "+probe, "no 8-byte run of a secret in any output")
		keys := slices.Sorted(mapKeys(testutil.SecretKeys))
		shapes := slices.Sorted(mapKeys(testutil.SecretShapes))
		if probe == "always" {
			keys, shapes = probeKeys, []string{"password", "pem", "token", "unicode"}
		}
		// What the doctor prints whatever the value is (a JSON key "service", a word of a
		// message) is its own text, not the secret's: a run of the secret that the runs with
		// another value print, for any key, does not count. The runs go in parallel
		// (make hostile's -parallel): a probed run mostly waits on the engine.
		var mu sync.Mutex
		own := map[string]string{}
		t.Run(probe+"/own", func(t *testing.T) {
			for _, key := range keys {
				t.Run(key, func(t *testing.T) {
					t.Parallel()
					dir := project(t, map[string]string{"compose.yaml": testutil.SecretKeys[key]})
					for _, args := range secretRuns(dir, probe) {
						outs := outputs(doctor(t, dir, []string{"SECRET=" + neutral}, nil, args...), dir)
						mu.Lock()
						for where, text := range outs {
							own[where] += text
						}
						mu.Unlock()
					}
				})
			}
		})
		checked := 0
		t.Run(probe+"/grid", func(t *testing.T) {
			for _, shape := range shapes {
				secret := testutil.SecretShapes[shape]
				runs := testutil.SecretRuns(secret, analyze.SecretRun)
				for _, key := range keys {
					t.Run(shape+"/"+key, func(t *testing.T) {
						t.Parallel()
						dir := project(t, map[string]string{"compose.yaml": testutil.SecretKeys[key]})
						for _, args := range secretRuns(dir, probe) {
							res := doctor(t, dir, []string{"SECRET=" + secret}, nil, args...)
							var err error
							outs := outputs(res, dir)
							mu.Lock()
							for where, text := range outs {
								checked++
								for _, run := range runs {
									if strings.Contains(text, run) && !strings.Contains(own[where], run) {
										err = fmt.Errorf("%s holds %q", where, run)
										break
									}
								}
							}
							mu.Unlock()
							if res.killed {
								err = fmt.Errorf("still running after %s", guard)
							}
							r.tried(t, fmt.Sprintf("%s in %s, %s", shape, key, args[0]), err)
						}
					})
				}
			}
		})
		r.figure = fmt.Sprintf("%d outputs read", checked)
	}
}

// carriers put a hostile string h (quoted for YAML by q) where the doctor prints it back.
var carriers = map[string]func(q string) map[string]string{
	"service name": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  " + q + ":\n    image: pytorch/pytorch\n    ipc: host\n    shm_size: 1g\n"}
	},
	"ipc service": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    ipc: " + q + "\n    shm_size: 1g\n"}
	},
	"shm_size": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    shm_size: " + q + "\n"}
	},
	"mount source": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    volumes:\n      - type: volume\n        source: " + q + "\n        target: /dev/shm\nvolumes:\n  " + q + ": {}\n"}
	},
	"need": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    x-shmdoctor:\n      need: " + q + "\n"}
	},
	"project name": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "name: " + q + "\nservices:\n  app:\n    image: x\n    ipc: host\n    shm_size: 1g\n"}
	},
	"kubernetes names": func(q string) map[string]string {
		return map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + q + "\n  namespace: " + q + "\nspec:\n  hostIPC: true\n  containers:\n  - name: " + q + "\n    image: vllm/vllm-openai\n"}
	},
	"interpolated": func(q string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    ipc: \"service:${HOSTILE}\"\n    shm_size: 1g\n"}
	},
}

// TestInjection writes each hostile string where the doctor prints it back (names, values,
// file and folder names, a variable's value) and reads every output: nothing in them may
// steer a terminal, start a line a runner reads as a command, or hold a runner's marker.
func TestInjection(t *testing.T) {
	r := newRow("injection", "escaped: no control, no \"::\" line, no \"##[\"")
	for _, h := range testutil.HostileStrings {
		q := fmt.Sprintf("%q", h) // a YAML double-quoted scalar takes Go's escapes
		for name, carrier := range carriers {
			if name == "interpolated" && strings.Contains(h, "\x00") {
				continue // no environment holds a NUL
			}
			dir := project(t, carrier(q))
			var env []string
			if name == "interpolated" {
				env = []string{"HOSTILE=" + h}
			}
			for _, args := range [][]string{
				append([]string{"-r", "-v", "--probe", "never", "."}, reportArgs(dir)...),
				{"--fix", "-r", "."},
				{"baseline", "-o", "-", "-r", "."},
			} {
				res := doctor(t, dir, env, nil, args...)
				outs := outputs(res, dir)
				if args[0] == "baseline" {
					outs["baseline.json"], outs["stdout"] = outs["stdout"], ""
				}
				r.tried(t, fmt.Sprintf("%q as %s, %s", h, name, args[0]), checkOutputs(outs, args[0] == "--fix"))
			}
		}
		if strings.ContainsAny(h, "/\x00") {
			continue
		}
		// A folder and a compose file named with it, found by -r.
		dir := project(t, map[string]string{h + "/compose.yaml": "services:\n  app:\n    image: x\n    ipc: host\n    shm_size: 1g\n", h + "/" + h + ".compose.yaml": "services:\n  gpu:\n    image: x\n    shm_size: 2g\n"})
		res := doctor(t, dir, nil, nil, append([]string{"-r", "-v", "--probe", "never", "."}, reportArgs(dir)...)...)
		r.tried(t, fmt.Sprintf("%q as a file name", h), checkOutputs(outputs(res, dir), false))
	}
	// The probe's own messages: the daemon refuses an ipc mode or a mount it is given.
	for _, h := range testutil.HostileStrings[:6] {
		q := fmt.Sprintf("%q", h)
		for _, files := range []map[string]string{carriers["ipc service"](fmt.Sprintf("%q", "container:"+h)), carriers["mount source"](q)} {
			dir := project(t, files)
			res := doctor(t, dir, nil, nil, append([]string{"-v", "--probe", "always", "."}, reportArgs(dir)...)...)
			r.tried(t, fmt.Sprintf("%q probed", h), checkOutputs(outputs(res, dir), false))
		}
	}
}

// TestOutputLinks plants symlinks where the doctor writes, as a pull request can, and runs
// what the GitHub Action and a developer run: nothing is written through a link out of the
// project root, no link's target is created, and the run says so (exit 2).
func TestOutputLinks(t *testing.T) {
	r := newRow("output links", "the file outside is unchanged; no target created; exit 2")
	stack := "services:\n  app:\n    image: x\n    ipc: host\n    shm_size: 1g\n"
	for _, c := range []struct {
		name  string
		links map[string]string // link -> target, "OUT/" for the outside folder
		args  []string
		// victim is the outside file that must stay as it was; created is one that must
		// not come to be.
		victim, created string
	}{
		{"sarif onto a script", map[string]string{"shmdoctor.sarif": "OUT/victim.sh"}, []string{"-r", "--format", "sarif", "-o", "shmdoctor.sarif", "."}, "victim.sh", ""},
		{"json by an absolute link", map[string]string{"report.json": "OUT/victim.sh"}, []string{"--format", "json", "-o", "report.json", "."}, "victim.sh", ""},
		{"dangling baseline", map[string]string{".shmdoctor-baseline.json": "OUT/new.json"}, []string{"baseline", "."}, "", "new.json"},
		{"dangling link inside", map[string]string{"out.sarif": "missing.sarif"}, []string{"--format", "sarif", "-o", "out.sarif", "."}, "", ""},
		{"a folder on the way", map[string]string{"reports": "OUT"}, []string{"--format", "sarif", "-o", "reports/victim.sh", "."}, "victim.sh", ""},
		{"chained links", map[string]string{"a.sarif": "b.sarif", "b.sarif": "OUT/victim.sh"}, []string{"--format", "sarif", "-o", "a.sarif", "."}, "victim.sh", ""},
		{"fix --write onto a compose file outside", map[string]string{"compose.yaml": "OUT/compose.yaml"}, []string{"--fix", "--write", "."}, "compose.yaml", ""},
	} {
		out := t.TempDir()
		victim := "#!/bin/sh\necho victim\n"
		for _, f := range []string{"victim.sh", "compose.yaml"} {
			body := victim
			if f == "compose.yaml" {
				body = stack
			}
			if err := os.WriteFile(filepath.Join(out, f), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		files := map[string]string{"compose.yaml": stack}
		if _, ok := c.links["compose.yaml"]; ok {
			delete(files, "compose.yaml")
		}
		dir := project(t, files)
		for link, target := range c.links {
			target = strings.Replace(target, "OUT", out, 1)
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := os.ReadFile(filepath.Join(out, c.victim))
		res := doctor(t, dir, nil, nil, c.args...)
		var err error
		if c.victim != "" {
			after, _ := os.ReadFile(filepath.Join(out, c.victim))
			st, _ := os.Stat(filepath.Join(out, c.victim))
			if !bytes.Equal(before, after) || st.Mode().Perm() != 0o755 {
				err = fmt.Errorf("%s was rewritten (mode %v)", c.victim, st.Mode())
			}
		}
		if c.created != "" {
			if _, e := os.Stat(filepath.Join(out, c.created)); e == nil {
				err = fmt.Errorf("%s was created", c.created)
			}
		}
		if c.name == "dangling link inside" {
			if _, e := os.Stat(filepath.Join(dir, "missing.sarif")); e == nil {
				err = errors.New("the link's target was created")
			}
		}
		if err == nil && res.code != 2 {
			err = fmt.Errorf("exit %d, want 2; stderr: %s", res.code, res.stderr)
		}
		if e := testutil.CheckVisible(res.stderr, nil); err == nil && e != nil {
			err = e
		}
		r.tried(t, c.name, err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// canary is what a file outside the project holds: no byte of it may reach an output.
const canary = "root:$6$c4n4ryS4lt$0utside-the-project-Zq9:19000:0:99999:7:::"

// TestOutsideReads names files outside the project root in every way compose can, directly,
// through a symlink or a variable, and runs what CI runs: the entry is refused where it is
// written (exit 2), the rest of the project is still analysed (its SHM001 is reported), and
// nothing of the outside file is printed or written.
func TestOutsideReads(t *testing.T) {
	r := newRow("outside reads", "refused at the entry; the rest analysed; no byte of the file printed")
	out := t.TempDir()
	for name, body := range map[string]string{
		"secret.yaml": canary + "\n", "secret.env": "CANARY=" + canary + "\n", "creds.json": `{"private_key": "` + canary + `"}` + "\n",
		"base.yaml": "services:\n  base:\n    image: x\n    labels: {note: \"" + canary + "\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app := "  app:\n    image: x\n    ipc: host\n    shm_size: 1g\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		links map[string]string // link -> target, OUT/ for the outside folder
		args  []string
		env   []string
	}{
		{"include by ..", map[string]string{"compose.yaml": "include: [../" + filepath.Base(out) + "/secret.yaml]\nservices:\n" + app}, nil, nil, nil},
		{"include by an absolute path", map[string]string{"compose.yaml": "include: [OUT/secret.yaml]\nservices:\n" + app}, nil, nil, nil},
		{"include by a variable", map[string]string{"compose.yaml": "include: [\"${INC}\"]\nservices:\n" + app}, nil, nil, []string{"INC=OUT/secret.yaml"}},
		{"include's env_file", map[string]string{"compose.yaml": "include:\n  - path: inc.yaml\n    env_file: OUT/secret.env\nservices:\n" + app, "inc.yaml": "services:\n  inc:\n    image: x\n"}, nil, nil, nil},
		{"extends file", map[string]string{"compose.yaml": "services:\n  ext:\n    extends: {file: OUT/base.yaml, service: base}\n" + app}, nil, nil, nil},
		{"env_file, strict", map[string]string{"compose.yaml": "services:\n  web:\n    image: x\n    env_file: OUT/secret.env\n" + app}, nil, []string{"--strict-env"}, nil},
		{".env linked out", map[string]string{"compose.yaml": "services:\n" + app}, map[string]string{".env": "OUT/creds.json"}, nil, nil},
		{".env COMPOSE_FILE", map[string]string{"compose.yaml": "services:\n" + app, ".env": "COMPOSE_FILE=compose.yaml:OUT/secret.yaml\n"}, nil, nil, nil},
		{"--env-file", map[string]string{"compose.yaml": "services:\n" + app}, nil, []string{"--env-file", "OUT/secret.env"}, nil},
		{"a folder linked out", map[string]string{"compose.yaml": "include: [linked/secret.yaml]\nservices:\n" + app}, map[string]string{"linked": "OUT"}, nil, nil},
		{"an included file linked out", map[string]string{"compose.yaml": "include: [inc.yaml]\nservices:\n" + app}, map[string]string{"inc.yaml": "OUT/secret.yaml"}, nil, nil},
	} {
		dir := project(t, nil)
		for name, body := range c.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(body, "OUT", out)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for link, target := range c.links {
			if err := os.Symlink(strings.Replace(target, "OUT", out, 1), filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
		var env []string
		for _, e := range c.env {
			env = append(env, strings.ReplaceAll(e, "OUT", out))
		}
		args := []string{"--probe", "never"}
		for _, a := range c.args {
			args = append(args, strings.ReplaceAll(a, "OUT", out))
		}
		for _, f := range []string{"text", "github", "json"} {
			res := doctor(t, dir, env, nil, append(append([]string{"-r", "--format", f}, args...), ".")...)
			var err error
			switch {
			case strings.Contains(res.stdout+res.stderr, canary[8:24]) || strings.Contains(res.stdout+res.stderr, "c4n4ry"):
				err = fmt.Errorf("the outside file's content was printed:\n%s%s", res.stdout, res.stderr)
			case res.code != 2:
				err = fmt.Errorf("exit %d, want 2:\n%s%s", res.code, res.stdout, res.stderr)
			case !strings.Contains(res.stdout, "SHM001") && !strings.Contains(res.stdout, "shm-size-ignored-host-ipc"):
				err = fmt.Errorf("the rest of the project was not analysed:\n%s%s", res.stdout, res.stderr)
			case !strings.Contains(res.stdout+res.stderr, "outside"):
				err = fmt.Errorf("no error says the file is outside the project root:\n%s%s", res.stdout, res.stderr)
			}
			r.tried(t, c.name+", "+f, err)
		}
	}
}

// memoryCgroup makes a memory cgroup of limit bytes and returns the command line that runs
// a program in it, and a function that reads its peak and removes it.
func memoryCgroup(t *testing.T, limit int64) (wrap []string, peak func() int64) {
	t.Helper()
	name := fmt.Sprintf("shmdoctor-hostile-%d-%d", os.Getpid(), time.Now().UnixNano())
	v1 := "/sys/fs/cgroup/memory"
	dir, limitFile, peakFile := filepath.Join(v1, name), "memory.limit_in_bytes", "memory.max_usage_in_bytes"
	if _, err := os.Stat(v1); err != nil {
		dir, limitFile, peakFile = filepath.Join("/sys/fs/cgroup", name), "memory.max", "memory.peak"
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("the bombs run in a memory cgroup, which needs root: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	// swap would let the bomb outlive the limit
	os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(fmt.Sprint(limit)), 0o644)
	os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	wrap = []string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}
	return wrap, func() int64 {
		b, _ := os.ReadFile(filepath.Join(dir, peakFile))
		var n int64
		fmt.Sscan(string(b), &n)
		return n
	}
}

// TestBombs runs expansion bombs in a memory cgroup of 1 GiB: each is refused at its line
// or loads in bounded work; none is killed or runs away. The matrix gives the slowest run
// and the most memory, which the guard only bounds.
func TestBombs(t *testing.T) {
	r := newRow("bombs", "refused or linear in a 1 GiB cgroup")
	var dbl strings.Builder
	dbl.WriteString("A0=xx\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&dbl, "A%d=${A%d}${A%d}\n", i, i-1, i-1)
	}
	diamond := map[string]string{"compose.yaml": "include: [f1.yaml, f1.yaml]\nservices:\n  s0:\n    image: alpine\n"}
	for i := 1; i < 14; i++ {
		diamond[fmt.Sprintf("f%d.yaml", i)] = fmt.Sprintf("include: [f%d.yaml, f%d.yaml]\nservices:\n  s%d:\n    image: alpine\n", i+1, i+1, i)
	}
	diamond["f14.yaml"] = "services:\n  s14:\n    image: alpine\n"
	laughs := "x: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i < 10; i++ {
		laughs += fmt.Sprintf("x%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	chain := map[string]string{}
	for i := 0; i < 50; i++ {
		chain[fmt.Sprintf("c%d.yaml", i)] = fmt.Sprintf("services:\n  b:\n    extends: {file: c%d.yaml, service: b}\n", i+1)
	}
	chain["c50.yaml"] = "services:\n  b:\n    image: x\n"
	var svcs strings.Builder
	svcs.WriteString("services:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&svcs, "  s%d:\n    extends: {file: c0.yaml, service: b}\n", i)
	}
	chain["compose.yaml"] = svcs.String()
	pg := "services:\n  db:\n    image: postgres:16\n"
	var slowest time.Duration
	var most int64
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{".env doubling, 40 lines", map[string]string{"compose.yaml": pg, ".env": dbl.String()}},
		{"nested defaults, 8000 deep", map[string]string{"compose.yaml": pg + "    shm_size: \"" + strings.Repeat("${A:-", 8000) + "1g" + strings.Repeat("}", 8000) + "\"\n"}},
		{"10,000 defaults in a value", map[string]string{"compose.yaml": pg + "    command: \"" + strings.Repeat("${A:-x}", 10000) + "\"\n"}},
		{"include diamond, 14 levels", diamond},
		{"billion laughs", map[string]string{"compose.yaml": laughs + pg}},
		{"200 services × a 50-file extends chain", chain},
	} {
		dir := project(t, c.files)
		wrap, peak := memoryCgroup(t, 1<<30)
		res := doctor(t, dir, nil, wrap, "-r", "--probe", "never", ".")
		slowest, most = max(slowest, res.elapsed), max(most, peak())
		var err error
		switch {
		case res.killed:
			err = fmt.Errorf("still running after %s", guard)
		case res.code != 0 && res.code != 1 && res.code != 2:
			err = fmt.Errorf("exit %d (killed?): %s", res.code, res.stderr)
		case res.code == 2 && !strings.Contains(res.stdout+res.stderr, ":"):
			err = fmt.Errorf("refused without a location:\n%s%s", res.stdout, res.stderr)
		}
		t.Logf("%s: exit %d in %s, %.0f MiB", c.name, res.code, res.elapsed.Round(time.Millisecond), float64(peak())/(1<<20))
		r.tried(t, c.name, err)
	}
	r.figure = fmt.Sprintf("slowest %s, most %.0f MiB", slowest.Round(10*time.Millisecond), float64(most)/(1<<20))
}
