package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/cmd/internal/mergeverb"
	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmrun"
	ucli "github.com/urfave/cli/v2"
)

// ExitInterrupted is swarm run's status when a signal paused the execution (as a shell
// reports SIGINT): --resume continues it.
const exitInterrupted = 130

// runCommand is `swarm run`: a manifest's tasks in parallel (docs/swarm-run.md), and its
// verbs status, history and the hidden __supervise (an attempt's supervisor). A word that is
// none of them is the manifest.
func runCommand() *cli.Command {
	doc := runMainCommand()
	return &cli.Command{
		Name: "run", Usage: "run a work.yaml manifest of dependent tasks in parallel", OwnSignals: true,
		// The synopsis, flags and verbs are the man page's and the completions' (cli's docs.go);
		// Raw routes the command line itself.
		UsageText: doc.UsageText, Flags: doc.Flags, Commands: runVerbs(),
		Raw: func(ctx context.Context, s cli.Streams, args []string) error {
			main := runMainCommand()
			t := &cli.Tool{Name: "swarm run", Dialect: cli.Labelled, Commands: runVerbs(),
				Usage: func(w io.Writer) {
					main.App("swarm run", cli.Streams{Out: w, Err: w}).Run([]string{"swarm run", "--help"})
				},
				Default: func(ctx context.Context, s cli.Streams, args []string) error {
					ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
					defer stop()
					return cli.Run(ctx, main.App("swarm run", s), append([]string{"swarm run"}, args...))
				}}
			if len(args) == 0 {
				return cli.Usagef("give a manifest: swarm run work.yaml (or swarm run status|history|merge|wait|follow, swarm run --abort)")
			}
			return t.Run(ctx, s, args)
		},
	}
}

// runVerbs are swarm run's verbs: status, history, merge and the hidden __supervise.
func runVerbs() []*cli.Command {
	return []*cli.Command{runStatusCommand(), runHistoryCommand(), runMergeCommand(), runWaitCommand(), runFollowCommand(), supervisorverb.Command(supervisorverb.Attempt,
		"run one task attempt's supervisor (started by swarm run)", "%s is started by swarm run, not by hand")}
}

// runOptions are swarm run's flags (with a manifest, or --abort).
type runOptions struct {
	maxParallel         int
	maxParallelGiven    bool // else the hosts' max_agents, or the manifest's max_parallel
	hosts               string
	dryRun              bool
	allowOutsidePrompts bool
	resume, abort       bool
	retry, skip         ucli.StringSlice
	halt, joblog, forge string
	stateDir            string
	onEvent             string // the --on-event hook's command line (runprogress.go)
	quiet               bool   // no progress lines, no status line
}

// AddFlags appends swarm run's flags, each writing into o, to flags.
func (o *runOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.IntFlag{Name: "max-parallel", Aliases: []string{"j"}, Destination: &o.maxParallel, Action: cli.Given[int](&o.maxParallelGiven),
			Usage: "run at most `N` tasks at once", DefaultText: "the manifest's max_parallel, else 4"},
		&ucli.StringFlag{Name: "hosts", Destination: &o.hosts, Usage: "run the tasks on the remote hosts of `hosts.yaml` (docs/remote.md), over OpenSSH"},
		&ucli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "print the plan and write nothing"},
		&ucli.BoolFlag{Name: "allow-outside-prompts", Destination: &o.allowOutsidePrompts, Usage: "let a prompt_file name a file outside the repository the manifest is in (by default one that leads out of it, by .., an absolute path or a link, is refused)"},
		&ucli.BoolFlag{Name: "resume", Destination: &o.resume, Usage: "continue the current execution: what did not complete runs (again)"},
		&ucli.StringSliceFlag{Name: "retry", Destination: &o.retry, Usage: "run task `ID` again (with its blocked dependents); implies --resume"},
		&ucli.StringSliceFlag{Name: "skip", Destination: &o.skip, Usage: "skip task `ID` (its dependents run without it); implies --resume"},
		&ucli.BoolFlag{Name: "abort", Destination: &o.abort, Usage: "end the current execution: stop its run, skip what did not end"},
		&ucli.StringFlag{Name: "halt", Destination: &o.halt, Usage: "stop on failures, as GNU parallel: soon,fail=N, soon,fail=N%, now,fail=N, now,fail=N% (`WHEN`)"},
		&ucli.StringFlag{Name: "joblog", Destination: &o.joblog, Usage: "append a line per attempt to `FILE`, in GNU parallel's joblog format"},
		&ucli.StringFlag{Name: "forge", Value: "auto", Destination: &o.forge, Usage: "open a pull request per completed task: auto (gh when it is on PATH and the repository has an origin), none, or a command `CMD` printing the PR's URL"},
		&ucli.StringFlag{Name: "on-event", Destination: &o.onEvent, Usage: "run `CMD` (no shell) at each event of the run, the event as one line of JSON on its stdin (docs/swarm-run.md)"},
		&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet, Usage: "print no progress (no line per task, no status line): warnings and the summary only"},
		cli.StateDirFlagInto(&o.stateDir),
	)
}

func runMainCommand() *cli.Command {
	var o runOptions
	return &cli.Command{
		Name: "run", Usage: "run a work.yaml manifest of dependent tasks in parallel",
		UsageText: "swarm run work.yaml [--max-parallel N] [--hosts hosts.yaml] [--dry-run] [--resume] [--retry ID]... [--skip ID]...\n" +
			"          [--halt soon,fail=N%|now,fail=N] [--joblog FILE] [--forge auto|none|CMD] [--on-event CMD] [--quiet]\n" +
			"          [--allow-outside-prompts] [--state-dir DIR]\n" +
			"swarm run --abort [work.yaml]\nswarm run status [ID] [--json]\nswarm run history [ID] [--json]\n" +
			"swarm run merge [ID] [--test CMD] [--into BRANCH] [--agent NAME] [--dry-run] [--json]\n" +
			"swarm run wait [ID]\nswarm run follow [ID] [--json]",
		Flags: o.AddFlags(nil),
		ExitCodes: []cli.ExitCode{{Code: 0, Meaning: "every task completed (or was skipped)"}, {Code: 1, Meaning: "a task failed or is blocked, or --halt stopped the run, or an agent's command is not there (nothing was started)"},
			{Code: 2, Meaning: "usage error, or a manifest error (file:line); nothing was written"}, {Code: exitInterrupted, Meaning: "interrupted: the execution is paused; --resume continues it"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error { return runManifest(ctx, c, s, &o) },
	}
}

func runManifest(ctx context.Context, c *ucli.Context, s cli.Streams, o *runOptions) error {
	if o.abort {
		return runAbort(ctx, c, s, o)
	}
	if c.NArg() != 1 {
		return cli.Usagef("give one manifest: swarm run work.yaml")
	}
	halt, err := swarmrun.ParseHalt(o.halt)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if _, err := hook.New(o.onEvent); err != nil {
		return cli.Usagef("%v", err)
	}
	path := c.Args().First()
	m, err := loadManifest(ctx, o, path)
	if err != nil {
		return err
	}
	repo, err := repoOf(ctx, m, path)
	if err != nil {
		return err
	}
	var hosts *remote.Hosts
	if hf := o.hosts; hf != "" {
		home, _ := os.UserHomeDir()
		if hosts, err = remote.ParseHosts(hf, home); err != nil {
			return usage2(err)
		}
	}
	n, err := maxParallel(o, m, hosts)
	if err != nil {
		return err
	}
	if o.dryRun {
		return dryRun(s.Out, m, repo, n)
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return err
	}
	// What the run writes on stderr from here (the hosts' log too) goes above its status line.
	prog := newProgress(s.Err, o.quiet)
	defer prog.Close()
	s.Err = prog
	env := dispatchenv.Read(os.Getenv)
	if hosts != nil {
		// Every host answers, at our version, before anything is written.
		executors, closeHosts, err := dialHosts(ctx, hosts, repo, stateDir, env.HostOffline, s.Err)
		if err != nil {
			return err
		}
		defer closeHosts()
		return runWith(ctx, o, s, m, path, repo, n, halt, executors)
	}
	local, err := localExecutor(m, path, repo, stateDir, n, env)
	if err != nil {
		return err
	}
	// The slots' supervisors are let go and waited for: none outlives the run.
	defer local.Close()
	return runWith(ctx, o, s, m, path, repo, n, halt, []swarmrun.Executor{local})
}

// maxParallel is how many tasks the run runs at once: --max-parallel when given, else the
// hosts' agents together, else the manifest's (4 when it says none).
func maxParallel(o *runOptions, m *manifest.Manifest, hosts *remote.Hosts) (int, error) {
	n := o.maxParallel
	switch {
	case o.maxParallelGiven:
	case hosts != nil:
		n = 0
		for _, h := range hosts.Hosts {
			n += h.MaxAgents
		}
	default:
		n = m.MaxParallel
		if n == 0 {
			n = 4
		}
	}
	if n < 1 {
		return 0, cli.Usagef("--max-parallel %d: give at least 1", n)
	}
	return n, nil
}

// localExecutor is the executor of n slots on this machine, once every task's agent is known
// to the agents' configuration and its command is found.
func localExecutor(m *manifest.Manifest, path, repo, stateDir string, n int, env dispatchenv.Settings) (*executor.Local, error) {
	agents, err := agent.LoadConfig(os.LookupEnv, "")
	if errors.Is(err, agent.ErrConfigEnvEmpty) {
		return nil, cli.Usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	for _, t := range m.Tasks {
		if _, err := agents.Lookup(t.Agent); err != nil {
			return nil, cli.Usagef("%s:%d: task %q: %v", path, t.Line, t.ID, err)
		}
	}
	if err := checkAgentCommands(m, agents, repo, path); err != nil {
		return nil, err
	}
	exe, err := proc.Self()
	if err != nil {
		return nil, err
	}
	grace, err := env.KillGrace.Seconds()
	if err != nil {
		return nil, err
	}
	free, err := env.MinFreeMB.Int()
	if err != nil {
		return nil, err
	}
	return &executor.Local{N: n, StateDir: stateDir, Self: []string{exe, "run", supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, Getenv: os.Getenv, Env: os.Environ(), KillGrace: grace, MinFreeMB: int64(free), Template: swarmrun.Template}, nil
}

// checkAgentCommands refuses, before anything is written, a task whose agent's command is not
// there: each of its attempts would fail at once with agent-start-failed, saying nothing of
// why. A command's relative path is looked for in the repository, of which the task's worktree
// is a checkout.
func checkAgentCommands(m *manifest.Manifest, agents *agent.Config, repo, path string) error {
	for _, t := range m.Tasks {
		p, _ := agents.Lookup(t.Agent)
		if err := agent.CheckCommand(p.Command, repo, os.Environ(), os.Getenv("PATH")); err != nil {
			fix := "name it in " + agent.ConfigName + " (the built-in agents are in use)"
			if agents.Path != "" {
				fix = "fix its \"command\" in " + agents.Path
			}
			return fmt.Errorf("%s:%d: task %q: agent %s: its %v; install it, or %s; nothing was started", path, t.Line, t.ID, p.Name, err, fix)
		}
	}
	return nil
}

// runWith runs the manifest on the executors and reports the end.
func runWith(ctx context.Context, o *runOptions, s cli.Streams, m *manifest.Manifest, path, repo string, n int, halt swarmrun.Halt, executors []swarmrun.Executor) error {
	forge, err := forgeOf(ctx, o.forge, repo)
	if err != nil {
		return err
	}
	absManifest, _ := filepath.Abs(path)
	// The state records the repository's origin URL (else its absolute path), as seed 001's
	// "Git repository URL"; the manifest's repo is a path relative to the manifest.
	repoName := swarmrun.RepoURL(ctx, repo)
	cfg := swarmrun.Config{Manifest: m, ManifestPath: absManifest, Repo: repo, RepoName: repoName, Executors: executors,
		MaxParallel: n, Resume: o.resume, Retry: o.retry.Value(), Skip: o.skip.Value(), Halt: halt,
		Joblog: o.joblog, Forge: forge, Log: prefixed{w: s.Err}, PID: os.Getpid()}
	told := tellRun(o, s.Err, &cfg)
	defer told.closeHook()
	res, err := swarmrun.Run(ctx, cfg)
	told.progress.Close()
	var ue *swarmrun.UsageError
	if errors.As(err, &ue) || errors.Is(err, swarmrun.ErrBusy) {
		return cli.Usagef("%v", err)
	}
	if err != nil {
		return err
	}
	st := res.State
	switch {
	case res.Interrupted:
		fmt.Fprintf(s.Err, "swarm: execution %s paused; 'swarm run %s --resume' continues it\n", st.ExecutionID, path)
		return &cli.ExitError{Code: exitInterrupted}
	}
	sum := st.Summary
	fmt.Fprintln(s.Out, summaryLine(st))
	fmt.Fprintf(s.Out, "merge order: %s\n", strings.Join(sum.SuggestedMergeOrder, " "))
	if mc := sum.MergeConflict; mc != nil {
		fmt.Fprintf(s.Out, "merge conflict: %s\n", mc.Message)
	}
	fmt.Fprintf(s.Out, "report: %s\n", swarmrun.Paths{Root: repo}.Report(st.ExecutionID))
	if st.Status != swarmrun.ExecCompleted || res.Halted {
		return &cli.ExitError{Code: 1}
	}
	return nil
}

// dialHosts opens one connection to each host of hosts.yaml, all at once
// (executor.DialHosts), and checks that it runs our dispatch at this build's version: an
// unreachable host, one ssh cannot resolve, or one without our binaries is one line and exit
// 2, before anything is written. The hosts' offline time is offline, DISPATCH_HOST_OFFLINE
// (seconds, 30), as dispatch --host's.
func dialHosts(ctx context.Context, hosts *remote.Hosts, repo, stateDir string, offline dispatchenv.Number, log io.Writer) ([]swarmrun.Executor, func(), error) {
	off, err := offline.Seconds()
	if err != nil {
		return nil, nil, err
	}
	rs, closeHosts, err := executor.DialHosts(ctx, hosts, executor.DialOptions{Repo: repo, StateDir: stateDir,
		Version: "dispatch version " + cli.Version(), OfflineAfter: off, KillGrace: dispatchenv.HostKillGrace, Log: log, LogPrefix: "swarm: run: "})
	if err != nil {
		return nil, nil, usage2(err)
	}
	execs := make([]swarmrun.Executor, len(rs))
	for i, r := range rs {
		execs[i] = r
	}
	return execs, closeHosts, nil
}

// usage2 is bad input that is not a mistake of the command line (a bad hosts.yaml, a host
// unreachable or without our binaries): one line and exit 2, without the hint to --help.
func usage2(err error) error { return &cli.ExitError{Code: cli.ExitUsage, Err: err} }

// prefixed writes each event line as "swarm: run: …" on stderr.
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	fmt.Fprintf(p.w, "swarm: run: %s", b)
	return len(b), nil
}

// loadManifest reads the manifest at path, its prompt files inside the repository it is in
// (its directory when it is in none), or anywhere with --allow-outside-prompts. A bad
// manifest is a usage error (exit 2).
func loadManifest(ctx context.Context, ro *runOptions, path string) (*manifest.Manifest, error) {
	o := manifest.Options{AnyPromptFile: ro.allowOutsidePrompts}
	dir := filepath.Dir(path)
	if top, err := (gitx.Cmd{Dir: dir}).Output(ctx, "rev-parse", "--show-toplevel"); err == nil {
		o.Root = top
	}
	m, err := manifest.LoadWith(path, o)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return m, nil
}

// repoOf is the repository's top directory: the manifest's repo (a path relative to the
// manifest), else the current directory's.
func repoOf(ctx context.Context, m *manifest.Manifest, path string) (string, error) {
	dir := "."
	if m != nil && m.Repo != "" {
		if strings.Contains(m.Repo, "://") || strings.Contains(m.Repo, "@") {
			return "", cli.Usagef("%s: repo %q is a URL; clone it and give the clone's path as repo", path, m.Repo)
		}
		dir = m.Repo
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(path), dir)
		}
	}
	top, err := gitx.Cmd{Dir: dir}.Output(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", cli.Usagef("%s is not in a git repository; run swarm run in one, or set the manifest's repo", dir)
	}
	return top, nil
}

// forgeOf reads --forge.
func forgeOf(ctx context.Context, v, repo string) (*swarmrun.Forge, error) {
	switch v {
	case "none", "":
		return nil, nil
	case "auto":
		gh, err := exec.LookPath("gh")
		if err != nil {
			return nil, nil
		}
		if _, err := (gitx.Cmd{Dir: repo}).Run(ctx, "remote", "get-url", "origin"); err != nil {
			return nil, nil
		}
		return swarmrun.GitHub(gh, os.Environ()), nil
	}
	argv := strings.Fields(v)
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, cli.Usagef("--forge %q: %v", v, err)
	}
	return &swarmrun.Forge{Argv: argv, Env: os.Environ()}, nil
}

// dryRun prints the plan: the tasks in the order they would start with one slot, their
// branch, dependencies, agent, timeout and attempts. The manifest refuses control characters
// and bidirectional controls in what is printed here; they are escaped all the same
// (record.Printable), as the repository's path is.
func dryRun(w io.Writer, m *manifest.Manifest, repo string, n int) error {
	p := record.Printable
	fmt.Fprintf(w, "manifest %q: %d tasks on %s (base %s), at most %d at once\n", m.Name, len(m.Tasks), p(repo), p(m.BaseBranch), n)
	rows := [][]string{{"#", "TASK", "PRIORITY", "BRANCH", "DEPENDS ON", "AGENT", "TIMEOUT", "ATTEMPTS"}}
	for i, id := range m.Order() {
		t := m.Task(id)
		ag := t.Agent
		if t.Model != "" {
			ag += ":" + t.Model
		}
		to := "none"
		if t.Timeout > 0 {
			to = t.Timeout.String()
		}
		deps := strings.Join(t.DependsOn, ",")
		if deps == "" {
			deps = "-"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), p(id), p(t.Priority), p(t.Branch), p(deps), p(ag), to, strconv.Itoa(t.Retries + 1)})
	}
	cli.Table(w, rows)
	return nil
}

// runAbort is --abort.
func runAbort(ctx context.Context, c *ucli.Context, s cli.Streams, o *runOptions) error {
	var m *manifest.Manifest
	path := "."
	if c.NArg() == 1 {
		path = c.Args().First()
		var err error
		if m, err = loadManifest(ctx, o, path); err != nil {
			return err
		}
	}
	repo, err := repoOf(ctx, m, path)
	if err != nil {
		return err
	}
	st, err := swarmrun.Abort(context.WithoutCancel(ctx), swarmrun.Paths{Root: repo}, repo)
	var ue *swarmrun.UsageError
	if errors.As(err, &ue) {
		return cli.Usagef("%v", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s aborted: %d completed, %d skipped\n", st.ExecutionID, st.Summary.Completed, st.Summary.Skipped)
	return nil
}

func runStatusCommand() *cli.Command {
	var asJSON bool // status's one flag
	return &cli.Command{
		Name: "status", Usage: "show the current (or a past) execution's tasks", UsageText: "swarm run status [ID] [--json]",
		Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &asJSON, Usage: "print the state document"}},
		ExitCodes: []cli.ExitCode{{Code: 2, Meaning: "no such execution"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			repo, err := repoOf(ctx, nil, ".")
			if err != nil {
				return err
			}
			p := swarmrun.Paths{Root: repo}
			st, err := findExecution(p, c.Args().First())
			if err != nil {
				return err
			}
			merges := mergeRecord(s.Err, p, st.ExecutionID)
			if asJSON {
				return printWithMerges(s.Out, st, merges)
			}
			fmt.Fprintf(s.Out, "%s  %s  %q  started %s\n", st.ExecutionID, st.Status, st.ManifestName, st.StartedAt)
			rows := [][]string{{"TASK", "STATUS", "AGENT", "ATTEMPT", "RETRIES", "DURATION", "COMMIT", "ERROR"}}
			for _, id := range st.Order {
				t := st.Tasks[id]
				row := []string{id, t.Status, "-", "-", "-", "-", "-", "-"}
				if tr := t.Trace; tr != nil {
					row[2], row[3], row[4] = tr.AgentID, strconv.Itoa(tr.Attempt), strconv.Itoa(tr.RetryCount)
					if tr.DurationSeconds != nil {
						row[5] = fmt.Sprintf("%.1fs", *tr.DurationSeconds)
					}
					if tr.CommitSHA != nil && len(*tr.CommitSHA) > 10 {
						row[6] = (*tr.CommitSHA)[:10]
					}
				}
				if t.Error != nil {
					row[7] = t.Error.Type
				}
				rows = append(rows, row)
			}
			cli.Table(s.Out, rows)
			printMerges(s.Out, merges)
			return nil
		},
	}
}

// findExecution is the execution id names (the current one for ""), exit 2 when there is
// none: what status and history both look up.
func findExecution(p swarmrun.Paths, id string) (*swarmrun.State, error) {
	st, err := swarmrun.Find(p, id)
	if errors.Is(err, swarmrun.ErrNotFound) {
		return nil, &cli.ExitError{Code: 2, Err: err}
	}
	return st, err
}

// printIndented prints v as indented JSON and a newline.
func printIndented(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func runHistoryCommand() *cli.Command {
	var asJSON bool // history's one flag
	return &cli.Command{
		Name: "history", Usage: "list past executions (.swarm/history), or show one", UsageText: "swarm run history [ID] [--json]",
		Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &asJSON, Usage: "print JSON"}},
		ExitCodes: []cli.ExitCode{{Code: 2, Meaning: "no such execution"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			repo, err := repoOf(ctx, nil, ".")
			if err != nil {
				return err
			}
			p := swarmrun.Paths{Root: repo}
			if id := c.Args().First(); id != "" {
				st, err := findExecution(p, id)
				if err != nil {
					return err
				}
				merges := mergeRecord(s.Err, p, st.ExecutionID)
				if asJSON {
					return printWithMerges(s.Out, st, merges)
				}
				fmt.Fprint(s.Out, swarmrun.Report(st))
				printMerges(s.Out, merges)
				return nil
			}
			all, err := swarmrun.History(p)
			if err != nil {
				return err
			}
			if asJSON {
				ids := []string{}
				for _, st := range all {
					ids = append(ids, st.ExecutionID)
				}
				b, _ := json.Marshal(ids)
				fmt.Fprintf(s.Out, "%s\n", b)
				return nil
			}
			rows := [][]string{{"EXECUTION", "STATUS", "TASKS", "COMPLETED", "FAILED", "BLOCKED", "STARTED", "MERGED"}}
			for _, st := range all {
				row := []string{st.ExecutionID, st.Status, strconv.Itoa(len(st.Tasks)), "-", "-", "-", st.StartedAt, "-"}
				if sm := st.Summary; sm != nil {
					row[3], row[4], row[5] = strconv.Itoa(sm.Completed), strconv.Itoa(sm.Failed), strconv.Itoa(sm.Blocked)
				}
				if rec := mergeRecord(s.Err, p, st.ExecutionID); rec != nil {
					row[7] = mergeverb.Landed(rec)
				}
				rows = append(rows, row)
			}
			cli.Table(s.Out, rows)
			return nil
		},
	}
}
