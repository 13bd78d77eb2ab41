package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	ucli "github.com/urfave/cli/v2"
)

// statusCommand is `ralph status`: an AIWG loop's state for a loop id, swarm's loops' status
// for a name.
// statusOptions are ralph status's flags (an AIWG loop's).
type statusOptions struct {
	json   bool
	loopID string
}

// AddFlags appends ralph status's flags, each writing into o, to flags.
func (o *statusOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, &ucli.BoolFlag{Name: "json", Destination: &o.json}, loopIDFlag(&o.loopID))
}

func statusCommand() *cli.Command {
	var o statusOptions
	return routedCommand(&cli.Command{
		Name: "status", Operand: "loops", OwnSignals: true,
		Help:  "ralph status LOOP_ID [--json] - an AIWG loop's state (--json: its state.json)\n",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			ws, id, err := namedLoop(ctx, c, o.loopID)
			if err != nil {
				return err
			}
			st, err := ws.Look(ctx, id)
			if err != nil {
				return err
			}
			if o.json {
				return writeJSON(s.Out, st)
			}
			aiwg.WriteStatus(s.Out, st, time.Now())
			return nil
		},
	})
}

// writeJSON writes v indented, as AIWG's verbs' --json do.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
