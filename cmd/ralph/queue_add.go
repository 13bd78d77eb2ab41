package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	ucli "github.com/urfave/cli/v2"
)

// queueAddCommand is `ralph queue add PLAN TASK_ID DESCRIPTION...` or `... PLAN --from FILE`.
// queueAddOptions are queue add's flags.
type queueAddOptions struct{ repo, after, from string }

// AddFlags appends queue add's flags, each writing into o, to flags.
func (o *queueAddOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags, repoFlag(&o.repo),
		&ucli.StringFlag{Name: "after", Destination: &o.after, Usage: "the task's dependencies, comma-separated (`IDS`)"},
		&ucli.StringFlag{Name: "from", Destination: &o.from, Usage: "add the tasks of a plan file (`FILE`)"})
}

func queueAddCommand() *cli.Command {
	var o queueAddOptions
	return &cli.Command{
		Name: "add", Operand: "plans", Usage: "add tasks to a plan's queue",
		UsageText: "ralph queue add PLAN TASK_ID DESCRIPTION... [--after IDS] [--repo DIR]\nralph queue add PLAN --from FILE [--repo DIR]",
		Description: "Adds one task (its dependencies as --after t1,t2), or the tasks of a plan file (--from, in any plan format), " +
			"checked as init checks a plan, against the tasks already queued. A running 'ralph queue run' picks them up.",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			a := c.Args().Slice()
			if len(a) == 0 {
				return cli.Usagef("add takes PLAN and a task (TASK_ID DESCRIPTION...), or PLAN --from FILE")
			}
			id, err := planOf(a[0])
			if err != nil {
				return err
			}
			from := "the command line"
			var tasks []plan.Task
			switch {
			case o.from != "" && len(a) == 1:
				from = o.from
				if tasks, err = queue.ReadPlan(from); err != nil {
					return err
				}
			case o.from == "" && len(a) >= 3:
				t := plan.Task{ID: a[1], Description: strings.Join(a[2:], " ")}
				if o.after != "" {
					for _, d := range strings.Split(o.after, ",") {
						if d = strings.TrimSpace(d); d == "" {
							return cli.Usagef("--after %q has an empty id; list ids as t1,t2", o.after)
						}
						t.Dependencies = append(t.Dependencies, d)
					}
				}
				tasks = []plan.Task{t}
			default:
				return cli.Usagef("add takes PLAN TASK_ID DESCRIPTION... [--after IDS], or PLAN --from FILE")
			}
			dir, _, err := queueDir(o.repo)
			if err != nil {
				return err
			}
			if err := queue.Add(ctx, dir, id, from, tasks); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "plan %s: %d task(s) added\n", id, len(tasks))
			return nil
		},
	}
}
