package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shmdoctor/shmdoctor/agent"
	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/probe"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/spf13/pflag"
)

// daemon is the engine the probe talks to, connected once per run: before loading when the
// target is inferred from it, else when the probe starts.
type daemon struct {
	c     engine.Client
	close func() error
	// err is why the daemon cannot be used (no client, no answer); nil when it answered.
	err error
	// deadline bounds the whole probe, the first answer included (--probe-timeout).
	deadline time.Time
	// engine is what the daemon's version names it, Docker when it could not be read.
	engine analyze.Engine
}

// connect builds the client and waits for the daemon's first answer within --probe-timeout,
// then reads which engine it is. The caller closes d.close when it is set.
func connect(ctx context.Context, f *checkFlags) *daemon {
	d := &daemon{deadline: time.Now().Add(cmp.Or(max(f.probeWait, 0), probe.DefaultTimeout)), engine: analyze.Docker}
	d.c, d.close, d.err = engine.NewClient(ctx)
	if d.err != nil {
		return d
	}
	pctx, cancel := context.WithDeadline(ctx, d.deadline)
	defer cancel()
	if d.err = engine.Ping(pctx, d.c); d.err == nil {
		d.engine, _, _ = engine.DetectEngine(pctx, d.c)
	}
	return d
}

// inferTarget connects to the daemon when the probe will run and --target was given neither
// on the command line nor in the config file (given), so that the target follows its
// engine: podman for Podman (see engine.TargetOf). It returns the connection for the probe to
// reuse, nil when it made none.
func inferTarget(ctx context.Context, f *checkFlags, given bool) *daemon {
	if given || f.probe == "never" {
		return nil
	}
	return connect(ctx, f)
}

// probeAll measures every loaded project in throwaway containers and puts the measurement
// findings in probed, by project. With --probe auto a daemon that does not answer is one
// line in the report; with always it is an error. Interrupted, it keeps the measurements of
// the projects whose probe had ended and returns the context's error. d is the connection
// inferTarget made, nil to connect here.
func probeAll(ctx context.Context, f *checkFlags, d *daemon, rep *report.Report, cfg analyze.Config, probed map[*report.Project][]analyze.Finding, stderr io.Writer) error {
	// Kubernetes containers are never started here: their /dev/shm comes from the kubelet.
	plans := map[*report.Project][]*analyze.ShmPlan{}
	for _, rp := range rep.Projects {
		if !rp.Compose {
			continue
		}
		for _, plan := range rp.Plans {
			if plan.K8s == nil {
				plans[rp] = append(plans[rp], plan)
			}
		}
	}
	if len(plans) == 0 {
		return nil
	}
	// One --probe-timeout for the whole probe: the daemon's first answer and every project.
	if d == nil {
		d = connect(ctx, f)
		if d.close != nil {
			defer d.close()
		}
	}
	c, deadline, err := d.c, d.deadline, d.err
	if err != nil {
		if f.probe == "always" || ctx.Err() != nil {
			return err
		}
		rep.ProbeNote = "skipped: " + err.Error()
		return nil
	}
	for _, rp := range rep.Projects {
		if len(plans[rp]) == 0 {
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			left = time.Nanosecond // the run reports the timeout for this project's services
		}
		opts := probe.Options{Project: rp.ComposeName, WriteProbe: f.write, Timeout: left, Engine: d.engine}
		stopProgress := showProgress(f, &opts, rp, plans[rp], stderr)
		ms, err := probe.Run(ctx, c, plans[rp], opts)
		stopProgress()
		if ctx.Err() != nil {
			// Interrupted: what this project's probe gathered is incomplete.
			return cmp.Or(err, ctx.Err())
		}
		if ms != nil {
			rp.Measurements = ms
			probed[rp] = rules.CheckMeasurements(rp.Project, cfg, ms)
		}
		if err != nil {
			if f.probe == "always" {
				return err
			}
			rep.ProbeNote = fmt.Sprintf("project %s: %v", rp.Name, err)
		}
	}
	return nil
}

// progressEvery is how often the progress block on a terminal is redrawn.
const progressEvery = 200 * time.Millisecond

// showProgress draws the probe's progress on stderr, one line per service updated in place,
// when stderr is a terminal and the run is not --quiet; it returns the function that clears
// it. Logs and pipes get nothing.
func showProgress(f *checkFlags, opts *probe.Options, rp *report.Project, plans []*analyze.ShmPlan, stderr io.Writer) func() {
	if f.quiet || !isTerminal(stderr) || os.Getenv("TERM") == "dumb" {
		return func() {}
	}
	services := make([]string, len(plans))
	for i, p := range plans {
		services[i] = p.Service
	}
	pr := report.NewProgress(stderr, useColor(f.color, stderr), "probing "+rp.Name, services)
	opts.Progress = pr.Update
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		pr.Run(stop, progressEvery)
		close(done)
	}()
	return func() {
		close(stop)
		<-done
	}
}

// agentCommand is the hidden `agent` subcommand run inside probe containers.
func agentCommand(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	return agent.Main(args, stdout, stderr), nil
}

const probeUsage = `Usage: shmdoctor probe --clean

Removes the probe images (shmdoctor-probe:*) and any probe containers or watch companions a
crashed run left behind: at once those of a doctor whose run lock is free (it died), by age
those of a doctor on another host. Containers of a doctor probing or watching right now are
left alone, and so are the images while a doctor on this machine runs.

Flags:
`

// probeCmd is `shmdoctor probe --clean`.
func probeCmd(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	fs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	clean := fs.Bool("clean", false, "remove probe images and leftover probe containers")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return exitUsage, flagError(fs, err)
	}
	if *help {
		fmt.Fprint(stdout, fitHelp(probeUsage, helpWidth)+flagUsages(fs))
		return exitClean, nil
	}
	if !*clean || fs.NArg() > 0 {
		return exitUsage, usagef("probe: the only action is --clean (the probe itself runs with every check, see --probe)")
	}
	c, closeClient, err := engine.NewClient(ctx)
	if err != nil {
		return exitUsage, err
	}
	defer closeClient()
	containers, images, err := engine.Clean(ctx, c, engine.CleanScope{})
	fmt.Fprintf(stdout, "removed %d probe container(s) and %d probe image(s)\n", containers, images)
	if err != nil {
		return exitUsage, err
	}
	return exitClean, nil
}

const hostUsage = `Usage: shmdoctor host [--need SIZE] [--format text|json]

Describes the Docker daemon for onboarding scripts: versions, platform, cgroup version,
memory, the /dev/shm a new container gets and the host's own /dev/shm (both measured in
throwaway containers), the default IPC mode and whether an NVIDIA runtime is configured.
With --need, exits 1 when the host cannot give a container that much shared memory, and 2
when it could not be measured.

Example:
  shmdoctor host --need 8g || echo "this machine cannot train with 8 GiB of /dev/shm"

Flags:
`

// host is `shmdoctor host`.
func host(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	fs := pflag.NewFlagSet("host", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	need := fs.String("need", "", "exit 1 unless a container can get this much /dev/shm, such as 8g")
	format := fs.String("format", "text", "output format: text|json")
	timeout := fs.Duration("probe-timeout", 60*time.Second, fmt.Sprintf("time limit for the measurements, the daemon's first answer included; cleanup may take %s more", engine.CleanupGrace))
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return exitUsage, flagError(fs, err)
	}
	if *help {
		fmt.Fprint(stdout, fitHelp(hostUsage, helpWidth)+flagUsages(fs))
		return exitClean, nil
	}
	if *format != "text" && *format != "json" {
		return exitUsage, usagef("host: unknown format %q: use text or json", *format)
	}
	var needBytes int64
	if *need != "" {
		n, err := analyze.ParseSize(*need)
		if err != nil {
			return exitUsage, usagef("host --need: %v", err)
		}
		needBytes = n
	}
	c, closeClient, err := engine.NewClient(ctx)
	if err != nil {
		return exitUsage, err
	}
	defer closeClient()
	pctx, cancel := context.WithTimeout(ctx, cmp.Or(max(*timeout, 0), probe.DefaultTimeout))
	err = engine.Ping(pctx, c)
	cancel()
	if err != nil {
		return exitUsage, err
	}
	info, err := probe.Host(ctx, c, probe.Options{Timeout: *timeout})
	if err != nil {
		return exitUsage, err
	}
	var verdict error
	code := exitClean
	if needBytes > 0 {
		code, verdict = canGive(info, needBytes)
	}
	if *format == "json" {
		out := struct {
			*probe.HostInfo
			NeedBytes *int64 `json:"need_bytes,omitempty"`
			CanGive   *bool  `json:"can_give,omitempty"`
			Reason    string `json:"reason,omitempty"`
		}{HostInfo: info}
		if needBytes > 0 {
			out.NeedBytes = &needBytes
			if code != exitUsage {
				ok := verdict == nil
				out.CanGive = &ok
			}
			if verdict != nil {
				out.Reason = verdict.Error()
			}
		}
		if err := report.WriteJSON(stdout, out); err != nil {
			return exitUsage, err
		}
	} else {
		printHost(stdout, info, needBytes, code, verdict)
	}
	return code, nil
}

// canGive decides --need: the host's memory must back it (exitFindings when it cannot), and
// both that memory and the default /dev/shm of a container must have been measured
// (exitUsage when not: the answer is unknown, not no).
func canGive(info *probe.HostInfo, need int64) (int, error) {
	switch {
	case info.MemAvailableBytes == nil:
		return exitUsage, errors.New("the host's available memory could not be measured")
	case info.DefaultShmBytes == nil:
		return exitUsage, errors.New("the default /dev/shm of a container could not be measured")
	}
	if err := info.CanGive(need); err != nil {
		return exitFindings, err
	}
	return exitClean, nil
}

// printHost writes what host found for people; what the daemon says is escaped as
// report.Visible escapes it.
func printHost(w io.Writer, h *probe.HostInfo, need int64, code int, verdict error) {
	width := textWidth(w)
	// A value too long for its line wraps under the values' column.
	row := func(label, value string) {
		fmt.Fprintln(w, strings.Join(report.Wrap(fmt.Sprintf("%-17s", label), report.Visible(value), width, 18), "\n"))
	}
	size := func(n *int64) string {
		if n == nil {
			return "not measured"
		}
		return analyze.FormatSize(*n)
	}
	rows := [][2]string{
		{"daemon", fmt.Sprintf("%s (%s %s, API %s negotiated, daemon up to %s)", h.DaemonHost, h.Engine, h.ServerVersion, h.APIVersion, h.DaemonAPIVersion)},
		{"platform", fmt.Sprintf("%s/%s, %s, kernel %s", h.OS, h.Arch, h.OperatingSystem, h.KernelVersion)},
		{"cgroup", fmt.Sprintf("v%s (%s driver), storage %s", h.CgroupVersion, h.CgroupDriver, h.StorageDriver)},
		{"memory", fmt.Sprintf("%s total, %s available, %d CPUs", analyze.FormatSize(h.MemTotalBytes), size(h.MemAvailableBytes), h.CPUs)},
		{"default /dev/shm", fmt.Sprintf("%s (%s %s, measured in a new container)", size(h.DefaultShmBytes), h.DefaultShmFSType, h.DefaultShmSource)},
		{"default ipc mode", h.DefaultIPCMode},
		{"host /dev/shm", fmt.Sprintf("%s, %s free (measured with ipc: host)", size(h.HostShmBytes), size(h.HostShmFreeBytes))},
		{"nvidia runtime", fmt.Sprintf("%t (runtimes: %s; default %s)", h.NVIDIARuntime, strings.Join(h.Runtimes, ", "), h.DefaultRuntime)},
	}
	for _, r := range rows {
		row(r[0]+":", r[1])
	}
	for _, e := range h.Errors {
		row("not measured:", e)
	}
	if need > 0 {
		var answer string
		switch {
		case code == exitUsage:
			answer = fmt.Sprintf("need %s: UNKNOWN, %s", analyze.FormatSize(need), report.Visible(verdict.Error()))
		case verdict != nil:
			answer = fmt.Sprintf("need %s: NO, %s", analyze.FormatSize(need), report.Visible(verdict.Error()))
		default:
			answer = fmt.Sprintf("need %s: yes, set shm_size: %s on the service", analyze.FormatSize(need), analyze.ComposeSize(need))
		}
		fmt.Fprintf(w, "\n%s\n", strings.Join(report.Wrap("", answer, width, 2), "\n"))
	}
}
