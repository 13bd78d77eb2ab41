package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// The verbs that end workers: kill (they stay listed, stopped) and clean (they go).

// killOptions are kill's flags.
type killOptions struct{ rmWorktree, forceDirty, all bool }

// AddFlags appends kill's flags, each writing into o, to flags.
func (o *killOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "rm-worktree", Destination: &o.rmWorktree, Usage: "remove the worker's worktree (not when it has changes)"},
		&ucli.BoolFlag{Name: "force-dirty", Destination: &o.forceDirty, Usage: "remove it even with changes"},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "every worker"},
	)
}

func killCommand() *cli.Command {
	var o killOptions
	return &cli.Command{
		Name: "kill", Operand: "workers", Usage: "stop workers (they stay listed, stopped)", UsageText: "swarm kill [NAME] [--rm-worktree] [--force-dirty] [--all]",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			// A ralph loop's monitor goes first (it would start the next iteration), then the
			// workers are read again: the monitor may have just replaced the one it ran.
			loops := false
			if o.all {
				for _, w := range st.Workers {
					loops = loop.Kill(ctx, sw, w.Name, o.rmWorktree, s.Err) || loops
				}
			} else if c.NArg() > 0 {
				loops = loop.Kill(ctx, sw, c.Args().First(), o.rmWorktree, s.Err)
			}
			if loops {
				if st, err = sw.Load(ctx); err != nil {
					return err
				}
			}
			ws := st.Workers
			if !o.all {
				if c.NArg() == 0 {
					return errors.New("must specify worker name or --all")
				}
				w, err := one(st, c.Args().First(), 1)
				if err != nil && loops {
					// A loop between two iterations has no worker: the loop was what there was to kill.
					fmt.Fprintf(s.Out, "killed %s\n", c.Args().First())
					return nil
				}
				if err != nil {
					return err
				}
				ws = []*worker.Worker{w}
			}
			// What is said about the workers is said in their order, as the Python swarm did.
			sw.StopAll(ctx, ws, func(w *worker.Worker) {
				if o.rmWorktree && w.Worktree != nil {
					if err := swarm.RemoveWorktree(ctx, w.Worktree, o.forceDirty); err != nil {
						warnf(s, "cannot remove worktree for '%s': %v", w.Name, err)
						fmt.Fprintf(s.Err, "swarm: use --force-dirty to remove anyway\n")
					}
				}
				fmt.Fprintf(s.Out, "killed %s\n", w.Name)
			})
			sw.CloseSessions(ctx, ws)
			return nil
		},
	}
}

// cleanOptions are clean's flags. --rm-worktree is the default, kept for the Python swarm's
// command lines; --no-rm-worktree is what changes it.
type cleanOptions struct{ rmWorktree, noRmWorktree, forceDirty, all bool }

// AddFlags appends clean's flags, each writing into o, to flags.
func (o *cleanOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "rm-worktree", Value: true, Destination: &o.rmWorktree, Usage: "remove the worktree (the default)", DisableDefaultText: true},
		&ucli.BoolFlag{Name: "no-rm-worktree", Destination: &o.noRmWorktree, Usage: "keep the worktree"},
		&ucli.BoolFlag{Name: "force-dirty", Destination: &o.forceDirty, Usage: "remove worktrees even with changes"},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "every stopped worker"},
	)
}

func cleanCommand() *cli.Command {
	var o cleanOptions
	return &cli.Command{
		Name: "clean", Operand: "workers", Usage: "remove stopped workers", UsageText: "swarm clean [NAME] [--no-rm-worktree] [--force-dirty] [--all]",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			var ws []*worker.Worker
			if o.all {
				lives := sw.LiveAll(ctx, st.Workers) // the lost ones closed in one write
				for i, w := range st.Workers {
					if !lives[i].Running {
						ws = append(ws, w)
					}
				}
			} else {
				if c.NArg() == 0 {
					return errors.New("must specify worker name or use --all")
				}
				w, err := one(st, c.Args().First(), 1)
				if err != nil {
					return err
				}
				if sw.Live(ctx, w).Running {
					return fmt.Errorf("cannot clean running worker '%s'", w.Name)
				}
				ws = []*worker.Worker{w}
			}
			for _, w := range ws {
				if w.Worktree != nil && !o.noRmWorktree {
					if err := swarm.RemoveWorktree(ctx, w.Worktree, o.forceDirty); err != nil {
						warnf(s, "preserving worktree for '%s': %v", w.Name, err)
						fmt.Fprintf(s.Err, "swarm: worktree at: %s\nswarm: use --force-dirty to remove anyway\n", w.Worktree.Path)
					}
				}
				sw.Clean(ctx, w)
				fmt.Fprintf(s.Out, "cleaned %s\n", w.Name)
			}
			sw.CloseSessions(ctx, ws)
			return nil
		},
	}
}
