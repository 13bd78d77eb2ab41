package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	ucli "github.com/urfave/cli/v2"
)

// queueRetryCommand is `ralph queue retry PLAN TASK`: a failed task pending again.
func queueRetryCommand() *cli.Command {
	var repo string // retry's one flag
	return &cli.Command{
		Name: "retry", Operand: "plans", Usage: "try a failed task again",
		UsageText:   "ralph queue retry PLAN TASK [--repo DIR]",
		Description: "Puts a failed task back to pending with its retries at 0 (a running 'ralph queue run' picks it up); the tasks it blocked are pending again.",
		Flags:       []ucli.Flag{repoFlag(&repo)},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return editTask(ctx, c, s, repo, queue.Retry)
		},
	}
}

// queueSkipCommand is `ralph queue skip PLAN TASK`: a task left out.
func queueSkipCommand() *cli.Command {
	var repo string // skip's one flag
	return &cli.Command{
		Name: "skip", Operand: "plans", Usage: "leave a task out",
		UsageText:   "ralph queue skip PLAN TASK [--repo DIR]",
		Description: "Marks a pending, blocked or failed task skipped: it will not run, and counts as done for the tasks that depend on it.",
		Flags:       []ucli.Flag{repoFlag(&repo)},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return editTask(ctx, c, s, repo, queue.Skip)
		},
	}
}

// editTask runs retry or skip on PLAN TASK of the queue in repo (--repo) and says what it came to.
func editTask(ctx context.Context, c *ucli.Context, s cli.Streams, repo string, change func(context.Context, store.Dir, string, string) (*queue.Edited, error)) error {
	a, err := operands(c, "PLAN", "TASK")
	if err != nil {
		return err
	}
	id, err := planOf(a[0])
	if err != nil {
		return err
	}
	dir, _, err := queueDir(repo)
	if err != nil {
		return err
	}
	out, err := change(ctx, dir, id, a[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s: %s\n", a[1], out.What)
	if len(out.Moved) > 0 {
		fmt.Fprintf(s.Out, "and so: %s\n", strings.Join(out.Moved, ", "))
	}
	return nil
}
