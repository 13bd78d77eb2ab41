package queue

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/runner"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// ExitBudget is run's status when the budget stopped it with tasks left.
const ExitBudget = 3

func runApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " run", Usage: "work through a plan's tasks with N agents at once",
		UsageText: "ralph queue run PLAN --agents N [--agent AGENT[:MODEL]] [--budget USD [--hard-budget]] [--max-retries N] [--repo DIR] [--worktree] [--state-dir DIR]",
		Description: "Each agent claims the next task whose dependencies are done and runs it as a dispatch of bead <plan>-<task> " +
			"(run and result records in the state directory, the agent supervised in the background), then marks it done, or " +
			"failed: back to pending through the retry queue until --max-retries attempts, then failed, its dependents blocked. " +
			"The agent is one of the agents config's (CONFIG_FILE, as dispatch reads it). The budget is checked before each agent " +
			"starts a task, against the cost the agents report in their output (claude -p --output-format json's total_cost_usd, " +
			"or the profile's pattern). A run interrupted, or killed, leaves its claims: the next run waits for the agents still " +
			"at work, judges those that ended by their records, and puts back to pending those that never started.",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "agents", Usage: "how many agents work at once (`N`)"},
			&ucli.StringFlag{Name: "agent", Value: "claude", Usage: "the agent type, with an optional model (`AGENT[:MODEL]`)"},
			&ucli.StringFlag{Name: "budget", Usage: "stop starting agents once the plan's cost reaches `USD`"},
			&ucli.BoolFlag{Name: "hard-budget", Usage: "once the budget is reached, also stop the agents at work"},
			&ucli.IntFlag{Name: "max-retries", Value: 3, Usage: "attempts a task gets, the first included (`N`)"},
			repoFlag(),
			&ucli.BoolFlag{Name: "worktree", Usage: "run each task in a git worktree of its own (branch agent/<plan>-<task>)"},
			cli.StateDirFlag(),
		},
		ExitCodes: []cli.ExitCode{{Code: cli.ExitOK, Meaning: "every task done (or skipped)"},
			{Code: cli.ExitFailure, Meaning: "tasks failed or blocked, or an error"}, {Code: cli.ExitUsage, Meaning: "usage error"},
			{Code: ExitBudget, Meaning: "the budget was reached with tasks left"}},
		Action: func(c *ucli.Context) error {
			a, err := args(c, "PLAN")
			if err != nil {
				return err
			}
			return runQueue(c, a[0], stdout, stderr)
		},
	}, stdout, stderr)
}

func runQueue(c *ucli.Context, planArg string, stdout, stderr io.Writer) error {
	id, err := planOf(planArg)
	if err != nil {
		return err
	}
	if !c.IsSet("agents") || c.Int("agents") < 1 {
		return cli.Usagef("--agents N is needed: how many agents work at once (1 or more)")
	}
	if c.Int("max-retries") < 1 {
		return cli.Usagef("--max-retries %d: a task needs at least 1 attempt", c.Int("max-retries"))
	}
	var budget *float64
	if c.IsSet("budget") {
		v, err := strconv.ParseFloat(c.String("budget"), 64)
		if err != nil || v < 0 || v != v {
			return cli.Usagef("--budget %q: give an amount in USD, like 5 or 2.50", c.String("budget"))
		}
		budget = &v
	} else if c.Bool("hard-budget") {
		return cli.Usagef("--hard-budget needs --budget USD")
	}
	dir, repo, err := dirOf(c)
	if err != nil {
		return err
	}
	stateDir, err := filepath.Abs(c.String("state-dir"))
	if err != nil {
		return err
	}
	cfg, err := agents()
	if err != nil {
		return err
	}
	name, modelArg, colon := strings.Cut(c.String("agent"), ":")
	if colon && modelArg == "" {
		return cli.Usagef("empty model after the colon in %q; give AGENT:MODEL or AGENT", c.String("agent"))
	}
	profile, err := cfg.Lookup(name)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	model := profile.Model(modelArg, os.Getenv)
	timeout, err := cli.PositiveEnv("DISPATCH_WATCH_TIMEOUT", 3600)
	if err != nil {
		return err
	}
	grace, err := cli.PositiveEnv("DISPATCH_KILL_GRACE", 10)
	if err != nil {
		return err
	}
	free, err := cli.PositiveEnv("DISPATCH_MIN_FREE_MB", 100)
	if err != nil {
		return err
	}
	exe, err := self()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	s := store.New(dir, id)
	if _, err := s.View(); err != nil {
		return err
	}
	unlock, err := dir.LockRunner(c.Context)
	if err != nil {
		return err
	}
	defer unlock()
	res, err := runner.Run(c.Context, runner.Config{
		Store: s, Agents: c.Int("agents"), Profile: profile, AgentName: name, Model: model,
		Budget: budget, HardBudget: c.Bool("hard-budget"), MaxRetries: c.Int("max-retries"),
		Repo: repo, Worktree: c.Bool("worktree"), StateDir: stateDir,
		Self: []string{exe, "queue", supervise.SuperviseVerb, "--state-dir", stateDir},
		Env:  os.Environ(), Timeout: time.Duration(timeout) * time.Second, KillGrace: time.Duration(grace) * time.Second,
		MinFreeMB: int64(free), Log: stdout,
	})
	if err != nil {
		return err
	}
	if os.Getenv("RALPH_QUEUE_TIMING") == "1" && res.Timing.Tasks > 0 {
		tm := res.Timing
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(tm.Tasks) }
		fmt.Fprintf(stderr, "%s: timing: %d tasks; per task: queue %.2f ms, dispatch launch %.2f ms, the attempt until its end %.2f ms\n",
			tool, tm.Tasks, per(tm.Queue), per(tm.Launch), per(tm.Wait))
	}
	n := res.Counts
	fmt.Fprintf(stdout, "plan %s: %d done, %d failed, %d blocked, %d skipped, %d pending, %d claimed; cost $%s%s\n", id,
		n[store.Done], n[store.Failed], n[store.Blocked], n[store.Skipped], n[store.Pending], n[store.Claimed],
		money(res.CostUSD), budgetNote(budget))
	switch {
	case res.Interrupted:
		return &cli.ExitError{Code: cli.ExitFailure, Err: errors.New("interrupted; the agents at work go on, and the next 'ralph queue run' takes them back")}
	case res.BudgetReached && n[store.Pending]+n[store.Claimed] > 0:
		return &cli.ExitError{Code: ExitBudget, Err: fmt.Errorf("the budget is reached ($%s of $%s); raise --budget and run again to go on", money(res.CostUSD), money(*budget))}
	case n[store.Failed]+n[store.Blocked] > 0:
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d tasks failed and %d are blocked; 'ralph queue status %s' lists them, 'ralph queue retry %s TASK' tries one again", n[store.Failed], n[store.Blocked], id, id)}
	}
	return nil
}

func money(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func budgetNote(b *float64) string {
	if b == nil {
		return ""
	}
	return " of a $" + money(*b) + " budget"
}

// agents loads the agents config as dispatch does: CONFIG_FILE when it is set (set but empty is
// an error), else the workspace's (FLEET_WORKSPACE) config/agents.json, which must exist, else
// ./config/agents.json, or the built-in claude and codex when there is none.
func agents() (*agent.Config, error) {
	if v, ok := os.LookupEnv("CONFIG_FILE"); ok {
		if v == "" {
			return nil, cli.Usagef("CONFIG_FILE is set but empty; name the agents config, or unset it")
		}
		return agent.Load(v)
	}
	if ws := os.Getenv("FLEET_WORKSPACE"); ws != "" {
		return agent.Load(filepath.Join(ws, "config", "agents.json"))
	}
	cfg, err := agent.Load(filepath.Join("config", "agents.json"))
	if errors.Is(err, agent.ErrNoConfig) {
		return agent.Builtin(), nil
	}
	return cfg, err
}

// self is this program's path, for the supervisors it starts: os.Args[0] as found on PATH (a
// multi-call test binary must be started by the name it was started with), else the executable.
func self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, string(os.PathSeparator)) {
		p, err := execLookPath(arg0)
		if err != nil {
			return os.Executable()
		}
		arg0 = p
	}
	return filepath.Abs(arg0)
}

// superviseApp is the hidden verb that runs one task's supervisor, started by the runner as a
// detached process; it takes its spec from the runner's handoff socket.
func superviseApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " " + supervise.SuperviseVerb, Usage: "run one task's supervisor (started by ralph queue run)",
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"}, cli.StateDirFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 || c.String("handoff") == "" {
				return cli.Usagef("%s is started by ralph queue run, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if term.IsTerminal(int(os.Stdin.Fd())) {
				input = os.Stdin
			}
			return attempt.Supervise(c.Context, c.String("state-dir"), c.String("handoff"), c.Args().First(), os.Stdout, input)
		},
	}, stdout, stderr)
}
