package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/fix"
	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/shmdoctor/shmdoctor/watch"
	"github.com/spf13/pflag"
)

const watchUsage = `Usage: shmdoctor watch [compose flags] [--interval 1s] [--duration 10m] [PATH]

Watches how much of /dev/shm the running containers of a compose project really use, and
turns each service's peak into a shm_size: peak × --headroom, rounded up to a size people
write, never below the workload profile's minimum, checked against the memory limit, with
the compose text to write and where.

The project is found as docker compose finds it (-f, -p, --project-directory, PATH); its
running containers are found by compose's labels, and containers that start later
(scale-up, restarts) are followed. Each replica has its own /dev/shm; containers joined
by ipc: service: share one and it is counted once.

How use is read (the summary says which, and what it includes):
  stats  the shmem counter of the container's memory cgroup, from the Docker stats API,
         where the engine reports it (cgroup v2); it also counts other tmpfs and shared
         anonymous memory
  agent  statfs of /dev/shm by the doctor's agent in a companion container that shares the
         container's PID namespace: nothing is copied into or run in the container, so
         read-only and shell-less images work; companions are removed at the end
  df     the image's own df -P -k /dev/shm, executed in the container at every sample,
         where the companion cannot run

stats and df read once per --interval and can miss a spike between two readings: a size
below the current one is recommended only from the agent's readings.

On a terminal, one line per service is redrawn at every sample; otherwise only the
summary is printed. --format json streams one JSON object per sample, then the summary.

With --listen ADDR the doctor is a Prometheus exporter instead: it watches every running
container of the engine (or those of -p and --projects), follows containers as they start
and stop by listing them at every --interval, and serves at http://ADDR/metrics one series
set per container (/dev/shm size, use, peak since start, memory limit, where /dev/shm
comes from and what sized it) and its own health, until Ctrl-C or SIGTERM. No summary is
printed; docs/watch.md has the alert rules.

Examples:
  shmdoctor watch                   # the project in this folder, until Ctrl-C
  shmdoctor watch --listen 127.0.0.1:9586   # every container, as Prometheus metrics
  shmdoctor watch -p trainer --duration 30m --format json > shm.jsonl

Exit status: 0 when the watch ends (Ctrl-C or --duration are its normal ends), 1 when no
container of the project ran, 2 usage or load errors or a daemon that died or stopped
answering (the summary then says so, with what was seen until then). A daemon call that
gets no answer within twice --interval (10s at least) ends the watch; the watch, cleanup
included, ends within --duration plus 10s (the cleanup grace).

Flags:
`

// maxHeadroom bounds --headroom: peak × headroom must stay a size (int64), and no workload
// needs a hundred times what it was seen to use.
const maxHeadroom = 100

// watchCommand is `shmdoctor watch`.
func watchCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	var load compose.Options
	fs := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	addComposeFlags(fs, &load)
	interval := fs.Duration("interval", time.Second, "time between two samples")
	duration := fs.Duration("duration", 0, "stop after this long and print the summary (default: until Ctrl-C)")
	headroom := fs.Float64("headroom", analyze.DefaultHeadroom, "recommended shm_size = observed peak × this factor, 1 to 100")
	format := fs.String("format", "text", "output format: text|json (json: one object per sample, then the summary)")
	method := fs.String("method", "auto", "how use is read: auto|stats|agent|df")
	color := fs.String("color", "auto", "colour: auto|always|never (auto follows the terminal, NO_COLOR and FORCE_COLOR)")
	noColor := fs.Bool("no-color", false, "no colour: --color never")
	listen := fs.String("listen", "", "serve Prometheus metrics of every running container at http://`ADDR`/metrics instead of a summary")
	projects := fs.StringSlice("projects", nil, "with --listen, watch only these compose projects (comma-separated, repeatable; default: every container)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return exitUsage, flagError(fs, err)
	}
	if err := noColorFlag(fs, *noColor, color); err != nil {
		return exitUsage, err
	}
	if *help {
		fmt.Fprint(stdout, fitHelp(watchUsage, helpWidth)+flagUsages(fs))
		return exitClean, nil
	}
	switch {
	case *interval < 10*time.Millisecond:
		return exitUsage, usagef("watch: --interval %s is too short: 10ms at least", *interval)
	case *duration < 0:
		return exitUsage, usagef("watch: --duration must not be negative")
	case !(*headroom >= 1 && *headroom <= maxHeadroom): // NaN too
		return exitUsage, usagef("watch: --headroom %g: from 1 (the peak itself) to %d", *headroom, maxHeadroom)
	case *format != "text" && *format != "json":
		return exitUsage, usagef("watch: unknown format %q: use text or json", *format)
	case *color != "auto" && *color != "always" && *color != "never":
		return exitUsage, usagef("watch: --color %q: use auto, always or never", *color)
	case fs.NArg() > 1:
		return exitUsage, usagef("watch: one project at a time: give at most one PATH")
	}
	switch *method {
	case "auto", "stats", "agent", "df":
	default:
		return exitUsage, usagef("watch: --method %q: use auto, stats, agent or df", *method)
	}
	if *listen != "" || len(*projects) > 0 {
		return serveMetrics(ctx, *listen, append(*projects, load.ProjectName), fs.Args(), *interval, *duration, *method, stderr)
	}
	load.Paths, load.Stdin = fs.Args(), stdin

	model, name, note, err := watchProject(ctx, load)
	if err != nil {
		return exitUsage, err
	}
	c, closeClient, err := engine.NewClient(ctx)
	if err != nil {
		return exitUsage, err
	}
	defer closeClient()
	// A daemon that does not answer is given no longer than the watch.
	pingWait := engine.DefaultPingTimeout
	if *duration > 0 {
		pingWait = min(pingWait, *duration)
	}
	pctx, cancelPing := context.WithTimeout(ctx, pingWait)
	err = engine.Ping(pctx, c)
	cancelPing()
	if err != nil {
		return exitUsage, err
	}

	started := time.Now()
	var live *report.LiveView
	if *format == "text" && isTerminal(stdout) {
		live = report.NewLiveView(stdout, useColor(*color, stdout))
	}
	var writeErr error
	opts := watch.Options{Project: name, Interval: *interval, Duration: *duration, Method: *method}
	opts.OnSample = func(s analyze.WatchSample) {
		switch {
		case writeErr != nil:
		case *format == "json":
			writeErr = report.WatchJSONSample(stdout, s)
		case live != nil:
			writeErr = live.Draw(s, started, *interval)
		}
	}
	containers, watchErr := watch.Watch(ctx, c, opts)
	if watchErr != nil && len(containers) == 0 {
		return exitUsage, fmt.Errorf("watch: %w", watchErr)
	}
	if live != nil {
		_ = live.Clear()
	}
	sum := summarize(model, name, containers, started, *headroom)
	sum.Interrupted = ctx.Err() != nil
	if watchErr != nil {
		sum.DaemonError = watchErr.Error()
	}
	if note != "" {
		sum.Notes = append([]string{note}, sum.Notes...)
	}
	if *format == "json" {
		err = report.WatchJSONSummary(stdout, sum)
	} else {
		err = report.WatchText(stdout, sum, report.Options{Color: useColor(*color, stdout), Width: textWidth(stdout)})
	}
	if err == nil {
		err = writeErr
	}
	if err != nil {
		return exitUsage, fmt.Errorf("writing the watch report: %w", err)
	}
	if watchErr != nil {
		// What was seen until the daemon failed is in the summary above.
		return exitUsage, fmt.Errorf("watch: %w", watchErr)
	}
	if len(containers) == 0 {
		name = report.Visible(name)
		fmt.Fprintf(stderr, "shmdoctor: no container of project %s ran during the watch (is it up? docker compose -p %s ps)\n", name, name)
		return exitFindings, nil
	}
	return exitClean, nil
}

// watchProject loads the compose project to watch. Without a loadable compose file, -p alone
// still names the containers: the watch then goes on without profiles and file positions.
func watchProject(ctx context.Context, load compose.Options) (model *analyze.Project, name, note string, err error) {
	projects := compose.Load(ctx, load)
	if len(projects) != 1 {
		return nil, "", "", usagef("watch: one project at a time, not %d", len(projects))
	}
	p := projects[0]
	switch {
	case p.Compose:
		return p, p.ComposeName, "", nil
	case p.Kubernetes:
		return nil, "", "", usagef("watch: %s is a Kubernetes manifest; watch follows compose projects", p.Name)
	case load.ProjectName != "":
		msg := "no compose file"
		if len(p.Errors) > 0 {
			msg = p.Errors[0].Error()
		}
		return nil, load.ProjectName, fmt.Sprintf("the compose file was not loaded (%s): project %s is watched by its labels alone, without workload profiles or file positions", msg, load.ProjectName), nil
	}
	if len(p.Errors) > 0 {
		return nil, "", "", fmt.Errorf("loading the project: %w", p.Errors[0])
	}
	return nil, "", "", fmt.Errorf("loading the project: nothing loaded from %s", p.Name)
}

// summarize turns what was seen into the summary: per service the peak and, for every
// service that owns its /dev/shm, the recommendation.
func summarize(model *analyze.Project, name string, cs []analyze.WatchedContainer, started time.Time, headroom float64) *analyze.WatchSummary {
	d := time.Since(started)
	sum := &analyze.WatchSummary{Type: "summary", Project: name, Started: started.UTC(), Duration: d, Seconds: d.Seconds(),
		Containers: cs, Services: analyze.SummarizeServices(cs), Recommendations: []analyze.ShmRecommendation{}}
	if sum.Containers == nil {
		sum.Containers = []analyze.WatchedContainer{}
	}
	host := false
	for _, u := range sum.Services {
		for _, m := range u.Methods {
			if !slices.Contains(sum.Methods, m) {
				sum.Methods = append(sum.Methods, m)
			}
		}
		host = host || u.HostIPC
		if n := analyze.SharedNote(u); n != "" {
			sum.Notes = append(sum.Notes, n)
		}
		if u.SharesService != "" || u.PeakBytes == nil {
			continue
		}
		r := analyze.Recommend(model, u.Service, *u.PeakBytes, u.SizeBytes, u.MemLimitBytes, headroom, u.Methods)
		if r.Note == "" && model == nil {
			// Without the compose file, what the engine shows stands in for the plan.
			switch {
			case u.Mount != "":
				r.Note = "a " + u.Mount + " mount at /dev/shm replaces the shm mount: shm_size does not apply; size the mount instead"
			case u.HostIPC:
				r.Note = "ipc: host shares the host's /dev/shm and ignores shm_size; replace ipc: host with shm_size to give the service a /dev/shm of its own"
			}
		}
		r.Diff, _ = shmSizeDiff(model, r)
		sum.Recommendations = append(sum.Recommendations, r)
	}
	if sum.Methods == nil {
		sum.Methods = []analyze.WatchMethod{}
	}
	sum.Notes = append(sum.Notes, analyze.WatchNotes(sum.Methods)...)
	for _, c := range cs {
		if c.Fallback != "" {
			sum.Notes = append(sum.Notes, fmt.Sprintf("%s was read with %s: %s", c.Name, c.Method, c.Fallback))
		}
	}
	if host {
		sum.Notes = append(sum.Notes, "ipc: host: /dev/shm is the host's, and its use includes every other process on the host")
	}
	if len(sum.Recommendations) > 0 {
		sum.Notes = append(sum.Notes, "a peak is the highest use sampled: watch through the heaviest phase of the workload (start-up, the largest batch, every worker)")
	}
	return sum
}

// shmSizeDiff is the unified diff of the compose file that sets the service's shm_size to
// the recommendation, through the same machinery as --fix; "" when there is nothing to
// write or shm_size is not what sizes /dev/shm (a mount, ipc: host: the note says so).
func shmSizeDiff(p *analyze.Project, r analyze.ShmRecommendation) (string, error) {
	if p == nil || !r.Change || r.Key != analyze.ShmKey || r.Note != "" {
		return "", nil
	}
	fx, err := p.Doc.SetShmSize(r.Service, r.RecommendedBytes)
	if err != nil {
		return "", err
	}
	pt, err := fix.Apply(p, []*analyze.Fix{fx})
	if err != nil {
		return "", err
	}
	return pt.Diff(), nil
}
