package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/runner"
	ucli "github.com/urfave/cli/v2"
)

// queueCheckpointCommand is the hidden verb a claude agent's PreToolUse and PostToolUse hooks
// run (the settings file ralph queue run gives each attempt): it stamps the agent's state file
// (runner.Checkpoint). It always exits 0: a hook that fails must never stop the agent's tool
// (Claude Code blocks the tool on a PreToolUse hook's exit 2); what went wrong goes to stderr.
func queueCheckpointCommand() *cli.Command {
	var repo string // the verb's one flag
	return &cli.Command{
		Name: runner.CheckpointVerb, Usage: "stamp an agent's state at a tool use (run by the agent's hooks)",
		UsageText: "ralph queue " + runner.CheckpointVerb + " --repo DIR PLAN AGENT TASK ATTEMPT EVENT",
		Hidden:    true,
		Flags:     []ucli.Flag{repoFlag(&repo)},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			args := c.Args().Slice()
			n := 0
			if len(args) == 5 {
				n, _ = strconv.Atoi(args[3])
			}
			if n < 1 {
				fmt.Fprintf(s.Err, "ralph: %s is run by ralph queue's hooks, not by hand\n", runner.CheckpointVerb)
				return nil
			}
			if err := runner.Checkpoint(ctx, repo, args[0], args[1], args[2], n, args[4], os.Stdin); err != nil {
				fmt.Fprintf(s.Err, "ralph: warning: checkpoint: %v\n", err)
			}
			return nil
		},
	}
}
