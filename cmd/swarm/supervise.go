package main

import (
	"context"
	"os"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// superviseCommand runs a worker's supervisor (swarm.Supervise): started by spawn in the
// worker's tmux window or detached, with the arguments swarm.Options.Supervisor gets, never by
// hand.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name: supervise.SuperviseVerb, Usage: "run a worker's supervisor (started by swarm spawn)", Hidden: true, OwnSignals: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"},
			&ucli.StringFlag{Name: "swarm-dir", Usage: "the swarm directory (`DIR`)"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 || c.String("handoff") == "" || c.String("swarm-dir") == "" {
				return cli.Usagef("%s is started by swarm spawn, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if f, ok := s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				input = f
			}
			return swarm.Supervise(ctx, c.String("swarm-dir"), c.String("handoff"), c.Args().First(), s.Out, input, s.Err)
		},
	}
}
