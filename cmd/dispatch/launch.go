package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// launched is what a successful launch tells the caller.
type launched struct {
	bead    string
	attempt int
}

// launch starts one attempt of the dispatch form's task: it resolves the command line into an
// attempt.Task (task), and the library launches it on this machine and tells of it, without
// waiting for it (attempt.Local.Dispatch), or only shows what it would run (--dry-run).
func launch(ctx context.Context, o *dispatchOptions, s *settings, stdin io.Reader, stdout, stderr io.Writer) (*launched, error) {
	t, err := task(ctx, o, s, stdin, stderr)
	if err != nil {
		return nil, err
	}
	if o.dryRun {
		return nil, printPlan(ctx, s, t, stdout)
	}
	l, err := s.local(stdout, stderr)
	if err != nil {
		return nil, err
	}
	started, err := l.Dispatch(ctx, t)
	if err != nil {
		return nil, refusalExit(err)
	}
	return &launched{bead: o.bead, attempt: started.Attempt}, nil
}

// task resolves the dispatch form's arguments: the bead and the repository checked, the agent
// looked up with its model, the prompt read, the supervisor's backend chosen, and the agent's
// environment, in which its command must be found before an attempt is used.
func task(ctx context.Context, o *dispatchOptions, s *settings, stdin io.Reader, stderr io.Writer) (*attempt.Task, error) {
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
	t := &attempt.Task{Bead: o.bead, Repo: repo, Template: o.template, MaxRetries: s.maxRetries, Branch: o.branch, Worktree: o.worktree,
		Bare: o.noContext, Force: o.force || s.force, Verify: o.verify, Timeout: s.timeout, Effort: s.effort}
	if o.timeout > 0 {
		t.Timeout = o.timeout
	}
	if err := resolveAgent(t, o.agentArg, s, stderr); err != nil {
		return nil, err
	}
	if t.Prompt, err = readPrompt(o.prompt, stdin, stderr); err != nil {
		return nil, err
	}
	if err := chooseBackend(o, s); err != nil {
		return nil, err
	}
	// The agent's environment, read once: its PATH says whether the command can be found.
	t.Env = agentEnv(ctx, s, stderr)
	if err := checkAgentCommand(t.Profile, t.Config, t.Env, s.getenv("PATH"), workdirOf(t)); err != nil {
		return nil, err // before an attempt is opened: none is used
	}
	return t, nil
}

// resolveAgent looks up AGENT[:MODEL] in the agents config. The model as given is recorded and
// printed; only the agent's command line gets the name it resolves to, as in dispatch.sh.
func resolveAgent(t *attempt.Task, spec string, s *settings, stderr io.Writer) error {
	cfg, err := s.agents()
	if err != nil {
		return err
	}
	agentName, modelArg, err := agent.ParseSpec(spec)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	profile, err := cfg.Lookup(agentName)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	t.Config, t.Profile, t.Model = cfg, profile, profile.Model(modelArg, s.getenv)
	if t.Model.FromConfig {
		fmt.Fprintf(stderr, "INFO: Using default model for %s: %s\n", agentName, t.Model.Name)
	}
	return nil
}

// chooseBackend settles where the supervisor runs: --no-tmux is DISPATCH_BACKEND=process; tmux
// must be there to be used.
func chooseBackend(o *dispatchOptions, s *settings) error {
	if o.noTmux {
		s.backend = supervise.BackendProcess
	}
	if s.backend == supervise.BackendTmux {
		if _, err := exec.LookPath("tmux"); err != nil {
			return errors.New("tmux is not installed (or not on PATH); install it, or pass --no-tmux to run the agent as a background process")
		}
	}
	return nil
}

// workdirOf is where t's agent will work: the repository, or the bead's worktree of it.
func workdirOf(t *attempt.Task) string {
	if t.Worktree {
		return git.Repo{Dir: t.Repo}.WorktreePath(t.Bead)
	}
	return t.Repo
}

// refusalExit is the exit status of a launch's refusals: a pre-launch script's, as under
// dispatch.sh's set -e, and one over DISPATCH_MAX_RETRIES (told already), 1 as in dispatch.sh.
func refusalExit(err error) error {
	var refused *workspace.Refusal
	if errors.As(err, &refused) {
		return &cli.ExitError{Code: refused.Code, Err: err}
	}
	var overLimit *attempt.Refusal
	if errors.As(err, &overLimit) {
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return err
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
