package main

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	ucli "github.com/urfave/cli/v2"
)

// abortCommand is `ralph abort [LOOP_ID] [--revert | --keep-changes]`: an AIWG loop ended for
// good, its agent stopped; --revert resets the working tree to where the loop started.
// abortOptions are ralph abort's flags.
type abortOptions struct {
	loopID                     string
	revert, keepChanges, force bool // --force is taken, as it always was, and changes nothing
}

// AddFlags appends ralph abort's flags, each writing into o, to flags.
func (o *abortOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, loopIDFlag(&o.loopID), &ucli.BoolFlag{Name: "revert", Destination: &o.revert},
		&ucli.BoolFlag{Name: "keep-changes", Destination: &o.keepChanges}, &ucli.BoolFlag{Name: "force", Destination: &o.force})
}

func abortCommand() *cli.Command {
	var o abortOptions
	return &cli.Command{
		Name: "abort", OwnSignals: true,
		Help: `ralph abort [LOOP_ID] [--revert | --keep-changes] - end a loop; stop its agent

   --revert          reset the working tree to where the loop started
   --keep-changes    leave the working tree as the agent left it (the default)
`,
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			revert := o.revert
			if revert && o.keepChanges {
				return cli.Usagef("--revert and --keep-changes exclude each other: give one")
			}
			ws, id, err := namedLoop(ctx, c, o.loopID)
			if err != nil {
				return err
			}
			st, err := ws.Abort(ctx, id)
			if err != nil {
				return err
			}
			if st.Status == aiwg.StatusCrashed {
				fmt.Fprintf(s.Out, "Loop %s had crashed: its agent is stopped, and it stays crashed (%d iterations)\n", id, st.Metrics.TotalIterations)
			} else {
				fmt.Fprintf(s.Out, "Loop %s aborted after %d iterations\n", id, st.Metrics.TotalIterations)
			}
			if !revert {
				return nil
			}
			rt, err := runtime(ws, s.Err, s.Err)
			if err != nil {
				return err
			}
			if err := ws.Revert(ctx, st, rt); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Working tree reset to %s, where the loop started\n", aiwg.Short(st.StartCommit))
			return nil
		},
	}
}
