package main

import (
	"github.com/agentfleet/fleet/cmd/internal/ralphloop"
	"github.com/agentfleet/fleet/cmd/internal/swarmhost"
	"github.com/agentfleet/fleet/internal/cli"
)

// ralphCommand is `swarm ralph …`: the ralph tool's loops (internal/ralph/loop), as the Python
// swarm had them, with ralph's own verbs (cmd/internal/ralphloop): their workers started as
// swarm's are (swarmhost.Options), a loop's monitor `swarm ralph run NAME`.
func ralphCommand() *cli.Command {
	return ralphloop.Command("ralph", "the ralph tool's loops on swarm workers (swarm ralph --help)",
		ralphloop.Config{Tool: "swarm ralph", Swarm: swarmhost.Options})
}
