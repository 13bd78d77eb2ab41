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

func killCommand() *cli.Command {
	return &cli.Command{
		Name: "kill", Usage: "stop workers (they stay listed, stopped)", UsageText: "swarm kill [NAME] [--rm-worktree] [--force-dirty] [--all]",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "rm-worktree", Usage: "remove the worker's worktree (not when it has changes)"},
			&ucli.BoolFlag{Name: "force-dirty", Usage: "remove it even with changes"},
			&ucli.BoolFlag{Name: "all", Usage: "every worker"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			// A ralph loop's monitor goes first (it would start the next iteration), then the
			// workers are read again: the monitor may have just replaced the one it ran.
			loops := false
			if c.Bool("all") {
				for _, w := range st.Workers {
					loops = loop.Kill(ctx, sw, w.Name, c.Bool("rm-worktree"), s.Err) || loops
				}
			} else if c.NArg() > 0 {
				loops = loop.Kill(ctx, sw, c.Args().First(), c.Bool("rm-worktree"), s.Err)
			}
			if loops {
				if st, err = sw.Load(ctx); err != nil {
					return err
				}
			}
			ws := st.Workers
			if !c.Bool("all") {
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
				if c.Bool("rm-worktree") && w.Worktree != nil {
					if err := swarm.RemoveWorktree(ctx, w.Worktree, c.Bool("force-dirty")); err != nil {
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

func cleanCommand() *cli.Command {
	return &cli.Command{
		Name: "clean", Usage: "remove stopped workers", UsageText: "swarm clean [NAME] [--no-rm-worktree] [--force-dirty] [--all]",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "rm-worktree", Value: true, Usage: "remove the worktree (the default)", DisableDefaultText: true},
			&ucli.BoolFlag{Name: "no-rm-worktree", Usage: "keep the worktree"},
			&ucli.BoolFlag{Name: "force-dirty", Usage: "remove worktrees even with changes"},
			&ucli.BoolFlag{Name: "all", Usage: "every stopped worker"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			var ws []*worker.Worker
			if c.Bool("all") {
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
				if w.Worktree != nil && !c.Bool("no-rm-worktree") {
					if err := swarm.RemoveWorktree(ctx, w.Worktree, c.Bool("force-dirty")); err != nil {
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
