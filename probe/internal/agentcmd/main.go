// Command agentcmd is a minimal binary holding the probe agent: the probe package's tests run
// it (the test binary is not the doctor), and `make release` embeds it, built for linux/amd64
// and linux/arm64, in every release binary. Like the doctor, it dispatches
// `agentcmd agent ARGS...` to probe.AgentMain.
package main

import (
	"fmt"
	"os"

	"github.com/shmdoctor/shmdoctor/probe"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "usage: agentcmd agent [flags]")
		os.Exit(2)
	}
	os.Exit(probe.AgentMain(os.Args[2:], os.Stdout, os.Stderr))
}
