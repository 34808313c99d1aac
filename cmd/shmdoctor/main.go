// Command shmdoctor finds shared-memory and IPC misconfiguration in Docker Compose stacks
// before it kills a training run, and proves its diagnosis on the real Docker Engine.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/report"
	"github.com/spf13/pflag"
)

// graceAfterSignal is how long the doctor may take to clean up after Ctrl-C (removing probe
// containers) before it exits anyway; a second Ctrl-C exits at once.
const graceAfterSignal = 20 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal now kills the process
		time.Sleep(graceAfterSignal)
		fmt.Fprintln(os.Stderr, "shmdoctor: interrupted")
		os.Exit(exitInterrupted)
	}()
	code := run(ctx, pluginArgs(os.Args[0], os.Args[1:], os.Setenv), os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

// Exit codes.
const (
	exitClean       = 0
	exitFindings    = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError is an error in how the doctor was called: exit 2 with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// run is main without os.Exit, so tests run the whole command in-process. The loaders it
// calls register what they interpolate in the run's Secrets, which ctx carries, and
// everything it prints or writes is scrubbed of them: no interpolated value reaches a log.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	secrets := analyze.NewSecrets()
	ctx = analyze.WithSecrets(ctx, secrets)
	stdout, flushOut := scrubbed(stdout, secrets)
	stderr, flushErr := scrubbed(stderr, secrets)
	defer flushErr()
	defer flushOut()
	cmd, rest := "check", args
	var code int
	var err error
	if len(args) > 0 {
		if _, ok := subcommands[args[0]]; ok {
			cmd, rest = args[0], args[1:]
		} else if args[0] == "help" {
			code, err = help(ctx, args[1:], stdin, stdout, stderr)
			cmd = ""
		} else {
			err = mistypedCommand(args[0])
		}
	}
	if err == nil && cmd != "" {
		code, err = subcommands[cmd](ctx, rest, stdin, stdout, stderr)
	}
	var ue usageError
	switch {
	case err == nil:
		return code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "shmdoctor: %s\nRun 'shmdoctor --help' for usage.\n", report.Visible(ue.msg))
		return exitUsage
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "shmdoctor: interrupted")
		return exitInterrupted
	default:
		fmt.Fprintf(stderr, "shmdoctor: %s\n", report.Visible(err.Error()))
		if code == 0 {
			code = exitUsage
		}
		return code
	}
}

type subcommand func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

// subcommands maps the first argument to its command; anything else is a check.
var subcommands = map[string]subcommand{
	"check":    check,
	"baseline": baseline,
	"rules":    rulesCmd,
	"explain":  explain,
	"version":  version,
	"agent":    agentCommand,
	"probe":    probeCmd,
	"host":     host,
	"watch":    watchCommand,

	pluginMetadataCommand: pluginMetadata,
}

// flagUsages is the flag table of --help. pflag marks every boolean flag "[=true|false]",
// which teaches nothing (--quiet is never given a value): the mark gives way to spaces so
// that the columns stay aligned.
func flagUsages(fs *pflag.FlagSet) string {
	const mark = "[=true|false]"
	// Help reads at 80 columns: descriptions wrap under their own column.
	return strings.ReplaceAll(fs.FlagUsagesWrapped(helpWidth), mark, strings.Repeat(" ", len(mark)))
}

// helpWidth is the width --help is laid out for, the classic terminal's.
const helpWidth = 80
