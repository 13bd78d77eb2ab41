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
func queueAddCommand() *cli.Command {
	return &cli.Command{
		Name: "add", Operand: "plans", Usage: "add tasks to a plan's queue",
		UsageText: "ralph queue add PLAN TASK_ID DESCRIPTION... [--after IDS] [--repo DIR]\nralph queue add PLAN --from FILE [--repo DIR]",
		Description: "Adds one task (its dependencies as --after t1,t2), or the tasks of a plan file (--from, in any plan format), " +
			"checked as init checks a plan, against the tasks already queued. A running 'ralph queue run' picks them up.",
		Flags: []ucli.Flag{repoFlag(),
			&ucli.StringFlag{Name: "after", Usage: "the task's dependencies, comma-separated (`IDS`)"},
			&ucli.StringFlag{Name: "from", Usage: "add the tasks of a plan file (`FILE`)"}},
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
			case c.String("from") != "" && len(a) == 1:
				from = c.String("from")
				if tasks, err = queue.ReadPlan(from); err != nil {
					return err
				}
			case c.String("from") == "" && len(a) >= 3:
				t := plan.Task{ID: a[1], Description: strings.Join(a[2:], " ")}
				if c.String("after") != "" {
					for _, d := range strings.Split(c.String("after"), ",") {
						if d = strings.TrimSpace(d); d == "" {
							return cli.Usagef("--after %q has an empty id; list ids as t1,t2", c.String("after"))
						}
						t.Dependencies = append(t.Dependencies, d)
					}
				}
				tasks = []plan.Task{t}
			default:
				return cli.Usagef("add takes PLAN TASK_ID DESCRIPTION... [--after IDS], or PLAN --from FILE")
			}
			dir, _, err := queueDir(c)
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
