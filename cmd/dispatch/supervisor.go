package main

import (
	"context"
	"os"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// superviseCommand is the hidden verb that runs one attempt's supervisor, started by launch
// inside the bead's tmux session or as a detached process; it takes its spec from launch's
// handoff socket, so the prompt and the environment never touch the disk. It catches its own
// signals (attempt.Supervise).
func superviseCommand() *cli.Command {
	return verbCommand(&cli.Command{
		Name: supervise.SuperviseVerb, Usage: "run one attempt's supervisor (started by dispatch)",
		Hidden: true, OwnSignals: true,
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"}},
		Action: func(ctx context.Context, c *ucli.Context, _ cli.Streams) error {
			if c.NArg() != 1 || c.String("handoff") == "" {
				return cli.Usagef("%s is started by dispatch, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if term.IsTerminal(int(os.Stdin.Fd())) {
				input = os.Stdin
			}
			return attempt.Supervise(ctx, c.String("state-dir"), c.String("handoff"), c.Args().First(), os.Stdout, input)
		},
	})
}
