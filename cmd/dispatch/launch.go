package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// launchOptions are the dispatch form's arguments and flags.
type launchOptions struct {
	bead, repo, agentArg, prompt, template string
	branch                                 string
	force, noContext, worktree, noTmux     bool
	wait, retry                            bool
	dryRun                                 bool // print what would run (dryrun.go), start nothing
	verify                                 string
	timeout                                time.Duration
}

// launched is what a successful launch tells the caller.
type launched struct {
	bead    string
	attempt int
}

// launch sets up and starts one attempt. It holds the bead's lock from reading the previous
// attempt to writing the supervisor's registry entry, so concurrent dispatches of one bead
// count each attempt once and never start two agents.
func launch(ctx context.Context, o *launchOptions, s *settings, stdin io.Reader, stdout, stderr io.Writer) (*launched, error) {
	if err := record.CheckBead(o.bead); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if isVerb(o.bead) {
		return nil, cli.Usagef("%q is a dispatch verb, not a bead id", o.bead)
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repository %s is not a directory", o.repo)
	}
	cfg, err := s.agents()
	if err != nil {
		return nil, err
	}
	agentName, modelArg, err := agent.ParseSpec(o.agentArg)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	profile, err := cfg.Lookup(agentName)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	// The model as given is recorded and printed; only the agent's command line gets the name
	// it resolves to, as in dispatch.sh.
	model := profile.Model(modelArg, s.getenv)
	if model.FromConfig {
		fmt.Fprintf(stderr, "INFO: Using default model for %s: %s\n", agentName, model.Name)
	}
	prompt, err := readPrompt(o.prompt, stdin, stderr)
	if err != nil {
		return nil, err
	}
	if o.noTmux {
		s.backend = supervise.BackendProcess
	}
	if s.backend == supervise.BackendTmux {
		if _, err := exec.LookPath("tmux"); err != nil {
			return nil, errors.New("tmux is not installed (or not on PATH); install it, or pass --no-tmux to run the agent as a background process")
		}
	}
	// The agent's environment, read once: its PATH says whether the command can be found.
	env := agentEnv(ctx, s, stderr)
	workdir := repo
	if o.worktree {
		workdir = git.Repo{Dir: repo}.WorktreePath(o.bead)
	}
	if err := checkAgentCommand(profile, cfg, env, s.getenv("PATH"), workdir); err != nil {
		return nil, err // before an attempt is opened: none is used
	}
	if o.dryRun {
		return nil, printPlan(ctx, s, planned{o: o, cfg: cfg, profile: profile, model: model, prompt: prompt,
			repo: repo, workdir: workdir, env: env}, stdout)
	}
	for _, dir := range []string{existingAncestor(s.stateDir), repo} {
		if free, err := supervise.FreeMB(dir); err == nil && free < 2*s.minFreeMB {
			return nil, fmt.Errorf("only %d MB free in %s; dispatch needs %d MB to start an agent: free some space", free, dir, 2*s.minFreeMB)
		}
	}
	if err := beforeLaunch(ctx, s, agentName, repo, stdout, stderr); err != nil { // the workspace's (hooks.go)
		return nil, err
	}
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}

	d := s.dir()
	session := record.SessionName(o.bead)
	if line := replacingLine(ctx, s, o.bead, o.force || s.force); line != "" {
		fmt.Fprintln(stdout, line)
	}
	opened, err := attempt.OpenWithin(ctx, d, o.bead, s.where(o.bead), o.force || s.force, s.maxRetries)
	var refusal *attempt.Refusal
	if errors.As(err, &refusal) {
		return nil, refuse(ctx, s, refusal, agentName, model.Name, stderr)
	}
	if err != nil {
		return nil, err
	}
	defer opened.Close()
	number := opened.Number
	if opened.Aside != nil {
		// dispatch.sh read no attempt from such a record and dispatched; so do we, having kept it.
		fmt.Fprintf(stderr, "%s: warning: the previous run record of %s could not be read (%s); it is kept in %s, with the result and log it had; dispatching attempt %d\n",
			tool, o.bead, record.Printable(opened.Unreadable.Error()), opened.Aside.Dir, number)
	}

	workdir, branch, err := prepareRepo(ctx, o, repo, stderr)
	if err != nil {
		return nil, err
	}
	now := record.FormatTime(time.Now())
	template := o.template
	if template == "" {
		template = record.DefaultTemplate // dispatch.sh recorded "custom", never null
	}
	run := record.Run{
		SchemaVersion: record.SchemaVersion, Bead: o.bead, Agent: agentName, Model: model.Name, Repo: repo,
		Prompt: record.Truncate(prompt, 200), PromptHash: record.PromptHash(prompt), PromptFull: prompt,
		StartedAt: now, Status: record.StatusRunning, Attempt: number, MaxRetries: s.maxRetries,
		SessionName: session, ResultFile: record.ResultFile(s.stateDir, o.bead), TemplateName: record.Str(template),
	}
	fmt.Fprintf(stdout, "Starting agent session: %s\n", session)
	fmt.Fprintf(stdout, "Agent: %s | Model: %s\n", agentName, model.Name)
	fmt.Fprintf(stdout, "Repo: %s\n", repo)
	fmt.Fprintf(stdout, "Branch: %s\n", branch)
	fmt.Fprintf(stdout, "Attempt: %d/%d\n", number, s.maxRetries)
	if line := s.relayLine(); line != "" {
		fmt.Fprintln(stdout, line)
	}

	sent := prompt
	if !o.noContext {
		sent = augment(prompt, o.bead, branch, others(d, o.bead, repo))
	}
	inv := profile.Invoke(agent.Call{Model: model.Resolved, Prompt: sent, PromptFile: d.Layout.PromptPath(o.bead),
		Effort: effortFor(agentName, s.effort), Dir: workdir})
	verifyCmd, verifyTimeout := o.verify, 0
	if r, ok := cfg.Verify(repo); ok && verifyCmd == "" && runsTestCmd(cfg) {
		verifyCmd, verifyTimeout = r.TestCmd, r.Timeout
	}
	timeout := s.timeout
	if o.timeout > 0 {
		timeout = o.timeout
	}
	spec := &attempt.Spec{
		Attempt: supervise.Attempt{
			Name: o.bead, Number: number, Dir: workdir, Argv: inv.Argv,
			Env:    append(env, "DISPATCH_BEAD="+o.bead, fmt.Sprintf("DISPATCH_ATTEMPT=%d", number)),
			Prompt: sent, Stdin: inv.Stdin, PromptFile: inv.PromptFile, Terminal: profile.Terminal,
			Timeout: timeout, KillGrace: s.killGrace, MinFreeMB: s.minFreeMB, DiskDirs: []string{s.stateDir, workdir},
			LogPath: d.Layout.LogPath(o.bead),
		},
		Backend: s.backend, Verify: verifyCmd, VerifyTimeout: int64(verifyTimeout), Run: run,
		HookEnv: s.environment, // dispatch.sh's watcher ran the hooks in the caller's environment
	}
	if s.backend == supervise.BackendTmux {
		spec.Socket, spec.Session = s.socket, attempt.Session(o.bead)
	}
	exe, err := proc.Self()
	if err != nil {
		return nil, err
	}
	spec.Hooks = attemptHooks(s, &run, workdir, stderr) // the workspace's, relay, Truthsayer (hooks.go)
	pid, err := opened.Launch(ctx, spec, []string{exe, supervise.SuperviseVerb, "--state-dir", s.stateDir})
	if err != nil {
		opened.Close()
		launchFailed(ctx, s, spec, stderr)
		return nil, err
	}
	opened.Close()
	dispatched(ctx, spec, s.environment, stderr)

	fmt.Fprintf(stdout, "Agent dispatched. Background watcher PID: %d\n", pid)
	if s.backend == supervise.BackendTmux {
		fmt.Fprintf(stdout, "To attach: tmux -S %s attach -t %s\n", s.socket, spec.Session)
	} else {
		fmt.Fprintf(stdout, "Output: %s\n", d.Layout.LogPath(o.bead))
	}
	return &launched{bead: o.bead, attempt: number}, nil
}

// refuse tells of an attempt over DISPATCH_MAX_RETRIES, refused before anything was touched:
// dispatch.sh's words and exit status (pipelines grep them, and test for 1), what became of the
// bead's records (they are left as they are: dispatch.sh rewrote them as failed,
// max-retries-reached, so a success read as a failure), and what to do. The workspace's memory
// line and wake tell of the refusal as dispatch.sh's did.
func refuse(ctx context.Context, s *settings, r *attempt.Refusal, agentName, model string, stderr io.Writer) error {
	fmt.Fprintf(stderr, "Error: %s\n", r.Error())
	last := "its last attempt is in its records"
	switch {
	case r.Running && r.Last != nil:
		last = fmt.Sprintf("attempt %d is still running, and is left alone", r.Last.Attempt)
	case r.Running:
		last = "its agent is still running, and is left alone"
	case r.LastResult != nil && (r.Last == nil || r.Last.Attempt == r.LastResult.Attempt):
		last = fmt.Sprintf("attempt %d ended %s (%s); its records are left as they are", r.LastResult.Attempt, r.LastResult.Status, r.LastResult.Reason)
	case r.Last != nil:
		last = fmt.Sprintf("attempt %d ended %s; its records are left as they are", r.Last.Attempt, r.Last.Status)
	}
	fmt.Fprintf(stderr, "%s: %s: %s; to run it again, raise DISPATCH_MAX_RETRIES (now %d)\n", tool, r.Bead, record.Printable(last), r.MaxRetries)
	now := record.FormatTime(time.Now())
	refusedHooks(ctx, s, &record.Result{SchemaVersion: record.SchemaVersion, Bead: r.Bead, Agent: agentName,
		Status: record.StatusFailed, Reason: attempt.ReasonMaxRetries, StartedAt: now, FinishedAt: &now,
		DurationSeconds: record.Int(0), Attempt: r.MaxRetries, MaxRetries: r.MaxRetries, ExitCode: record.Int(1),
		SessionName: record.SessionName(r.Bead)}, model, stderr) // the memory line and the wake (hooks.go)
	return &cli.ExitError{Code: cli.ExitFailure}
}

// noBranch is the branch dispatch.sh printed for a directory outside git.
const noBranch = "N/A"

// prepareRepo checks out --branch, or makes the --worktree, and returns where the agent works
// and on which branch (noBranch outside git).
func prepareRepo(ctx context.Context, o *launchOptions, repo string, stderr io.Writer) (dir, branch string, err error) {
	r := git.Repo{Dir: repo}
	if o.branch != "" && !o.worktree && !r.IsRepo(ctx) {
		// dispatch.sh went on without the branch outside git; so do we, but say so.
		fmt.Fprintf(stderr, "%s: warning: --branch %s ignored: %s is not a git repository\n", tool, o.branch, repo)
		return repo, noBranch, nil
	}
	if o.worktree {
		b := o.branch
		if b == "" {
			b = "agent/" + o.bead
		}
		path := r.WorktreePath(o.bead)
		if err := r.AddWorktree(ctx, path, b); err != nil {
			return "", "", fmt.Errorf("--worktree: %w", err)
		}
		return path, b, nil
	}
	if o.branch != "" {
		if err := r.Checkout(ctx, o.branch); err != nil {
			return "", "", fmt.Errorf("--branch: %w", err)
		}
		return repo, o.branch, nil
	}
	if b, err := r.Branch(ctx); err == nil {
		return repo, b, nil
	}
	return repo, noBranch, nil
}

// replacingLine is what dispatch.sh said before it replaced a live session of bead: one whose
// run record is final is stale and cleaned up, a running one is killed with --force (as
// attempt.OpenWithin decides); "" when there is none, or it will be refused. It is read before Open
// takes the bead's lock: it only says what Open is about to do.
func replacingLine(ctx context.Context, s *settings, bead string, force bool) string {
	if live, _ := attempt.Alive(ctx, s.dir(), s.where(bead), bead); !live {
		return ""
	}
	runStatus, resultStatus := "", ""
	if r, err := record.ReadRun(s.dir().Store.RunPath(bead)); err == nil {
		if r.Attempt+1 > s.maxRetries {
			return "" // refused over DISPATCH_MAX_RETRIES before anything is replaced
		}
		runStatus = r.Status
	}
	if r, err := record.ReadResult(s.dir().Store.ResultPath(bead)); err == nil {
		resultStatus = r.Status
	}
	switch {
	case runStatus != "" && runStatus != record.StatusRunning:
		return fmt.Sprintf("Cleaning up stale tmux session '%s' (status: result=%s, run=%s)", attempt.Session(bead), resultStatus, runStatus)
	case force:
		return fmt.Sprintf("Force-killing existing session '%s'", attempt.Session(bead))
	}
	return ""
}

// existingAncestor is dir if it exists, else its nearest existing parent: the file system the
// directory is (or will be) on, even when dir is a mount of its own.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

func effortFor(agentName, effort string) string {
	if agentName == "codex" {
		return effort
	}
	return ""
}

// runsTestCmd says whether the agents config asks for its repositories' test_cmd after each
// agent ("workspace": {"run_test_cmd": true}). dispatch.sh never read repos: without the switch
// a config kept as it was runs no test command (the workspace's verify.sh runs the tests).
func runsTestCmd(cfg *agent.Config) bool {
	if cfg.Path == "" {
		return false
	}
	wc, err := workspace.ReadConfig(cfg.Path)
	return err == nil && wc.RunTestCmd
}

// agentEnv is the environment the agent starts with, before what dispatch sets (DISPATCH_BEAD,
// DISPATCH_ATTEMPT): in tmux, what dispatch.sh's agent had, started inside the server by its
// tmux new-session: the server's global environment, with tmux's updates from the caller
// (tmux.Client.SpawnEnvironment). Under cron, the login shell's environment the server was
// started with (ANTHROPIC_API_KEY, LANG), not cron's. With no server running, or --no-tmux,
// dispatch's own.
func agentEnv(ctx context.Context, s *settings, stderr io.Writer) []string {
	if s.backend != supervise.BackendTmux {
		return s.environment
	}
	env, _, err := s.tmux().SpawnEnvironment(ctx, s.environment)
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: %v; the agent gets dispatch's environment\n", tool, err)
		return s.environment
	}
	return env
}
