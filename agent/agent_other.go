//go:build !linux

package agent

import (
	"fmt"
	"io"
	"runtime"
)

// Main is the hidden `shmdoctor agent ...` subcommand that runs inside the probe
// container. The agent measures Linux /dev/shm and runs only on Linux; elsewhere it says so
// and returns exit code 2.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "agent: the probe agent runs only on linux, not %s\n", runtime.GOOS)
	return 2
}
