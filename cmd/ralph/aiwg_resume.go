package main

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	ucli "github.com/urfave/cli/v2"
)

// resumeCommand is `ralph resume`: an AIWG loop's for a loop id (a paused loop continued, a
// crashed one restored from its last checkpoint), swarm's loops' for a name.
func resumeCommand() *cli.Command {
	return routedCommand(&cli.Command{
		Name: "resume", OwnSignals: true,
		Help: `ralph resume LOOP_ID [--max-iterations N] [--timeout DUR] [--budget USD] [--force] [--foreground]
   continue a paused loop, or a crashed one from its last checkpoint (--budget: its new
   budget; a loop paused at its budget needs one above what it spent)
`,
		Flags: []ucli.Flag{loopIDFlag(), &ucli.StringFlag{Name: "max-iterations"}, &ucli.StringFlag{Name: "timeout"},
			&ucli.StringFlag{Name: "budget"}, &ucli.BoolFlag{Name: "force"}, &ucli.BoolFlag{Name: "foreground"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			spec := aiwg.ResumeSpec{Force: c.Bool("force"), Foreground: c.Bool("foreground")}
			var err error
			if spec.MaxIterations, err = positive(c, "max-iterations", 0); err != nil {
				return err
			}
			if c.IsSet("timeout") {
				timeout, err := parseTimeout(c.String("timeout"))
				if err != nil {
					return err
				}
				spec.Timeout = &timeout
			}
			if c.IsSet("budget") {
				if spec.Budget, err = budgetFlag(c); err != nil {
					return err
				}
			}
			ws, id, err := namedLoop(ctx, c)
			if err != nil {
				return err
			}
			rt, err := runtime(ws, s.Err, s.Err)
			if err != nil {
				return err
			}
			if spec.Foreground {
				rt.Ask = askOn(s)
			}
			res, err := ws.Resume(ctx, id, spec, rt)
			if err != nil {
				return err
			}
			st := res.State
			how := "resumed"
			if res.From == aiwg.StatusCrashed {
				how = "restarted (it had no checkpoint)"
				if st.LastCheckpoint != nil {
					how = "restored from " + *st.LastCheckpoint
				}
			}
			fmt.Fprintf(s.Out, "Loop %s %s: iteration %d of at most %d next\n", id, how, st.NextIteration(), st.Configuration.MaxIterations)
			if res.Foreground {
				return foregroundResult(ws.RunLoop(ctx, id, rt))
			}
			return nil
		},
	})
}
