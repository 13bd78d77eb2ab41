package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

var execLookPath = exec.LookPath

// launchOptions are the dispatch form's arguments and flags.
type launchOptions struct {
	bead, repo, agentArg, prompt, template string
	branch                                 string
	force, noContext, worktree, noTmux     bool
	wait, retry                            bool
	verify                                 string
	timeout                                time.Duration
}

// reserved are the verbs; a bead may not be named like one.
var reserved = map[string]bool{"ps": true, "wait": true, "kill": true, "reconcile": true, "attach": true,
	"help": true, "version": true, supervise.SuperviseVerb: true}

// launched is what a successful launch tells the caller.
type launched struct {
	bead    string
	attempt int
}

// errRefused marks a dispatch refused after its records were written (max retries): exit 1.
var errRefused = errors.New("refused")

// launch sets up and starts one attempt. It holds the bead's lock from reading the previous
// attempt to writing the supervisor's registry entry, so concurrent dispatches of one bead
// count each attempt once and never start two agents.
func launch(ctx context.Context, o *launchOptions, s *settings, stdin io.Reader, stdout io.Writer) (*launched, error) {
	if err := record.CheckBead(o.bead); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if reserved[o.bead] {
		return nil, cli.Usagef("%q is a dispatch verb, not a bead id", o.bead)
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repository %s is not a directory", o.repo)
	}
	cfg, err := agent.Load(s.configFile)
	if err != nil {
		return nil, err
	}
	agentName, modelArg, _ := strings.Cut(o.agentArg, ":")
	profile, err := cfg.Lookup(agentName)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	model := profile.Model(modelArg, s.getenv)
	prompt, err := readPrompt(o.prompt, stdin)
	if err != nil {
		return nil, err
	}
	if o.noTmux {
		s.backend = supervise.BackendProcess
	}
	if s.backend == supervise.BackendTmux {
		if _, err := execLookPath("tmux"); err != nil {
			return nil, errors.New("tmux is not installed (or not on PATH); install it, or pass --no-tmux to run the agent as a background process")
		}
	}
	for _, dir := range []string{existingAncestor(s.stateDir), repo} {
		if free, err := supervise.FreeMB(dir); err == nil && free < 2*s.minFreeMB {
			return nil, fmt.Errorf("only %d MB free in %s; dispatch needs %d MB to start an agent: free some space", free, dir, 2*s.minFreeMB)
		}
	}
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}

	l := s.layout()
	store := record.Store{Dir: s.stateDir}
	session := record.SessionName(o.bead)
	unlock, err := lockForDispatch(ctx, o, s, l, store, session)
	if err != nil {
		return nil, err
	}
	defer unlock()

	attempt := 1
	prev, err := record.ReadRun(store.RunPath(o.bead))
	if err == nil {
		attempt = prev.Attempt + 1
		if err := archive(l, store, prev); err != nil {
			return nil, err
		}
	}

	workdir, branch, err := prepareRepo(ctx, o, repo)
	if err != nil {
		return nil, err
	}
	now := record.FormatTime(time.Now())
	var template *string
	if o.template != "" {
		template = record.Str(o.template)
	}
	run := record.Run{
		SchemaVersion: record.SchemaVersion, Bead: o.bead, Agent: agentName, Model: model, Repo: repo,
		Prompt: record.Truncate(prompt, 200), PromptHash: record.PromptHash(prompt), PromptFull: prompt,
		StartedAt: now, Status: record.StatusRunning, Attempt: attempt, MaxRetries: s.maxRetries,
		SessionName: session, ResultFile: record.ResultFile(o.bead), TemplateName: template,
	}
	if attempt > s.maxRetries {
		return nil, refuse(ctx, store, run, stdout)
	}

	fmt.Fprintf(stdout, "Starting agent session: %s\n", session)
	fmt.Fprintf(stdout, "Agent: %s | Model: %s\n", agentName, model)
	fmt.Fprintf(stdout, "Repo: %s\n", repo)
	fmt.Fprintf(stdout, "Branch: %s\n", branch)
	fmt.Fprintf(stdout, "Attempt: %d/%d\n", attempt, s.maxRetries)

	sent := prompt
	if !o.noContext {
		sent = augment(prompt, others(l, o.bead, repo))
	}
	inv := profile.Invoke(model, sent, l.PromptPath(o.bead), effortFor(agentName, s.effort))
	res := record.Result{SchemaVersion: record.SchemaVersion, Bead: o.bead, Agent: agentName,
		Status: record.StatusRunning, Reason: "dispatched", StartedAt: now, Attempt: attempt,
		MaxRetries: s.maxRetries, SessionName: session}
	// Registered before the records say "running" (pid 0: launching), so that reconcile, which
	// looks only at the registry, can never miss a running record.
	entry := &supervise.Entry{Bead: o.bead, Attempt: attempt, Backend: s.backend, StartedAt: now}
	if s.backend == supervise.BackendTmux {
		entry.Socket, entry.Session = s.socket, session
	}
	if err := l.WriteEntry(entry); err != nil {
		return nil, fmt.Errorf("registering the supervisor: %w", err)
	}
	if err := store.WriteRun(ctx, &run); err != nil {
		return nil, err
	}
	if err := store.WriteResult(ctx, &res); err != nil {
		return nil, err
	}

	verifyCmd, verifyTimeout := o.verify, 0
	if r, ok := cfg.Verify(repo); ok && verifyCmd == "" {
		verifyCmd, verifyTimeout = r.TestCmd, r.Timeout
	}
	timeout := s.timeout
	if o.timeout > 0 {
		timeout = o.timeout
	}
	spec := &supervise.Spec{
		Bead: o.bead, StateDir: s.stateDir, Dir: workdir, Argv: inv.Argv,
		Env:    append(s.environment, "DISPATCH_BEAD="+o.bead, fmt.Sprintf("DISPATCH_ATTEMPT=%d", attempt)),
		Prompt: sent, Stdin: inv.Stdin, PromptFile: inv.PromptFile,
		Timeout: supervise.Seconds(timeout / time.Second), KillGrace: supervise.Seconds(s.killGrace / time.Second),
		MinFreeMB: s.minFreeMB, Verify: verifyCmd, VerifyTimeout: supervise.Seconds(verifyTimeout),
		Backend: s.backend, Socket: s.socket, Session: session, Run: run,
	}
	pid, err := start(ctx, s, l, spec)
	if err != nil {
		closeLaunchFailure(ctx, store, run, err)
		os.Remove(l.EntryPath(o.bead))
		return nil, fmt.Errorf("starting the supervisor: %w", err)
	}
	entry.PID = pid
	l.WriteEntry(entry)

	fmt.Fprintf(stdout, "Agent dispatched. Background watcher PID: %d\n", pid)
	if s.backend == supervise.BackendTmux {
		fmt.Fprintf(stdout, "To attach: tmux -S %s attach -t %s\n", s.socket, session)
	} else {
		fmt.Fprintf(stdout, "Output: %s\n", l.LogPath(o.bead))
	}
	return &launched{bead: o.bead, attempt: attempt}, nil
}

// lockForDispatch takes the bead's lock and makes sure no supervisor of an earlier attempt is
// alive: one whose records are final is cleared away; a running one is an error, unless --force
// (or DISPATCH_FORCE), which stops it and waits for it to record its end before going on.
func lockForDispatch(ctx context.Context, o *launchOptions, s *settings, l supervise.Layout, store record.Store, session string) (func() error, error) {
	for try := 0; ; try++ {
		unlock, err := l.LockBead(ctx, o.bead, 15*time.Second)
		if errors.Is(err, fsx.ErrLocked) {
			return nil, fmt.Errorf("another dispatch of %s holds its lock; retry in a moment", o.bead)
		}
		if err != nil {
			return nil, err
		}
		live, entry := alive(ctx, s, l, o.bead, session)
		if !live {
			return unlock, nil
		}
		prev, _ := record.ReadRun(store.RunPath(o.bead))
		terminal := prev != nil && prev.Status != record.StatusRunning
		if !terminal && !(o.force || s.force) {
			unlock()
			attempt := 0
			if prev != nil {
				attempt = prev.Attempt
			}
			return nil, fmt.Errorf("%s is still running (attempt %d); pass --force to replace it, or run 'dispatch wait %s'", session, attempt, o.bead)
		}
		if try > 0 {
			unlock()
			return nil, fmt.Errorf("%s did not stop; kill it with 'dispatch kill %s' and retry", session, o.bead)
		}
		// The old supervisor needs the lock to write its final records: let go while it stops.
		unlock()
		stopSupervisor(ctx, s, entry, session, syscall.SIGHUP)
		waitGone(ctx, s, l, o.bead, session, s.killGrace+5*time.Second)
	}
}

// alive reports whether a supervisor of bead is running, by its registry entry or its session.
func alive(ctx context.Context, s *settings, l supervise.Layout, bead, session string) (bool, *supervise.Entry) {
	entry, _ := l.ReadEntry(bead)
	if entry != nil && supervise.SupervisorAlive(entry.PID, bead) {
		return true, entry
	}
	if s.backend == supervise.BackendTmux || (entry != nil && entry.Backend == supervise.BackendTmux) {
		if ok, _ := s.tmux().HasSession(ctx, session); ok {
			return true, entry
		}
	}
	return false, entry
}

// stopSupervisor asks a supervisor to stop its agent and record the end: sig to its process,
// or, when only its session is known, the session killed (which sends the pane SIGHUP).
func stopSupervisor(ctx context.Context, s *settings, entry *supervise.Entry, session string, sig syscall.Signal) {
	if entry != nil && supervise.SupervisorAlive(entry.PID, entry.Bead) {
		syscall.Kill(entry.PID, sig)
		return
	}
	s.tmux().KillSession(ctx, session)
}

// waitGone waits until bead has no live supervisor, up to limit.
func waitGone(ctx context.Context, s *settings, l supervise.Layout, bead, session string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if live, _ := alive(ctx, s, l, bead, session); !live {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// archive copies the previous attempt's records and log to state/attempts/<bead>/ before a new
// attempt overwrites them: run-<N>.json, result-<N>.json, output-<N>.log (the layout
// analyze-runs --attempts reads).
func archive(l supervise.Layout, store record.Store, prev *record.Run) error {
	bead := prev.Bead
	dir := store.AttemptsDir(bead)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keeping attempt %d: %w", prev.Attempt, err)
	}
	moves := [][2]string{
		{store.RunPath(bead), fmt.Sprintf("run-%d.json", prev.Attempt)},
		{store.ResultPath(bead), fmt.Sprintf("result-%d.json", prev.Attempt)},
		{l.LogPath(bead), fmt.Sprintf("output-%d.log", prev.Attempt)},
	}
	for _, m := range moves {
		b, err := os.ReadFile(m[0])
		if err != nil {
			continue
		}
		// Copied, not moved: the current records stay in place until the new ones replace them.
		if err := fsx.WriteFileAtomic(filepath.Join(dir, m[1]), b, 0o600); err != nil {
			return fmt.Errorf("keeping attempt %d: %w", prev.Attempt, err)
		}
	}
	return nil
}

// prepareRepo checks out --branch, or makes the --worktree, and returns where the agent works
// and on which branch.
func prepareRepo(ctx context.Context, o *launchOptions, repo string) (dir, branch string, err error) {
	r := git.Repo{Dir: repo}
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
	return repo, "(not a git repository)", nil
}

// refuse records an attempt over the limit as failed, as dispatch.sh did, and reports it.
func refuse(ctx context.Context, store record.Store, run record.Run, stdout io.Writer) error {
	out := supervise.Outcome{Status: record.StatusFailed, Reason: "max-retries-reached", Finished: time.Now(), UnknownExit: true}
	r, res := supervise.Complete(run, out)
	res.WillRetry = false
	if err := store.WriteRun(ctx, &r); err != nil {
		return err
	}
	if err := store.WriteResult(ctx, &res); err != nil {
		return err
	}
	return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%s: attempt %d is over DISPATCH_MAX_RETRIES=%d: max-retries-reached", run.Bead, run.Attempt, run.MaxRetries)}
}

// closeLaunchFailure records a supervisor that could not be started.
func closeLaunchFailure(ctx context.Context, store record.Store, run record.Run, cause error) {
	out := supervise.Outcome{Status: record.StatusFailed, Reason: "tmux-launch-failed", Finished: time.Now(), UnknownExit: true,
		Summary: cause.Error()}
	r, res := supervise.Complete(run, out)
	store.WriteRun(ctx, &r)
	store.WriteResult(ctx, &res)
}

// start launches the supervisor in the bead's tmux session, or detached, and returns its pid.
func start(ctx context.Context, s *settings, l supervise.Layout, spec *supervise.Spec) (int, error) {
	exe, err := self()
	if err != nil {
		return 0, err
	}
	if err := l.WriteSpec(spec); err != nil {
		return 0, err
	}
	argv := []string{exe, supervise.SuperviseVerb, "--state-dir", s.stateDir, spec.Bead}
	if s.backend == supervise.BackendTmux {
		return s.tmux().NewSession(ctx, spec.Session, spec.Dir, nil, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	// Its own session: the supervisor must outlive the shell, terminal or CI step that ran dispatch.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	go cmd.Wait() // reap it if it ends while dispatch still runs (--wait)
	return pid, nil
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
