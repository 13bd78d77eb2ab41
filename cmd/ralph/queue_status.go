package main

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	ucli "github.com/urfave/cli/v2"
)

// queueStatusCommand is `ralph queue status PLAN`: the plan's tasks, agents, cost and ETA.
// queueStatusOptions are queue status's flags.
type queueStatusOptions struct {
	repo string
	json bool
}

// AddFlags appends queue status's flags, each writing into o, to flags.
func (o *queueStatusOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, repoFlag(&o.repo), &ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "one JSON document"})
}

func queueStatusCommand() *cli.Command {
	var o queueStatusOptions
	return &cli.Command{
		Name: "status", Operand: "plans", Usage: "show a plan's tasks, agents, cost and ETA",
		UsageText: "ralph queue status PLAN [--json] [--repo DIR]",
		Description: "Counts the tasks by state, lists the agents of the last run with their cost, the plan's cost against its budget, " +
			"an estimate of the time left while a runner is at work, and every task that is not done.",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			a, err := operands(c, "PLAN")
			if err != nil {
				return err
			}
			id, err := planOf(a[0])
			if err != nil {
				return err
			}
			dir, _, err := queueDir(o.repo)
			if err != nil {
				return err
			}
			st, err := queue.StatusOf(ctx, dir, id)
			if err != nil {
				return err
			}
			if o.json {
				return writeJSON(s.Out, st)
			}
			return queue.WriteStatus(s.Out, st)
		},
	}
}
