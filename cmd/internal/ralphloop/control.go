package ralphloop

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// The verbs that look at a loop or change its course: status, pause, resume, stop.

// StatusCommand is `status NAME [--json]`: the loop's progress, a monitor that died recorded
// first (monitor_disconnected).
func StatusCommand(c Config) *cli.Command {
	var asJSON bool // status's one flag
	return &cli.Command{
		Name: "status", Operand: "loops", Usage: "a loop's progress", UsageText: c.usageText("TOOL status NAME [--json]"),
		Epilog: c.usageText(statusEpilog),
		Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &asJSON, Usage: "the loop's state and its worker's status as JSON"}},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			st, err := ls.Status(ctx, name)
			if err != nil {
				return err
			}
			if asJSON {
				fmt.Fprintf(s.Out, "%s\n", st.JSON())
				return nil
			}
			st.WriteText(s.Out)
			return nil
		}),
	}
}

// PauseCommand is `pause NAME`: the loop pauses after its current iteration.
func PauseCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "pause", Operand: "loops", Usage: "pause a loop after its current iteration", UsageText: c.usageText("TOOL pause NAME"),
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			was, err := ls.Pause(ctx, name)
			if err != nil {
				return err
			}
			if was == loop.StatusPaused {
				c.warnf(s, "worker '%s' is already paused", name)
				return nil
			}
			fmt.Fprintf(s.Out, "paused ralph loop for %s\n", name)
			return nil
		}),
	}
}

// ResumeCommand is `resume NAME`: a paused loop (or one whose monitor died) runs again, a
// monitor started when none runs.
func ResumeCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "resume", Operand: "loops", Usage: "resume a paused loop (and restart a monitor that died)", UsageText: c.usageText("TOOL resume NAME"),
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			resumed, err := ls.Resume(ctx, name)
			if err != nil {
				return err
			}
			if !resumed {
				c.warnf(s, "worker '%s' is not paused", name)
				return nil
			}
			fmt.Fprintf(s.Out, "resumed ralph loop for %s\n", name)
			return nil
		}),
	}
}

// StopCommand is `stop NAME [--rm-worktree [--force-dirty]]`: the loop ends (killed), its
// monitor is waited for, its worker stopped.
func StopCommand(c Config) *cli.Command {
	var o stopOptions
	return &cli.Command{
		Name: "stop", Operand: "loops", Usage: "stop a loop and its worker (swarm kill)", UsageText: c.usageText("TOOL stop NAME [--rm-worktree [--force-dirty]]"),
		Flags: o.AddFlags(nil),
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			res, err := ls.Stop(ctx, name, loop.StopOptions{RemoveWorktree: o.rmWorktree, ForceDirty: o.forceDirty})
			if err != nil {
				return err
			}
			if res.WorktreeKept != nil {
				c.warnf(s, "cannot remove worktree for '%s': %v", name, res.WorktreeKept)
				fmt.Fprintf(s.Err, "%s: use --force-dirty to remove anyway\n", c.prog())
			}
			fmt.Fprintf(s.Out, "killed %s\n", name)
			return nil
		}),
	}
}

// stopOptions are stop's flags.
type stopOptions struct{ rmWorktree, forceDirty bool }

// AddFlags appends stop's flags, each writing into o, to flags.
func (o *stopOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "rm-worktree", Destination: &o.rmWorktree, Usage: "also remove the worktree (not when it holds work) and the loop's state"},
		&ucli.BoolFlag{Name: "force-dirty", Destination: &o.forceDirty, Usage: "remove the worktree even with changes"},
	)
}

// AbortCommand is `abort NAME [--revert]`: the loop ended for good (as stop), and with
// --revert its working tree taken back to where the loop started, also for a loop that has
// already ended.
func AbortCommand(c Config) *cli.Command {
	var revert bool // abort's one flag
	return &cli.Command{
		Name: "abort", Operand: "loops", Usage: "end a loop for good (--revert: its working tree back to where it started)",
		UsageText: c.usageText("TOOL abort NAME [--revert]"),
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "revert", Destination: &revert, Usage: "reset the working tree to where the loop started (its commits undone, the changes and untracked files it found there kept), also once it has ended"},
		},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			res, err := ls.Abort(ctx, name, revert)
			if err != nil {
				return err
			}
			if res.Stopped {
				fmt.Fprintf(s.Out, "killed %s\n", name)
			}
			if res.Reverted {
				fmt.Fprintf(s.Out, "working tree %s reset to %s, where the loop started\n", res.Dir, shortCommit(res.StartCommit))
			} else if !res.Stopped {
				fmt.Fprintf(s.Out, "loop %s had already ended\n", name)
			}
			return nil
		}),
	}
}

func shortCommit(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
