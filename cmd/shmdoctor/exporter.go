package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/shmdoctor/shmdoctor/engine"
	"github.com/shmdoctor/shmdoctor/exporter"
)

// serveMetrics is `shmdoctor watch --listen ADDR`: the exporter, until ctx is done or the
// duration has passed.
func serveMetrics(ctx context.Context, addr string, projects, paths []string, interval, duration time.Duration, method string, stderr io.Writer) (int, error) {
	switch {
	case addr == "":
		return exitUsage, usagef("watch: --projects needs --listen")
	case len(paths) > 0:
		return exitUsage, usagef("watch: --listen watches running containers, not a compose file: name projects with -p or --projects")
	}
	projects = slices.DeleteFunc(projects, func(p string) bool { return strings.TrimSpace(p) == "" })
	c, closeClient, err := engine.NewClient(ctx)
	if err != nil {
		return exitUsage, err
	}
	defer closeClient()
	pctx, cancelPing := context.WithTimeout(ctx, engine.DefaultPingTimeout)
	err = engine.Ping(pctx, c)
	cancelPing()
	if err != nil {
		return exitUsage, err
	}
	e, err := exporter.New(ctx, c, exporter.Options{Projects: projects, Interval: interval, Method: method, Version: readBuildInfo().Version})
	if err != nil {
		return exitUsage, fmt.Errorf("watch: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitUsage, fmt.Errorf("watch: listening on %s: %w", addr, err)
	}
	what := "every container of the engine at " + c.DaemonHost()
	if len(projects) > 0 {
		what = "the containers of project " + strings.Join(projects, ", ")
	}
	fmt.Fprintf(stderr, "shmdoctor: serving metrics at http://%s/metrics, watching %s\n", ln.Addr(), what)
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	if err := e.Serve(ctx, ln); err != nil {
		return exitUsage, fmt.Errorf("watch: serving metrics: %w", err)
	}
	return exitClean, nil
}
