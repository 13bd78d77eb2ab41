package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/cmd/internal/workerflags"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// spawnCommand starts a worker. Its command line ends in the agent's command, split as the
// Python swarm's argparse did (cmd is REMAINDER: everything from "--" or from the first word
// that is no option belongs to the command).
func spawnCommand() *cli.Command {
	var o spawnOptions
	return &cli.Command{
		Name: "spawn", Usage: "spawn a new worker", Remainder: true,
		UsageText: "swarm spawn --name N [--tmux] [--session S] [--tmux-socket K] [--worktree [--branch B] [--worktree-dir D]]\n" +
			"            [--tag T]... [--env K=V]... [--cwd P] [--on-event CMD] -- CMD...",
		Flags:  o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error { return spawn(ctx, c, s, &o) },
	}
}

// spawnOptions are spawn's flags: its own, and those it shares with a ralph loop's spawn.
type spawnOptions struct {
	name     string
	tmux     bool
	worktree bool
	cwd      string
	onEvent  string
	workerflags.Options
}

// AddFlags appends spawn's flags, each writing into o, to flags.
func (o *spawnOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	flags = append(flags,
		&ucli.StringFlag{Name: "name", Destination: &o.name, Usage: "the worker's name (`N`): its tmux window, worktree directory and default branch"},
		&ucli.BoolFlag{Name: "tmux", Destination: &o.tmux, Usage: "run in a tmux window (default: a background process)", DisableDefaultText: true})
	flags = o.Tmux.AddFlags(flags)
	flags = append(flags,
		&ucli.BoolFlag{Name: "worktree", Destination: &o.worktree, Usage: "run in a new git worktree <repo>-worktrees/<name> of the current repository"})
	flags = o.Worktree.AddFlags(flags)
	flags = o.Labels.AddFlags(flags)
	flags = append(flags,
		&ucli.StringFlag{Name: "cwd", Destination: &o.cwd, Usage: "the command's working directory (`P`); ignored with --worktree"})
	flags = o.Ready.AddFlags(flags)
	flags = o.Heartbeat.AddFlags(flags)
	return append(flags,
		&ucli.StringFlag{Name: "on-event", Destination: &o.onEvent, Usage: "run `CMD` (no shell; one JSON event on its stdin) when the agent starts waiting for input and when it exits"})
}

func spawn(ctx context.Context, c *ucli.Context, s cli.Streams, o *spawnOptions) error {
	sp := swarm.Spec{Name: o.name, Cmd: c.Args().Slice(), Tags: o.Labels.Tags.Value(), Profile: o.Ready.Profile,
		ReadyWait: o.Ready.Wait, ReadyTimeout: o.Ready.Timeout()}
	switch {
	case sp.Name == "":
		return cli.Usagef("the following arguments are required: --name")
	case len(sp.Cmd) == 0:
		return errors.New("no command provided (use -- command...)")
	}
	if cmd := o.onEvent; cmd != "" {
		var err error
		if sp.OnEvent, err = hook.Split(cmd); err != nil {
			return cli.Usagef("--on-event %q: %v", cmd, err)
		}
	}
	// The heartbeat's durations are read before anything is made (the Python swarm created the
	// worker, reported it, and then failed on them).
	if hb := o.Heartbeat.Every; hb != "" {
		var err error
		if sp.Heartbeat, err = swarm.ParseHeartbeat(hb, o.Heartbeat.Expire, o.Heartbeat.Message); err != nil {
			return err
		}
	}
	if o.tmux {
		sp.Tmux = &swarm.TmuxSpec{Session: o.Tmux.Session, Socket: o.Tmux.SocketName()}
	}
	if err := swarm.CheckName(sp.Name, sp.Tmux != nil); err != nil {
		return err
	}
	var err error
	if sp.Env, err = swarm.ParseEnv(o.Labels.Env.Value()); err != nil {
		return err
	}
	if o.worktree {
		sp.Worktree = &swarm.WorktreeSpec{Branch: o.Worktree.Branch, Dir: o.Worktree.Dir}
	} else {
		sp.Dir = o.cwd
	}
	sw, err := open(s)
	if err != nil {
		return err
	}
	w, err := sw.Spawn(ctx, sp)
	hb := sp.Heartbeat
	if w != nil {
		// It runs (with or without its heartbeat).
		printSpawned(s, "spawned", w)
		if hb != nil && hb.Interval < swarm.ShortHeartbeat {
			warnf(s, "very short heartbeat interval (%s), consider using at least 1m", o.Heartbeat.Every)
		}
	}
	if err != nil {
		if errors.As(err, new(*swarm.UndoneError)) {
			warnf(s, "spawn failed, cleaning up partial state")
		}
		return err
	}
	if hb != nil {
		fmt.Fprintf(s.Out, "heartbeat started (%s)\n", heartbeatTerms(hb.Interval, hb.Expire))
	}
	return nil
}

// printSpawned says where a worker runs: "spawned N (tmux: S:N)" or "spawned N (pid: P)", P its
// supervisor's pid.
func printSpawned(s cli.Streams, verb string, w *worker.Worker) {
	if w.Tmux != nil {
		fmt.Fprintf(s.Out, "%s %s (tmux: %s:%s)\n", verb, w.Name, w.Tmux.Session, w.Name)
		return
	}
	var pid int64
	if w.PID != nil {
		pid = *w.PID
	}
	fmt.Fprintf(s.Out, "%s %s (pid: %d)\n", verb, w.Name, pid)
}
