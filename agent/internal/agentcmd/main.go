// Command agentcmd is a minimal binary holding the probe agent: the tests of the probe and
// watch packages run it (a test binary is not the doctor), and `make release` embeds it, built
// for linux/amd64 and linux/arm64, in every release binary. Like the doctor, it dispatches
// `agentcmd agent ARGS...` to agent.Main.
package main

import (
	"fmt"
	"os"

	"github.com/shmdoctor/shmdoctor/agent"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "usage: agentcmd agent [flags]")
		os.Exit(2)
	}
	os.Exit(agent.Main(os.Args[2:], os.Stdout, os.Stderr))
}
