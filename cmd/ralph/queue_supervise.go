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

// queueSuperviseCommand is the hidden verb that runs one task's supervisor, started by the
// runner as a detached process; it takes its spec from the runner's handoff socket, and
// catches its own signals.
func queueSuperviseCommand() *cli.Command {
	return &cli.Command{
		Name: supervise.SuperviseVerb, Usage: "run one task's supervisor (started by ralph queue run)",
		Hidden: true, OwnSignals: true,
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"}, cli.StateDirFlag()},
		Action: func(ctx context.Context, c *ucli.Context, _ cli.Streams) error {
			if c.NArg() != 1 || c.String("handoff") == "" {
				return cli.Usagef("%s is started by ralph queue run, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if term.IsTerminal(int(os.Stdin.Fd())) {
				input = os.Stdin
			}
			return attempt.Supervise(ctx, c.String("state-dir"), c.String("handoff"), c.Args().First(), os.Stdout, input)
		},
	}
}
