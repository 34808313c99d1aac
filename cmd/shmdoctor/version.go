package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/shmdoctor/shmdoctor/engine"
)

// Set by `make build` and `make release` with -ldflags "-X main.buildVersion=... ": the
// output of git describe, the commit and the commit's time. The commit time, never the build
// time, keeps release builds reproducible. Without them the module version and the VCS
// stamps the go command records (debug.ReadBuildInfo) are used.
var (
	buildVersion    = ""
	buildCommit     = ""
	buildCommitTime = ""
)

// buildInfo is what `shmdoctor version` prints.
type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	// Agents are the linux platforms whose probe agent is embedded (release builds).
	Agents []string `json:"agents"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{
		Version: buildVersion, Commit: buildCommit, CommitTime: buildCommitTime,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Agents: engine.EmbeddedAgents(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.CommitTime == "":
				b.CommitTime = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Agents == nil {
		b.Agents = []string{}
	}
	return b
}

func versionString() string { return readBuildInfo().Version }

const versionUsage = `Usage: shmdoctor version [--format text|json]

Prints the version, the commit it was built from, the Go version, the platform and the linux
probe agents the binary embeds (release builds embed linux/amd64 and linux/arm64, so that a
macOS or Windows doctor can probe a Docker Desktop engine).

Flags:
`

func version(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	fs := pflag.NewFlagSet("version", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "output format: text|json")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return exitUsage, flagError(fs, err)
	}
	if *help {
		fmt.Fprint(stdout, fitHelp(versionUsage, helpWidth)+flagUsages(fs))
		return exitClean, nil
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("version takes no arguments")
	}
	b := readBuildInfo()
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(b); err != nil {
			return exitUsage, err
		}
	case "text":
		fmt.Fprintf(stdout, "shmdoctor %s\n", b.Version)
		if b.Commit != "" {
			commit := b.Commit
			if b.CommitTime != "" {
				commit += " (" + b.CommitTime + ")"
			}
			fmt.Fprintf(stdout, "commit:   %s\n", commit)
		}
		fmt.Fprintf(stdout, "go:       %s %s/%s\n", b.Go, b.OS, b.Arch)
		if len(b.Agents) > 0 {
			fmt.Fprintf(stdout, "agents:   %s (embedded)\n", strings.Join(b.Agents, ", "))
		} else {
			fmt.Fprintln(stdout, "agents:   none embedded (a static linux build is its own agent)")
		}
	default:
		return exitUsage, usagef("version: unknown format %q: use text or json", *format)
	}
	return exitClean, nil
}
