// Package exporter serves what `shmdoctor watch` reads as Prometheus metrics, for a fleet of
// hosts: one series per running container (the /dev/shm size, use and peak, the memory limit,
// where the /dev/shm comes from) and the doctor's own health. It samples with watch.Sampler,
// the code of the one-shot watch, so that both read /dev/shm the same way; it never writes
// into a watched container.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/watch"
)

// Options tune an exporter.
type Options struct {
	// Projects are the compose projects watched; none watches every container of the engine.
	Projects []string
	// Interval is the time between two samples; default 1s.
	Interval time.Duration
	// Method is as watch.Options.Method.
	Method string
	// Binary is the doctor's own binary for the companions' image; default os.Executable().
	Binary string
	// Version is the doctor's version, for shmdoctor_build_info.
	Version string
}

// Exporter samples the containers and is the prometheus.Collector of what it saw. Collect
// reports the latest sample: a container that is gone is no longer in it, so there is one
// label set per running container and none stays behind.
type Exporter struct {
	s        *watch.Sampler
	o        Options
	engine   string
	version  string
	cgroup   string
	interval time.Duration

	mu      sync.Mutex
	last    []watch.SampledContainer
	up      bool
	lastAt  time.Time
	samples float64
	errs    float64
}

// New asks the engine what it runs and settles the sampling method.
func New(ctx context.Context, c engine.Client, o Options) (*Exporter, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading daemon info: %w", err)
	}
	s, err := watch.NewSampler(ctx, c, watch.Options{Fleet: true, Projects: o.Projects, Interval: o.Interval, Method: o.Method, Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	return &Exporter{s: s, o: o, engine: c.DaemonHost(), version: info.Info.ServerVersion, cgroup: info.Info.CgroupVersion, interval: o.Interval}, nil
}

// Run samples every Interval until ctx is done, then stops the companions. A sample the
// daemon fails is counted and the next one is tried: an exporter outlives a daemon restart.
func (e *Exporter) Run(ctx context.Context) {
	defer e.s.Close()
	tick := time.NewTicker(e.interval)
	defer tick.Stop()
	for {
		err := e.s.Sample(ctx)
		if ctx.Err() != nil {
			return
		}
		cs := e.s.Containers()
		e.mu.Lock()
		e.samples++
		e.up = err == nil
		if err != nil {
			e.errs++
		} else {
			e.last = cs
			for _, c := range cs {
				if c.Running && c.Error != "" && c.Source != "none" { // ipc: none has nothing to read
					e.errs++
				}
			}
		}
		e.lastAt = time.Now()
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// The per-container labels: one set per container, the name alone being unique on a host.
var containerLabels = []string{"container", "project", "service"}

var (
	descSize = prometheus.NewDesc("shmdoctor_shm_size_bytes",
		"Size of the container's /dev/shm.", containerLabels, nil)
	descUsed = prometheus.NewDesc("shmdoctor_shm_used_bytes",
		"Bytes used in the container's /dev/shm at the latest sample.", containerLabels, nil)
	descPeak = prometheus.NewDesc("shmdoctor_shm_peak_bytes",
		"Highest use of the container's /dev/shm since it started (the agent samples every 50ms; stats and df once per interval).", containerLabels, nil)
	descLimit = prometheus.NewDesc("shmdoctor_memory_limit_bytes",
		"Memory limit of the container, absent when it has none; /dev/shm pages are charged to it.", containerLabels, nil)
	descReadable = prometheus.NewDesc("shmdoctor_shm_readable",
		"1 when the latest sample read the container's /dev/shm, 0 when it could not.", containerLabels, nil)
	descInfo = prometheus.NewDesc("shmdoctor_container_info",
		"Where the container's /dev/shm comes from: source is private, shareable, joined, host, none or mount; size_from is shm_size, default, tmpfs, host, mount, none or unknown; method is how it is read (stats, agent, df).",
		append(containerLabels, "id", "source", "size_from", "method", "shares_with"), nil)
	descWatched = prometheus.NewDesc("shmdoctor_watched_containers",
		"Containers watched at the latest sample.", nil, nil)
	descSamples = prometheus.NewDesc("shmdoctor_samples_total",
		"Samples taken: one listing of the containers and one reading of every /dev/shm.", nil, nil)
	descErrors = prometheus.NewDesc("shmdoctor_sample_errors_total",
		"Samples the engine failed, plus containers whose /dev/shm a sample could not read.", nil, nil)
	descUp = prometheus.NewDesc("shmdoctor_engine_up",
		"1 when the engine answered the latest sample.", nil, nil)
	descLast = prometheus.NewDesc("shmdoctor_last_sample_timestamp_seconds",
		"Time of the latest sample.", nil, nil)
	descEngine = prometheus.NewDesc("shmdoctor_engine_info",
		"The engine watched: its address, version and cgroup version, and the method the doctor prefers there.",
		[]string{"engine", "version", "cgroup", "method"}, nil)
	descBuild = prometheus.NewDesc("shmdoctor_build_info",
		"The doctor's version and Go version.", []string{"version", "goversion"}, nil)
)

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSize, descUsed, descPeak, descLimit, descReadable, descInfo, descWatched, descSamples, descErrors, descUp, descLast, descEngine, descBuild} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the latest sample.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	cs, up, lastAt, samples, errs := e.last, e.up, e.lastAt, e.samples, e.errs
	e.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	watched := 0
	for _, c := range cs {
		if !c.Running {
			continue
		}
		watched++
		l := []string{c.Name, c.Project, c.Service}
		if c.SizeBytes != nil {
			gauge(descSize, float64(*c.SizeBytes), l...)
		}
		if c.UsedBytes != nil {
			gauge(descUsed, float64(*c.UsedBytes), l...)
		}
		if c.PeakBytes != nil {
			gauge(descPeak, float64(*c.PeakBytes), l...)
		}
		if c.MemLimitBytes != nil {
			gauge(descLimit, float64(*c.MemLimitBytes), l...)
		}
		readable := 0.0
		if c.Error == "" && c.UsedBytes != nil {
			readable = 1
		}
		gauge(descReadable, readable, l...)
		id := c.ID
		if len(id) > 12 {
			id = id[:12]
		}
		gauge(descInfo, 1, append(l, id, c.Source, c.SizeFrom, string(c.Method), c.SharesWith)...)
	}
	gauge(descWatched, float64(watched))
	ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, samples)
	ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, errs)
	gauge(descUp, b2f(up))
	if !lastAt.IsZero() {
		gauge(descLast, float64(lastAt.UnixNano())/1e9)
	}
	method := ""
	if e.s != nil {
		method = string(e.s.Method())
	}
	gauge(descEngine, 1, e.engine, e.version, e.cgroup, method)
	gauge(descBuild, 1, e.o.Version, runtime.Version())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Handler serves the exporter's metrics with the Go runtime's and the process's (its CPU
// time and resident memory: the doctor's own footprint).
func (e *Exporter) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "shmdoctor exporter: the metrics are at /metrics")
	})
	return mux
}

// Serve samples and serves /metrics on ln until ctx is done; it closes ln. Its error is the
// server's, none when ctx ends it.
func (e *Exporter) Serve(ctx context.Context, ln net.Listener) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		e.Run(ctx)
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-sampled // the companions are stopped
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
