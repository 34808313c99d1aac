//go:build !embedagents

package engine

import "embed"

// agentFiles is empty: development builds embed no agent and stay small; on a Linux machine
// their own static binary is the agent.
var agentFiles embed.FS
