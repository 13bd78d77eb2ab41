package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
)

// respawnOptions are respawn's flags.
type respawnOptions struct{ cleanFirst, forceDirty bool }

// AddFlags appends respawn's flags, each writing into o, to flags.
func (o *respawnOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "clean-first", Destination: &o.cleanFirst, Usage: "remove the worker's worktree and make it again from its branch (not when it has changes)"},
		&ucli.BoolFlag{Name: "force-dirty", Destination: &o.forceDirty, Usage: "with --clean-first: remove it even with changes"},
	)
}

func respawnCommand() *cli.Command {
	var o respawnOptions
	return &cli.Command{
		Name: "respawn", Operand: "workers", Usage: "restart a worker with its saved command", UsageText: "swarm respawn NAME [--clean-first [--force-dirty]]",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 {
				return cli.Usagef("the following arguments are required: name")
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			w, err := one(st, c.Args().First(), 1)
			if err != nil {
				return err
			}
			nw, err := sw.Respawn(ctx, w, o.cleanFirst, o.forceDirty)
			var kept *swarm.WorktreeKeptError
			switch {
			case errors.As(err, &kept):
				// The Python swarm's three lines.
				fmt.Fprintf(s.Err, "swarm: error: %v\nswarm: worktree at: %s\n"+
					"swarm: use --force-dirty to remove anyway, or commit changes first\n", kept, kept.Path)
				return &cli.ExitError{Code: 1}
			case errors.As(err, new(*swarm.UndoneError)):
				warnf(s, "spawn failed, cleaning up partial state")
				return err
			case err != nil:
				return err
			}
			printSpawned(s, "respawned", nw)
			return nil
		},
	}
}
