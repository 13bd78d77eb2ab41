package main

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	return &cli.Command{
		Name: "spawn", Usage: "spawn a new worker", Remainder: true,
		UsageText: "swarm spawn --name N [--tmux] [--session S] [--tmux-socket K] [--worktree [--branch B] [--worktree-dir D]]\n" +
			"            [--tag T]... [--env K=V]... [--cwd P] [--on-event CMD] -- CMD...",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "name", Usage: "the worker's name (`N`): its tmux window, worktree directory and default branch"},
			&ucli.BoolFlag{Name: "tmux", Usage: "run in a tmux window (default: a background process)", DisableDefaultText: true},
			&ucli.StringFlag{Name: "session", Usage: "tmux session (`S`); default swarm-<hash of $SWARM_DIR>"},
			&ucli.StringFlag{Name: "tmux-socket", Usage: "tmux socket name (`K`, tmux -L); default tmux's default server"},
			&ucli.BoolFlag{Name: "worktree", Usage: "run in a new git worktree <repo>-worktrees/<name> of the current repository"},
			&ucli.StringFlag{Name: "branch", Usage: "the worktree's branch (`B`); default the name"},
			&ucli.StringFlag{Name: "worktree-dir", Usage: "where worktrees go (`D`; relative to the repository's parent)"},
			&ucli.StringSliceFlag{Name: "tag", Usage: "a tag (`T`), repeatable"},
			&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable `K=V` for the command, repeatable"},
			&ucli.StringFlag{Name: "cwd", Usage: "the command's working directory (`P`); ignored with --worktree"},
			&ucli.BoolFlag{Name: "ready-wait", Usage: "wait until the agent's screen shows its profile's ready pattern"},
			&ucli.IntFlag{Name: "ready-timeout", Value: 120, Usage: "give up waiting after `S` seconds (a warning; spawn still succeeds)"},
			&ucli.StringFlag{Name: "profile", Usage: "the agent profile (`P`) that tells ready, busy and waiting from the screen; default by the command"},
			&ucli.StringFlag{Name: "heartbeat", Usage: "start a heartbeat: type the message into the idle agent every `DUR` (swarm heartbeat)"},
			&ucli.StringFlag{Name: "heartbeat-expire", Usage: "stop the heartbeat after `DUR` (default: never)"},
			&ucli.StringFlag{Name: "heartbeat-message", Value: "continue", Usage: "the heartbeat's message (`M`)"},
			&ucli.StringFlag{Name: "on-event", Usage: "run `CMD` (no shell; one JSON event on its stdin) when the agent starts waiting for input and when it exits"},
		},
		Action: spawn,
	}
}

func spawn(ctx context.Context, c *ucli.Context, s cli.Streams) error {
	sp := swarm.Spec{Name: c.String("name"), Cmd: c.Args().Slice(), Tags: c.StringSlice("tag"), Profile: c.String("profile"),
		ReadyWait: c.Bool("ready-wait"), ReadyTimeout: time.Duration(c.Int("ready-timeout")) * time.Second}
	switch {
	case sp.Name == "":
		return cli.Usagef("the following arguments are required: --name")
	case len(sp.Cmd) == 0:
		return errors.New("no command provided (use -- command...)")
	}
	if cmd := c.String("on-event"); cmd != "" {
		var err error
		if sp.OnEvent, err = hook.Split(cmd); err != nil {
			return cli.Usagef("--on-event %q: %v", cmd, err)
		}
	}
	// The heartbeat's durations are read before anything is made (the Python swarm created the
	// worker, reported it, and then failed on them).
	if hb := c.String("heartbeat"); hb != "" {
		var err error
		if sp.Heartbeat, err = swarm.ParseHeartbeat(hb, c.String("heartbeat-expire"), c.String("heartbeat-message")); err != nil {
			return err
		}
	}
	if c.Bool("tmux") {
		sp.Tmux = &swarm.TmuxSpec{Session: c.String("session")}
		if c.IsSet("tmux-socket") {
			sock := c.String("tmux-socket")
			sp.Tmux.Socket = &sock
		}
	}
	if err := swarm.CheckName(sp.Name, sp.Tmux != nil); err != nil {
		return err
	}
	var err error
	if sp.Env, err = swarm.ParseEnv(c.StringSlice("env")); err != nil {
		return err
	}
	if c.Bool("worktree") {
		sp.Worktree = &swarm.WorktreeSpec{Branch: c.String("branch"), Dir: c.String("worktree-dir")}
	} else {
		sp.Dir = c.String("cwd")
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
			warnf(s, "very short heartbeat interval (%s), consider using at least 1m", c.String("heartbeat"))
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
