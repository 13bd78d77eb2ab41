package main

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

// pauseCommand is `ralph pause`: an AIWG loop's for a loop id (the iteration in flight
// stopped, no other started until resume), swarm's loops' for a name.
func pauseCommand() *cli.Command {
	var loopID string // pause's one flag
	return routedCommand(&cli.Command{
		Name: "pause", Operand: "loops", OwnSignals: true,
		Help:  "ralph pause LOOP_ID - stop the iteration in flight; no other starts until ralph resume\n",
		Flags: []ucli.Flag{loopIDFlag(&loopID)},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			ws, id, err := namedLoop(ctx, c, loopID)
			if err != nil {
				return err
			}
			st, err := ws.Pause(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Loop %s paused after %d of at most %d iterations; 'ralph resume %s' continues it\n",
				id, st.Metrics.TotalIterations, st.Configuration.MaxIterations, id)
			return nil
		},
	})
}
