package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/ralph/queue/runner"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

// exitBudget is run's status when the budget stopped it with tasks left.
const exitBudget = 3

// queueRunCommand is `ralph queue run PLAN --agents N`: the plan's tasks worked through.
func queueRunCommand() *cli.Command {
	var o queueRunOptions
	return &cli.Command{
		Name: "run", Operand: "plans", Usage: "work through a plan's tasks with N agents at once",
		UsageText: "ralph queue run PLAN --agents N [--agent AGENT[:MODEL]] [--budget USD [--hard-budget]] [--max-retries N] [--max-calls-per-hour N] [--iteration-timeout D] [--inactivity-timeout D] [--no-progress N] [--on-event CMD] [--commit-each] [--repo DIR] [--worktree] [--hosts hosts.yaml] [--state-dir DIR]",
		Description: "Each agent claims the next task whose dependencies are done and runs it as a dispatch of bead <plan>-<task> " +
			"(run and result records in the state directory, the agent supervised in the background), then marks it done, or " +
			"failed: back to pending through the retry queue until --max-retries attempts, then failed, its dependents blocked. " +
			"The agent is one of the agents config's (CONFIG_FILE, as dispatch reads it). The budget is checked before each agent " +
			"starts a task, against the cost the agents report in their output (claude -p --output-format json's total_cost_usd, " +
			"or the profile's pattern). A run interrupted stops the agents at work: their tasks are pending again, no retry counted, " +
			"what they left kept for the next run. A run killed leaves its claims: the next run waits for the agents still " +
			"at work, judges those that ended by their records, and puts back to pending those that never started. An attempt that " +
			"ends on a usage limit (the profile's patterns) is no failure: its task waits, pending, until the reset the message " +
			"names (30 minutes when it names none), its retries untouched. The no-progress breaker fails a task, reason " +
			"no-progress, without its other retries once --no-progress failed attempts in a row left its working tree as it " +
			"was or failed the same way (exit code and last lines). --iteration-timeout stops an attempt after D, " +
			"--inactivity-timeout once its agent printed nothing for D: a failed attempt (status timeout), retried as any other. " +
			"--max-calls-per-hour N starts at most N attempts in any hour of the run: an agent that would start one more waits, its task pending. " +
			"--commit-each commits what each attempt changed in the task's working tree, with the trailers Ralph-Loop: <plan>-<task> and " +
			"Ralph-Iteration: <attempt> (with several agents, only with --worktree: a shared tree holds other tasks' work). " +
			"With --hosts the tasks run on the hosts of hosts.yaml over " +
			"OpenSSH, as swarm run --hosts runs them (docs/remote.md): --agents defaults to the hosts' max_agents, each task " +
			"works on branch agent/<plan>-<task>, pushed to the host's clone and fetched back into its worktree here, its " +
			"records brought back; a host that stops answering for DISPATCH_HOST_OFFLINE seconds (30) is offline, and its " +
			"tasks go back to pending, held until their attempt's deadline there has passed.",
		Flags: o.AddFlags(nil),
		ExitCodes: []cli.ExitCode{{Code: cli.ExitOK, Meaning: "every task done (or skipped)"},
			{Code: cli.ExitFailure, Meaning: "tasks failed, blocked or left pending or claimed, or an error (a change the run could not record)"}, {Code: cli.ExitUsage, Meaning: "usage error"},
			{Code: exitBudget, Meaning: "the budget was reached with tasks left"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			a, err := operands(c, "PLAN")
			if err != nil {
				return err
			}
			id, err := planOf(a[0])
			if err != nil {
				return err
			}
			return runQueue(ctx, &o, id, s)
		},
	}
}

// runQueue runs plan id's queue with o's flags, prints its summary on s.Out, and says with its
// error how the run ended (queue run's exit codes).
func runQueue(ctx context.Context, o *queueRunOptions, id string, s cli.Streams) error {
	env := dispatchenv.Read(os.Getenv)
	cfg, hosts, err := runConfig(o, id, env)
	if err != nil {
		return err
	}
	cfg.Log = s.Out
	if hosts != nil {
		execs, closeHosts, err := dialQueueHosts(ctx, hosts, env, cfg, s)
		if err != nil {
			return err
		}
		defer closeHosts()
		cfg.Hosts = execs
	}
	res, err := queue.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if os.Getenv("RALPH_QUEUE_TIMING") == "1" && res.Timing.Tasks > 0 {
		printTiming(s, res.Timing)
	}
	fmt.Fprintln(s.Out, queue.Summary(id, res, cfg.Budget))
	return runEnd(id, res, cfg)
}

// dialQueueHosts connects to the hosts of --hosts: every host answers, at our version, before
// anything is claimed.
func dialQueueHosts(ctx context.Context, hosts *remote.Hosts, env dispatchenv.Settings, cfg runner.Config, s cli.Streams) ([]*executor.Remote, func(), error) {
	off, err := env.HostOffline.Seconds()
	if err != nil {
		return nil, nil, err
	}
	execs, closeHosts, err := executor.DialHosts(ctx, hosts, executor.DialOptions{Repo: cfg.Repo, StateDir: cfg.StateDir,
		Version: "dispatch version " + cli.Version(), OfflineAfter: off, KillGrace: dispatchenv.HostKillGrace, Log: s.Err, LogPrefix: "ralph: queue: "})
	if err != nil {
		return nil, nil, &cli.ExitError{Code: cli.ExitUsage, Err: err}
	}
	return execs, closeHosts, nil
}

// printTiming prints where a task's time went, per task (RALPH_QUEUE_TIMING=1).
func printTiming(s cli.Streams, tm runner.Timing) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(tm.Tasks) }
	fmt.Fprintf(s.Err, "%s: timing: %d tasks; per task: queue %.2f ms, dispatch launch %.2f ms, the attempt until its end %.2f ms\n",
		tool, tm.Tasks, per(tm.Queue), per(tm.Launch), per(tm.Wait))
}

// runEnd is how the run of plan id ended, as an error with its exit code: nil when every task
// is done (or skipped). The first that applies wins: interrupted, the budget reached with tasks
// left, tasks failed or blocked, changes not recorded, tasks left.
func runEnd(id string, res *runner.Result, cfg runner.Config) error {
	n := res.Counts
	switch {
	case res.Interrupted:
		return &cli.ExitError{Code: cli.ExitFailure, Err: errors.New("interrupted; the agents at work were stopped, their tasks pending again: the next 'ralph queue run' continues them")}
	case res.BudgetReached && n[store.Pending]+n[store.Claimed] > 0:
		return &cli.ExitError{Code: exitBudget, Err: fmt.Errorf("the budget is reached ($%s of $%s); raise --budget and run again to go on", queue.Money(res.CostUSD), queue.Money(*cfg.Budget))}
	case n[store.Failed]+n[store.Blocked] > 0:
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d tasks failed and %d are blocked; 'ralph queue status %s' lists them, 'ralph queue retry %s TASK' tries one again", n[store.Failed], n[store.Blocked], id, id)}
	case res.Errors > 0:
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d changes of the queue could not be recorded (the last: %s); %d tasks are left pending and %d claimed: fix that, then run again", res.Errors, res.LastError, n[store.Pending], n[store.Claimed])}
	case n[store.Pending]+n[store.Claimed] > 0:
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d tasks are left pending and %d claimed; 'ralph queue status %s' lists them, run again to go on", n[store.Pending], n[store.Claimed], id)}
	}
	return nil
}

// queueRunOptions are queue run's flags.
type queueRunOptions struct {
	agents                              int
	agentsGiven                         bool // else the hosts' max_agents
	agent                               string
	budget                              string // USD, read by runConfig
	budgetGiven, hardBudget             bool
	iterationTimeout, inactivityTimeout string // durations, read by runConfig
	iterationTimeoutGiven               bool   // else DISPATCH_WATCH_TIMEOUT
	maxCallsPerHour, maxRetries         int
	onEvent                             string
	noProgress                          int
	commitEach                          bool
	repo                                string
	worktree                            bool
	hosts                               string
	stateDir                            string
}

// AddFlags appends queue run's flags, each writing into o, to flags.
func (o *queueRunOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.IntFlag{Name: "agents", Destination: &o.agents, Action: cli.Given[int](&o.agentsGiven), Usage: "how many agents work at once (`N`)"},
		&ucli.StringFlag{Name: "agent", Value: "claude", Destination: &o.agent, Usage: "the agent type, with an optional model (`AGENT[:MODEL]`)"},
		&ucli.StringFlag{Name: "budget", Destination: &o.budget, Action: cli.Given[string](&o.budgetGiven), Usage: "stop starting agents once the plan's cost reaches `USD`"},
		&ucli.BoolFlag{Name: "hard-budget", Destination: &o.hardBudget, Usage: "once the budget is reached, also stop the agents at work"},
		&ucli.StringFlag{Name: "iteration-timeout", Destination: &o.iterationTimeout, Action: cli.Given[string](&o.iterationTimeoutGiven),
			Usage: "stop a task's attempt after `D` (seconds, or 90s, 30m, 1h; none: never); default DISPATCH_WATCH_TIMEOUT, 3600 s"},
		&ucli.StringFlag{Name: "inactivity-timeout", Value: "0", Destination: &o.inactivityTimeout, Usage: "stop a task's attempt once its agent printed nothing for `D` (seconds, or 90s, 30m; 0: never)"},
		&ucli.IntFlag{Name: "max-calls-per-hour", Destination: &o.maxCallsPerHour, Usage: "start at most `N` attempts in any hour; the others wait (0: no limit)"},
		&ucli.IntFlag{Name: "max-retries", Value: 3, Destination: &o.maxRetries, Usage: "attempts a task gets, the first included (`N`)"},
		&ucli.StringFlag{Name: "on-event", Destination: &o.onEvent, Usage: "run `CMD` (split into words, no shell) on each task's start, end, usage limit, breaker and failure, and the run's start and end, one JSON event on its stdin; killed after 10 s; its failure changes nothing"},
		&ucli.IntFlag{Name: "no-progress", Value: 3, Destination: &o.noProgress, Usage: "fail a task (no-progress, not retried) after `N` failed attempts in a row that changed nothing or failed the same way; 0: never"},
		&ucli.BoolFlag{Name: "commit-each", Destination: &o.commitEach, Usage: "commit what each attempt changed in its task's working tree, with trailers naming the task and the attempt"},
		repoFlag(&o.repo),
		&ucli.BoolFlag{Name: "worktree", Destination: &o.worktree, Usage: "run each task in a git worktree of its own (branch agent/<plan>-<task>), made from the repository's branch merged with its done dependencies' branches; a conflict blocks the task"},
		&ucli.StringFlag{Name: "hosts", Destination: &o.hosts, Usage: "run the tasks on the remote hosts of `hosts.yaml` (docs/remote.md), over OpenSSH; implies --worktree"},
		cli.StateDirFlagInto(&o.stateDir),
	)
}

// flagDuration reads a timeout flag: whole seconds, or a duration of 1 s or more (90s, 30m,
// 1h30m); 0 or none: none.
func flagDuration(name, v string) (time.Duration, error) {
	if v == "0" || v == "none" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n <= math.MaxInt64/int64(time.Second) {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, cli.Usagef("--%s %q: give seconds or a duration like 90s, 30m, 1h30m (0 or none: never)", name, v)
	}
	return d.Truncate(time.Second), nil
}

// runConfig reads run's flags and settings into the runner's Config for plan id: the agent of
// the agents config (agent.FindConfig's order, from the current directory), dispatch's DISPATCH_WATCH_TIMEOUT, DISPATCH_KILL_GRACE and
// DISPATCH_MIN_FREE_MB (from env) for each attempt, this program's `queue __supervise` verb.
// The flags are checked in a fixed order, so that a command line with several mistakes is
// told the same first one every time.
func runConfig(o *queueRunOptions, id string, env dispatchenv.Settings) (runner.Config, *remote.Hosts, error) {
	var cfg runner.Config
	agentsN, hosts, err := o.agentCount()
	if err != nil {
		return cfg, nil, err
	}
	if err := o.checkCounts(); err != nil {
		return cfg, nil, err
	}
	onEvent, err := hook.New(o.onEvent)
	if err != nil {
		return cfg, nil, cli.Usagef("%v", err)
	}
	onEvent.Warn = func(err error) { fmt.Fprintf(os.Stderr, "ralph: warning: %v\n", err) }
	if cfg.Budget, err = o.budgetUSD(); err != nil {
		return cfg, nil, err
	}
	dir, repo, err := queueDir(o.repo)
	if err != nil {
		return cfg, nil, err
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return cfg, nil, err
	}
	profile, name, modelArg, err := o.agentProfile()
	if err != nil {
		return cfg, nil, err
	}
	iteration, idle, err := o.timeouts(env, hosts)
	if err != nil {
		return cfg, nil, err
	}
	if err := o.checkCommitEach(hosts, agentsN); err != nil {
		return cfg, nil, err
	}
	grace, err := env.KillGrace.Seconds()
	if err != nil {
		return cfg, nil, err
	}
	free, err := env.MinFreeMB.Int()
	if err != nil {
		return cfg, nil, err
	}
	exe, err := proc.Self()
	if err != nil {
		return cfg, nil, err
	}
	return runner.Config{
		Store: store.New(dir, id), Agents: agentsN, Profile: profile, AgentName: name,
		Model: profile.Model(modelArg, os.Getenv), Budget: cfg.Budget, HardBudget: o.hardBudget,
		MaxRetries: o.maxRetries, Repo: repo, Worktree: o.worktree || hosts != nil, StateDir: stateDir,
		Self: []string{exe, "queue", supervise.SuperviseVerb, "--state-dir", stateDir},
		Env:  os.Environ(), Timeout: iteration, Inactivity: idle, KillGrace: grace,
		MinFreeMB: int64(free), NoProgress: o.noProgress, Hook: onEvent, MaxCallsPerHour: o.maxCallsPerHour,
		CommitEach: o.commitEach, Checkpoint: []string{exe, "queue", runner.CheckpointVerb},
	}, hosts, nil
}

// agentCount is how many agents work at once, and the hosts of --hosts (nil without): --agents,
// which defaults to the hosts' max_agents and may not exceed them.
func (o *queueRunOptions) agentCount() (int, *remote.Hosts, error) {
	var hosts *remote.Hosts
	agentsN := o.agents
	if hf := o.hosts; hf != "" {
		home, _ := os.UserHomeDir()
		h, err := remote.ParseHosts(hf, home)
		if err != nil {
			return 0, nil, &cli.ExitError{Code: cli.ExitUsage, Err: err}
		}
		hosts = h
		slots := 0
		for _, h := range hosts.Hosts {
			slots += h.MaxAgents
		}
		if !o.agentsGiven {
			agentsN = slots
		} else if agentsN > slots {
			return 0, nil, cli.Usagef("--agents %d: the hosts of %s run %d agents at once (their max_agents); give at most %d", agentsN, hf, slots, slots)
		}
	} else if !o.agentsGiven {
		agentsN = 0
	}
	if agentsN < 1 {
		return 0, nil, cli.Usagef("--agents N is needed: how many agents work at once (1 or more)")
	}
	return agentsN, hosts, nil
}

// checkCounts checks the flags that count attempts.
func (o *queueRunOptions) checkCounts() error {
	if o.maxRetries < 1 {
		return cli.Usagef("--max-retries %d: a task needs at least 1 attempt", o.maxRetries)
	}
	if o.maxCallsPerHour < 0 {
		return cli.Usagef("--max-calls-per-hour %d: a whole number of attempts, 0 or more (0: no limit)", o.maxCallsPerHour)
	}
	if o.noProgress < 0 {
		return cli.Usagef("--no-progress %d: a whole number of attempts, 0 or more (0 turns the breaker off)", o.noProgress)
	}
	return nil
}

// budgetUSD reads --budget (nil: none); --hard-budget needs it.
func (o *queueRunOptions) budgetUSD() (*float64, error) {
	if !o.budgetGiven {
		if o.hardBudget {
			return nil, cli.Usagef("--hard-budget needs --budget USD")
		}
		return nil, nil
	}
	v, err := strconv.ParseFloat(o.budget, 64)
	if err != nil || v < 0 || v != v {
		return nil, cli.Usagef("--budget %q: give an amount in USD, like 5 or 2.50", o.budget)
	}
	return &v, nil
}

// agentProfile finds --agent's profile in the agents config, with its name and the model
// --agent names ("" for the profile's own).
func (o *queueRunOptions) agentProfile() (profile *agent.Profile, name, modelArg string, err error) {
	agents, err := agent.LoadConfig(os.LookupEnv, "")
	if errors.Is(err, agent.ErrConfigEnvEmpty) {
		return nil, "", "", cli.Usagef("%v", err)
	}
	if err != nil {
		return nil, "", "", err
	}
	name, modelArg, err = agent.ParseSpec(o.agent)
	if err != nil {
		return nil, "", "", cli.Usagef("%v", err)
	}
	profile, err = agents.Lookup(name)
	if err != nil {
		return nil, "", "", cli.Usagef("%v", err)
	}
	return profile, name, modelArg, nil
}

// timeouts are an attempt's: --iteration-timeout (else DISPATCH_WATCH_TIMEOUT) and
// --inactivity-timeout, which the hosts' attempts do not have yet.
func (o *queueRunOptions) timeouts(env dispatchenv.Settings, hosts *remote.Hosts) (iteration, idle time.Duration, err error) {
	iteration, err = env.WatchTimeout.Seconds()
	if err != nil {
		return 0, 0, err
	}
	if o.iterationTimeoutGiven {
		if iteration, err = flagDuration("iteration-timeout", o.iterationTimeout); err != nil {
			return 0, 0, err
		}
	}
	idle, err = flagDuration("inactivity-timeout", o.inactivityTimeout)
	if err != nil {
		return 0, 0, err
	}
	if idle > 0 && hosts != nil {
		return 0, 0, cli.Usagef("--inactivity-timeout does not reach the hosts of --hosts yet; drop one of them")
	}
	return iteration, idle, nil
}

// checkCommitEach checks that --commit-each can keep each task's commit to its own work.
func (o *queueRunOptions) checkCommitEach(hosts *remote.Hosts, agentsN int) error {
	if !o.commitEach {
		return nil
	}
	switch {
	case hosts != nil:
		return cli.Usagef("--commit-each does not reach the hosts of --hosts (each task's branch is committed there already); drop one of them")
	case agentsN > 1 && !o.worktree:
		return cli.Usagef("--commit-each with %d agents needs --worktree: in one shared tree a task's commit would take the other tasks' work", agentsN)
	}
	return nil
}
