package main

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	ucli "github.com/urfave/cli/v2"
)

// queueInitCommand is `ralph queue init PLAN_FILE`: a plan read, checked and queued.
// queueInitOptions are queue init's flags.
type queueInitOptions struct {
	repo  string
	force bool
}

// AddFlags appends queue init's flags, each writing into o, to flags.
func (o *queueInitOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, repoFlag(&o.repo),
		&ucli.BoolFlag{Name: "force", Destination: &o.force, Usage: "start the plan's queue over (its retry queue and progress too)"})
}

func queueInitCommand() *cli.Command {
	var o queueInitOptions
	return &cli.Command{
		Name: "init", Usage: "queue a plan's tasks",
		UsageText: "ralph queue init PLAN_FILE [--repo DIR] [--force]",
		Description: "Reads the plan (a markdown task list, or a YAML or JSON list of {id, description, dependencies}), " +
			"checks it (ids unique and safe, dependencies that exist, no cycle) and writes DIR/.claude/ralph/task-queue-<plan>.json, " +
			"the plan's id being the file's name without the extension. Ticked tasks (- [x]) are queued done.",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			a, err := operands(c, "PLAN_FILE")
			if err != nil {
				return err
			}
			file := a[0]
			id, err := plan.ID(file)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			tasks, err := queue.ReadPlan(file)
			if err != nil {
				return err
			}
			if err := plan.Check(file, id, tasks, nil); err != nil {
				return err
			}
			dir, _, err := queueDir(o.repo)
			if err != nil {
				return err
			}
			done, err := queue.Init(ctx, dir, id, tasks, o.force)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "plan %s: %d tasks queued (%d done) in %s\n", id, len(tasks), done, dir.TaskQueue(id))
			return nil
		},
	}
}
