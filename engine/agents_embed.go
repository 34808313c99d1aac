//go:build embedagents

package engine

import "embed"

// agentFiles are the gzip-compressed linux agents `make release` builds into engine/agents
// before it builds every target with -tags embedagents.
//
//go:embed agents/linux-*.gz
var agentFiles embed.FS
