package ralphloop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// SpawnCommand is `spawn`: a loop's state and its first iteration's worker, the prompt typed,
// then its monitor started in the background (or run here with --foreground, or not at all with
// --no-run). Its operands end in the agent's command (argparse's REMAINDER).
func SpawnCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "spawn", Usage: "start a loop: a worker fed the prompt file each iteration", OwnSignals: true, Remainder: true,
		UsageText: c.usageText("TOOL spawn --name N --prompt-file F [--max-iterations 50] [--inactivity-timeout 180] [--no-progress 3] [--done-pattern RE]\n" +
			"      [--check-done-continuous|--no-check-done-continuous] [--max-context PCT] [--foreground] [--no-run]\n" +
			"      [--replace] [--clean-state] [--session S] [--tmux-socket K] [--worktree|--no-worktree] [--branch B]\n" +
			"      [--worktree-dir D] [--tag T]... [--env K=V]... [--cwd P] [--ready-wait] [--ready-timeout 120]\n" +
			"      [--profile P] [--state-dir DIR] [--heartbeat DUR [--heartbeat-expire DUR] [--heartbeat-message M]]\n" +
			"      [--budget USD [--hard-budget]] [--max-calls-per-hour N] [--on-event CMD] [--commit-each] -- CMD..."),
		Description: c.usageText(spawnDescription), Epilog: c.usageText(spawnEpilog),
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "name", Usage: "the loop's and its worker's name (`N`)"},
			&ucli.StringFlag{Name: "prompt-file", Usage: "the prompt typed at each iteration (`F`)"},
			&ucli.IntFlag{Name: "max-iterations", Value: 50, Usage: "stop after `N` iterations"},
			&ucli.IntFlag{Name: "inactivity-timeout", Value: 180, Usage: "restart an iteration whose screen did not change for `S` seconds"},
			&ucli.IntFlag{Name: "no-progress", Value: 3, Usage: "end the loop (failed, no-progress) after `N` iterations in a row that made no commit and changed no file, or failed the same way; 0: never"},
			&ucli.IntFlag{Name: "max-context", Usage: "nudge the agent at `PCT`% context used, end the iteration at PCT+15%"},
			&ucli.StringFlag{Name: "done-pattern", Usage: "stop the loop when the agent prints this regular expression (`RE`)"},
			&ucli.BoolFlag{Name: "check-done-continuous", Usage: "look for the done pattern while the agent runs (default with --done-pattern)", DisableDefaultText: true},
			&ucli.BoolFlag{Name: "no-check-done-continuous", Usage: "look for it only when the agent exits"},
			&ucli.BoolFlag{Name: "no-run", Usage: "do not start the monitor (start it with 'run')"},
			&ucli.BoolFlag{Name: "foreground", Usage: "run the monitor here, until the loop ends"},
			&ucli.BoolFlag{Name: "replace", Usage: "replace an existing worker of that name (its worktree is kept if it holds work)"},
			&ucli.BoolFlag{Name: "clean-state", Usage: "remove the old ralph state first: start from a fresh loop state"},
			&ucli.StringFlag{Name: "session", Usage: "tmux session (`S`)"},
			&ucli.StringFlag{Name: "tmux-socket", Usage: "tmux socket name (`K`)"},
			&ucli.BoolFlag{Name: "worktree", Usage: "run in a git worktree <repo>-worktrees/<name> (the default)", DisableDefaultText: true},
			&ucli.BoolFlag{Name: "no-worktree", Usage: "run in the current directory (or --cwd)"},
			&ucli.StringFlag{Name: "branch", Usage: "the worktree's branch (`B`)"},
			&ucli.StringFlag{Name: "worktree-dir", Usage: "where worktrees go (`D`)"},
			&ucli.StringSliceFlag{Name: "tag", Usage: "a tag (`T`), repeatable"},
			&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable `K=V` for the command, repeatable"},
			&ucli.StringFlag{Name: "cwd", Usage: "the command's directory (`P`) with --no-worktree"},
			&ucli.BoolFlag{Name: "ready-wait", Usage: "wait up to --ready-timeout for the agent to be ready before typing the prompt"},
			&ucli.IntFlag{Name: "ready-timeout", Value: 120, Usage: "seconds (`S`) --ready-wait waits"},
			&ucli.StringFlag{Name: "profile", Usage: "the agent profile (`P`) for readiness and usage limits; default by the command"},
			&ucli.StringFlag{Name: "state-dir", Usage: "where the iterations' run records go (`DIR`; default $STATE_DIR, else $SWARM_DIR/state)"},
			&ucli.BoolFlag{Name: "tmux", Usage: "no effect, accepted for consistency with spawn (loops always run in tmux)"},
			&ucli.StringFlag{Name: "heartbeat", Usage: "type the heartbeat message into each iteration's agent when idle, every `DUR` (swarm heartbeat)"},
			&ucli.StringFlag{Name: "heartbeat-expire", Usage: "stop each iteration's heartbeat after `DUR`"},
			&ucli.StringFlag{Name: "heartbeat-message", Value: "continue", Usage: "the heartbeat's message (`M`)"},
			&ucli.StringFlag{Name: "budget", Usage: "end the loop (stopped, budget) once the cost its agent reported reaches `USD`"},
			&ucli.BoolFlag{Name: "hard-budget", Usage: "with --budget: also stop the running iteration once the cost it reported so far reaches it"},
			&ucli.IntFlag{Name: "max-calls-per-hour", Usage: "start at most `N` iterations in any hour (the loop waits); 0: no limit"},
			&ucli.StringFlag{Name: "on-event", Usage: "run `CMD` (no shell) on the loop's start, end, failure, breaker and limits, one JSON event on its stdin"},
			&ucli.BoolFlag{Name: "commit-each", Usage: "commit the working tree after each iteration (trailers Ralph-Loop, Ralph-Iteration)"},
		},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			sp, foreground, noRun, err := c.spawnSpec(uc, s)
			if err != nil {
				return err
			}
			return c.spawn(ctx, s, ls, sp, foreground, noRun)
		}),
	}
}

// spawnSpec is spawn's flags and command as a loop.SpawnSpec, or the usage error they are.
func (c Config) spawnSpec(uc *ucli.Context, s cli.Streams) (sp loop.SpawnSpec, foreground, noRun bool, err error) {
	sp = loop.SpawnSpec{Name: uc.String("name"), PromptFile: uc.String("prompt-file"), Cmd: uc.Args().Slice()}
	var missing []string
	if sp.Name == "" {
		missing = append(missing, "--name")
	}
	if sp.PromptFile == "" {
		missing = append(missing, "--prompt-file")
	}
	if len(missing) > 0 {
		return sp, false, false, cli.Usagef("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	switch {
	case uc.Int("max-iterations") < 0:
		return sp, false, false, cli.Usagef("argument --max-iterations: must be 0 or more")
	case uc.Int("inactivity-timeout") < 0:
		return sp, false, false, cli.Usagef("argument --inactivity-timeout: must be 0 or more")
	case uc.Int("no-progress") < 0:
		return sp, false, false, cli.Usagef("argument --no-progress: a whole number of iterations, 0 or more (0 turns the breaker off)")
	case uc.IsSet("max-context") && (uc.Int("max-context") < 1 || uc.Int("max-context") > 100):
		return sp, false, false, cli.Usagef("argument --max-context: a percentage from 1 to 100")
	case uc.Bool("worktree") && uc.Bool("no-worktree"):
		return sp, false, false, cli.Usagef("--worktree and --no-worktree contradict each other")
	case uc.Bool("check-done-continuous") && uc.Bool("no-check-done-continuous"):
		return sp, false, false, cli.Usagef("--check-done-continuous and --no-check-done-continuous contradict each other")
	}
	sp.MaxIterations, sp.InactivityTimeout = uc.Int("max-iterations"), uc.Int("inactivity-timeout")
	noProgress := uc.Int("no-progress")
	sp.NoProgress = &noProgress
	if uc.IsSet("max-context") {
		mc := uc.Int("max-context")
		sp.MaxContext = &mc
	}
	if p := uc.String("done-pattern"); p != "" {
		sp.DonePattern = &p
	}
	sp.CheckDoneContinuous = sp.DonePattern != nil
	if uc.Bool("check-done-continuous") {
		sp.CheckDoneContinuous = true
	} else if uc.Bool("no-check-done-continuous") {
		sp.CheckDoneContinuous = false
	}
	sp.Replace, sp.CleanState = uc.Bool("replace"), uc.Bool("clean-state")
	sp.Session = uc.String("session")
	if uc.IsSet("tmux-socket") {
		k := uc.String("tmux-socket")
		sp.Socket = &k
	}
	sp.Worktree = !uc.Bool("no-worktree")
	sp.Branch, sp.WorktreeDir, sp.Cwd = uc.String("branch"), uc.String("worktree-dir"), uc.String("cwd")
	sp.Tags, sp.Env, sp.Profile = uc.StringSlice("tag"), uc.StringSlice("env"), uc.String("profile")
	if uc.Bool("ready-wait") {
		wait := time.Duration(uc.Int("ready-timeout")) * time.Second
		sp.ReadyWait = &wait
	}
	if sp.RecordDir = uc.String("state-dir"); sp.RecordDir == "" {
		sp.RecordDir = os.Getenv("STATE_DIR")
	}
	if sp.Rails, err = railsOf(uc); err != nil {
		return sp, false, false, err
	}
	if sp.Heartbeat = uc.String("heartbeat"); sp.Heartbeat != "" {
		sp.HeartbeatExpire, sp.HeartbeatMessage = uc.String("heartbeat-expire"), uc.String("heartbeat-message")
	}
	highIterations, tmuxFlag := sp.MaxIterations > 50, uc.Bool("tmux")
	sp.Checked = func() {
		if highIterations {
			c.warnf(s, "high iteration count (>50) may consume significant resources")
		}
		if tmuxFlag {
			fmt.Fprintf(s.Err, "%s: note: Ralph workers always use tmux (--tmux flag has no effect)\n", c.prog())
		}
	}
	return sp, uc.Bool("foreground"), uc.Bool("no-run"), nil
}

// spawn spawns the loop sp, says so, and starts its monitor (or runs it here, or not at all).
func (c Config) spawn(ctx context.Context, s cli.Streams, ls *loop.Loops, sp loop.SpawnSpec, foreground, noRun bool) error {
	sd, err := ls.Spawn(ctx, sp)
	var pe *loop.PatternError
	var pf *loop.PreflightError
	switch {
	case errors.As(err, &pe):
		return cli.Usagef("argument --done-pattern: not a regular expression: %v", pe.Err)
	case errors.As(err, &pf):
		// The Python swarm's pre-flight failure: the worker is gone, the loop failed.
		fmt.Fprintf(s.Err, "%s: error: %v\n  fix: resolve the issue and re-run %s spawn\n", c.prog(), err, c.Tool)
		return &cli.ExitError{Code: cli.ExitFailure}
	case err != nil:
		return err
	}
	name := sp.Name
	fmt.Fprintf(s.Out, "spawned %s (tmux: %s:%s) [ralph mode: iteration 1/%d]\n", name, sd.Worker.Tmux.Session, sd.Worker.Tmux.Window,
		sd.State.MaxIterations)
	switch {
	case noRun:
		return nil
	case foreground:
		return runMonitor(ctx, ls, name)
	}
	if _, err := ls.StartMonitor(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "\nMonitor:\n")
	// The Python swarm's hints, its comments in one column (23 + the name's length wide); as
	// swarm ralph, its exact lines.
	stop := c.Tool + " stop " + name
	if c.Tool == "swarm ralph" {
		stop = "swarm kill " + name
	}
	hints := [][2]string{{c.Tool + " status " + name, "loop progress"}, {"swarm peek " + name, "terminal output"},
		{c.Tool + " logs " + name, "iteration history"}, {stop, "stop worker"}}
	width := 23 + len(name)
	for _, h := range hints {
		width = max(width, len(h[0])+1)
	}
	for _, h := range hints {
		fmt.Fprintf(s.Out, "  %-*s# %s\n", width, h[0], h[1])
	}
	return nil
}

// railsOf is spawn's rails flags as a loop's Rails (nil: none given), or the usage error they are.
func railsOf(uc *ucli.Context) (*loop.Rails, error) {
	var r loop.Rails
	if uc.IsSet("budget") {
		v, err := strconv.ParseFloat(uc.String("budget"), 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, cli.Usagef("argument --budget %q: give an amount in USD, like 5 or 2.50", uc.String("budget"))
		}
		r.BudgetUSD = &v
	} else if uc.Bool("hard-budget") {
		return nil, cli.Usagef("--hard-budget needs --budget USD")
	}
	r.HardBudget = uc.Bool("hard-budget")
	if n := uc.Int("max-calls-per-hour"); n < 0 {
		return nil, cli.Usagef("argument --max-calls-per-hour: a whole number of iterations, 0 or more (0: no limit)")
	} else {
		r.MaxCallsPerHour = n
	}
	if cmd := uc.String("on-event"); uc.IsSet("on-event") {
		if _, err := hook.New(cmd); err != nil || strings.TrimSpace(cmd) == "" {
			return nil, cli.Usagef("argument --on-event %q: give a command, like 'notify-send ralph' (no shell: 'sh -c ...' for one)", cmd)
		}
		r.OnEvent = cmd
	}
	r.CommitEach = uc.Bool("commit-each")
	if r == (loop.Rails{}) {
		return nil, nil
	}
	return &r, nil
}
