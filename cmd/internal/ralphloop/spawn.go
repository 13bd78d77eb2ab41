package ralphloop

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/cmd/internal/workerflags"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// SpawnCommand is `spawn`: a loop's state and its first iteration's worker, the prompt typed,
// then its monitor started in the background (or run here with --foreground, or not at all with
// --no-run). Its operands end in the agent's command (argparse's REMAINDER).
func SpawnCommand(c Config) *cli.Command {
	var o spawnOptions
	return &cli.Command{
		Name: "spawn", Usage: "start a loop: a worker fed the prompt file each iteration", OwnSignals: true, Remainder: true,
		UsageText: c.usageText("TOOL spawn --name N --prompt-file F [--max-iterations 50] [--inactivity-timeout 180] [--no-progress 3] [--done-pattern RE]\n" +
			"      [--check-done-continuous|--no-check-done-continuous] [--max-context PCT] [--foreground] [--no-run]\n" +
			"      [--replace] [--clean-state] [--session S] [--tmux-socket K] [--worktree|--no-worktree] [--branch B]\n" +
			"      [--worktree-dir D] [--tag T]... [--env K=V]... [--cwd P] [--ready-wait] [--ready-timeout 120]\n" +
			"      [--profile P] [--state-dir DIR] [--heartbeat DUR [--heartbeat-expire DUR] [--heartbeat-message M]]\n" +
			"      [--budget USD [--hard-budget]] [--max-calls-per-hour N] [--on-event CMD] [--commit-each] -- CMD..."),
		Description: c.usageText(spawnDescription), Epilog: c.usageText(spawnEpilog),
		Flags: o.AddFlags(nil),
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			sp, err := c.spawnSpec(&o, uc.Args().Slice(), s)
			if err != nil {
				return err
			}
			return c.spawn(ctx, s, ls, sp, o.foreground, o.noRun)
		}),
	}
}

// spawnOptions are spawn's flags: its own, and those it shares with swarm spawn (workerflags).
type spawnOptions struct {
	name, promptFile                             string
	maxIterations, inactivityTimeout, noProgress int
	maxContext                                   int
	maxContextGiven                              bool // given, it must be a percentage: 0 is refused
	donePattern                                  string
	checkDoneContinuous, noCheckDoneContinuous   bool
	noRun, foreground, replace, cleanState       bool
	worktree, noWorktree                         bool
	cwd, stateDir                                string
	tmux                                         bool // no effect: a loop always runs in tmux
	rails                                        railsOptions
	workerflags.Options
}

// AddFlags appends spawn's flags, each writing into o, to flags.
func (o *spawnOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	flags = append(flags,
		&ucli.StringFlag{Name: "name", Destination: &o.name, Usage: "the loop's and its worker's name (`N`)"},
		&ucli.StringFlag{Name: "prompt-file", Destination: &o.promptFile, Usage: "the prompt typed at each iteration (`F`)"},
		&ucli.IntFlag{Name: "max-iterations", Value: 50, Destination: &o.maxIterations, Usage: "stop after `N` iterations"},
		&ucli.IntFlag{Name: "inactivity-timeout", Value: 180, Destination: &o.inactivityTimeout, Usage: "restart an iteration whose screen did not change for `S` seconds"},
		&ucli.IntFlag{Name: "no-progress", Value: 3, Destination: &o.noProgress, Usage: "end the loop (failed, no-progress) after `N` iterations in a row that made no commit and changed no file, or failed the same way; 0: never"},
		&ucli.IntFlag{Name: "max-context", Destination: &o.maxContext, Action: cli.Given[int](&o.maxContextGiven), Usage: "nudge the agent at `PCT`% context used, end the iteration at PCT+15%"},
		&ucli.StringFlag{Name: "done-pattern", Destination: &o.donePattern, Usage: "stop the loop when the agent prints this regular expression (`RE`)"},
		&ucli.BoolFlag{Name: "check-done-continuous", Destination: &o.checkDoneContinuous, Usage: "look for the done pattern while the agent runs (default with --done-pattern)", DisableDefaultText: true},
		&ucli.BoolFlag{Name: "no-check-done-continuous", Destination: &o.noCheckDoneContinuous, Usage: "look for it only when the agent exits"},
		&ucli.BoolFlag{Name: "no-run", Destination: &o.noRun, Usage: "do not start the monitor (start it with 'run')"},
		&ucli.BoolFlag{Name: "foreground", Destination: &o.foreground, Usage: "run the monitor here, until the loop ends"},
		&ucli.BoolFlag{Name: "replace", Destination: &o.replace, Usage: "replace an existing worker of that name (its worktree is kept if it holds work)"},
		&ucli.BoolFlag{Name: "clean-state", Destination: &o.cleanState, Usage: "remove the old ralph state first: start from a fresh loop state"})
	flags = o.Tmux.AddFlags(flags)
	flags = append(flags,
		&ucli.BoolFlag{Name: "worktree", Destination: &o.worktree, Usage: "run in a git worktree <repo>-worktrees/<name> (the default)", DisableDefaultText: true},
		&ucli.BoolFlag{Name: "no-worktree", Destination: &o.noWorktree, Usage: "run in the current directory (or --cwd)"})
	flags = o.Worktree.AddFlags(flags)
	flags = o.Labels.AddFlags(flags)
	flags = append(flags,
		&ucli.StringFlag{Name: "cwd", Destination: &o.cwd, Usage: "the command's directory (`P`) with --no-worktree"})
	flags = o.Ready.AddFlags(flags)
	flags = append(flags,
		&ucli.StringFlag{Name: "state-dir", Destination: &o.stateDir, Usage: "where the iterations' run records go (`DIR`; default $STATE_DIR, else $SWARM_DIR/state)"},
		&ucli.BoolFlag{Name: "tmux", Destination: &o.tmux, Usage: "no effect, accepted for consistency with spawn (loops always run in tmux)"})
	flags = o.Heartbeat.AddFlags(flags)
	return o.rails.AddFlags(flags)
}

// railsOptions are spawn's rails flags, read into a loop's Rails by rails.
type railsOptions struct {
	budget          string // USD, read by rails
	budgetGiven     bool
	hardBudget      bool
	maxCallsPerHour int
	onEvent         string
	onEventGiven    bool // an empty --on-event is refused, not no hook
	commitEach      bool
}

// AddFlags appends the rails flags, each writing into o, to flags.
func (o *railsOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "budget", Destination: &o.budget, Action: cli.Given[string](&o.budgetGiven), Usage: "end the loop (stopped, budget) once the cost its agent reported reaches `USD`"},
		&ucli.BoolFlag{Name: "hard-budget", Destination: &o.hardBudget, Usage: "with --budget: also stop the running iteration once the cost it reported so far reaches it"},
		&ucli.IntFlag{Name: "max-calls-per-hour", Destination: &o.maxCallsPerHour, Usage: "start at most `N` iterations in any hour (the loop waits); 0: no limit"},
		&ucli.StringFlag{Name: "on-event", Destination: &o.onEvent, Action: cli.Given[string](&o.onEventGiven), Usage: "run `CMD` (no shell) on the loop's start, end, failure, breaker and limits, one JSON event on its stdin"},
		&ucli.BoolFlag{Name: "commit-each", Destination: &o.commitEach, Usage: "commit the working tree after each iteration (trailers Ralph-Loop, Ralph-Iteration)"},
	)
}

// spawnSpec is spawn's flags and command as a loop.SpawnSpec, or the usage error they are.
func (c Config) spawnSpec(o *spawnOptions, cmd []string, s cli.Streams) (sp loop.SpawnSpec, err error) {
	sp = loop.SpawnSpec{Name: o.name, PromptFile: o.promptFile, Cmd: cmd}
	var missing []string
	if sp.Name == "" {
		missing = append(missing, "--name")
	}
	if sp.PromptFile == "" {
		missing = append(missing, "--prompt-file")
	}
	if len(missing) > 0 {
		return sp, cli.Usagef("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	switch {
	case o.maxIterations < 0:
		return sp, cli.Usagef("argument --max-iterations: must be 0 or more")
	case o.inactivityTimeout < 0:
		return sp, cli.Usagef("argument --inactivity-timeout: must be 0 or more")
	case o.noProgress < 0:
		return sp, cli.Usagef("argument --no-progress: a whole number of iterations, 0 or more (0 turns the breaker off)")
	case o.maxContextGiven && (o.maxContext < 1 || o.maxContext > 100):
		return sp, cli.Usagef("argument --max-context: a percentage from 1 to 100")
	case o.worktree && o.noWorktree:
		return sp, cli.Usagef("--worktree and --no-worktree contradict each other")
	case o.checkDoneContinuous && o.noCheckDoneContinuous:
		return sp, cli.Usagef("--check-done-continuous and --no-check-done-continuous contradict each other")
	}
	sp.MaxIterations, sp.InactivityTimeout = o.maxIterations, o.inactivityTimeout
	noProgress := o.noProgress
	sp.NoProgress = &noProgress
	if o.maxContextGiven {
		mc := o.maxContext
		sp.MaxContext = &mc
	}
	if p := o.donePattern; p != "" {
		sp.DonePattern = &p
	}
	sp.CheckDoneContinuous = sp.DonePattern != nil
	if o.checkDoneContinuous {
		sp.CheckDoneContinuous = true
	} else if o.noCheckDoneContinuous {
		sp.CheckDoneContinuous = false
	}
	sp.Replace, sp.CleanState = o.replace, o.cleanState
	sp.Session, sp.Socket = o.Tmux.Session, o.Tmux.SocketName()
	sp.Worktree = !o.noWorktree
	sp.Branch, sp.WorktreeDir, sp.Cwd = o.Worktree.Branch, o.Worktree.Dir, o.cwd
	sp.Tags, sp.Env, sp.Profile = o.Labels.Tags.Value(), o.Labels.Env.Value(), o.Ready.Profile
	if o.Ready.Wait {
		wait := o.Ready.Timeout()
		sp.ReadyWait = &wait
	}
	if sp.RecordDir = o.stateDir; sp.RecordDir == "" {
		sp.RecordDir = os.Getenv("STATE_DIR")
	}
	if sp.Rails, err = o.rails.rails(); err != nil {
		return sp, err
	}
	if sp.Heartbeat = o.Heartbeat.Every; sp.Heartbeat != "" {
		sp.HeartbeatExpire, sp.HeartbeatMessage = o.Heartbeat.Expire, o.Heartbeat.Message
	}
	highIterations, tmuxFlag := sp.MaxIterations > 50, o.tmux
	sp.Checked = func() {
		if highIterations {
			c.warnf(s, "high iteration count (>50) may consume significant resources")
		}
		if tmuxFlag {
			fmt.Fprintf(s.Err, "%s: note: Ralph workers always use tmux (--tmux flag has no effect)\n", c.prog())
		}
	}
	return sp, nil
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

// rails is spawn's rails flags as a loop's Rails (nil: none given), or the usage error they are.
func (o *railsOptions) rails() (*rails.Rails, error) {
	var r rails.Rails
	if o.budgetGiven {
		v, err := strconv.ParseFloat(o.budget, 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, cli.Usagef("argument --budget %q: give an amount in USD, like 5 or 2.50", o.budget)
		}
		r.BudgetUSD = &v
	} else if o.hardBudget {
		return nil, cli.Usagef("--hard-budget needs --budget USD")
	}
	r.HardBudget = o.hardBudget
	if n := o.maxCallsPerHour; n < 0 {
		return nil, cli.Usagef("argument --max-calls-per-hour: a whole number of iterations, 0 or more (0: no limit)")
	} else {
		r.MaxCallsPerHour = n
	}
	if cmd := o.onEvent; o.onEventGiven {
		if _, err := hook.New(cmd); err != nil || strings.TrimSpace(cmd) == "" {
			return nil, cli.Usagef("argument --on-event %q: give a command, like 'notify-send ralph' (no shell: 'sh -c ...' for one)", cmd)
		}
		r.OnEvent = cmd
	}
	r.CommitEach = o.commitEach
	if r == (rails.Rails{}) {
		return nil, nil
	}
	return &r, nil
}
