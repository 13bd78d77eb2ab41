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
// resumeOptions are ralph resume's flags, as typed.
type resumeOptions struct {
	loopID                         string
	maxIterations, timeout, budget givenString
	force, foreground              bool
}

// AddFlags appends ralph resume's flags, each writing into o, to flags.
func (o *resumeOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, loopIDFlag(&o.loopID), o.maxIterations.flag("max-iterations"), o.timeout.flag("timeout"),
		o.budget.flag("budget"), &ucli.BoolFlag{Name: "force", Destination: &o.force}, &ucli.BoolFlag{Name: "foreground", Destination: &o.foreground})
}

func resumeCommand() *cli.Command {
	var o resumeOptions
	return routedCommand(&cli.Command{
		Name: "resume", Operand: "loops", OwnSignals: true,
		Help: `ralph resume LOOP_ID [--max-iterations N] [--timeout DUR] [--budget USD] [--force] [--foreground]
   continue a paused loop, or a crashed one from its last checkpoint (--budget: its new
   budget; a loop paused at its budget needs one above what it spent)
`,
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			spec := aiwg.ResumeSpec{Force: o.force, Foreground: o.foreground}
			var err error
			if spec.MaxIterations, err = positive("max-iterations", o.maxIterations, 0); err != nil {
				return err
			}
			if o.timeout.given {
				timeout, err := parseTimeout(o.timeout.value)
				if err != nil {
					return err
				}
				spec.Timeout = &timeout
			}
			if o.budget.given {
				if spec.Budget, err = budgetFlag(o.budget.value); err != nil {
					return err
				}
			}
			ws, id, err := namedLoop(ctx, c, o.loopID)
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
