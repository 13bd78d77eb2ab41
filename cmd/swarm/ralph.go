package main

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
)

// ralphCommand is `swarm ralph …`: the ralph tool's loops (internal/ralph/loop), as the Python
// swarm had them; its verbs parse their own command line and handle their own signals (a
// loop's monitor pauses on SIGTERM).
func ralphCommand() *cli.Command {
	return &cli.Command{
		Name: "ralph", Usage: "the ralph tool's loops on swarm workers (swarm ralph --help)", OwnSignals: true,
		Raw: func(_ context.Context, s cli.Streams, args []string) error {
			dir, _ := swarmDir() // the loop verbs that need it say why it cannot be found
			if code := loop.Run(append([]string{"swarm ralph"}, args...), options(dir, s.Err), s.In, s.Out, s.Err); code != cli.ExitOK {
				return &cli.ExitError{Code: code} // said already
			}
			return nil
		},
	}
}
