package attempt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// Local is this machine as dispatch runs an attempt on it: the supervisor's place and limits
// (Machine), what surrounds a launch (the workspace's hooks, the relay, Truthsayer), and where
// it tells what it does, in dispatch.sh's words.
type Local struct {
	Machine
	// Self is the supervisor verb's command line; Launch adds the handoff and the bead.
	Self []string
	Site workspace.Site
	// Stdout gets the console's lines, Stderr the warnings, each headed by Tool (nil: none,
	// for a caller with a console of its own). Note is a line shown after the attempt's
	// banner (the relay's), "" for none.
	Stdout, Stderr io.Writer
	Tool           string
	Note           string
}

// Dispatched is an attempt whose supervisor was started.
type Dispatched struct {
	Bead    string
	Attempt int
	PID     int    // the supervisor's
	Session string // its tmux session; "" for a detached process
	Log     string // the agent's output
}

// Dispatch launches t as the bead's next attempt, and does not wait for it: the preflight
// (free disk, the workspace's pre-launch scripts), the attempt opened under the bead's lock,
// the repository prepared (--branch, --worktree), its spec (Machine.Spec, as executor.Local
// builds its attempts'), the prompt's additions, the supervisor launched with the site's
// hooks, and the launch told on Stdout. It holds the bead's lock from reading the previous
// attempt to writing the supervisor's registry entry, so concurrent dispatches of one bead
// count each attempt once and never start two agents.
//
// A pre-launch script's refusal is a *workspace.Refusal; an attempt over MaxRetries is a
// *Refusal, already told on Stderr (and to the site's hooks) when it is returned.
func (l *Local) Dispatch(ctx context.Context, t *Task) (*Dispatched, error) {
	l = l.quietByDefault()
	if err := l.preflight(ctx, t); err != nil {
		return nil, err
	}
	opened, err := l.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer opened.Close()
	workdir, branch, err := prepareRepo(ctx, t, l.Stderr, l.Tool)
	if err != nil {
		return nil, err
	}
	spec := l.Spec(t, opened.Number, workdir, branch)
	l.banner(&spec.Run, branch)
	l.surround(t, spec, workdir)
	pid, err := opened.Launch(ctx, spec, l.Self)
	if err != nil {
		opened.Close()
		l.launchFailed(ctx, spec)
		return nil, err
	}
	opened.Close()
	l.Site.Dispatched(ctx, spec.Hooks, &spec.Run, l.Stderr)
	l.launched(spec, pid)
	return &Dispatched{Bead: t.Bead, Attempt: opened.Number, PID: pid, Session: spec.Session,
		Log: l.Dir.Layout.LogPath(t.Bead)}, nil
}

// launched is dispatch.sh's console lines for an attempt whose supervisor pid was started:
// how to attach to its session, or where its output goes.
func (l *Local) launched(spec *Spec, pid int) {
	fmt.Fprintf(l.Stdout, "Agent dispatched. Background watcher PID: %d\n", pid)
	if spec.Session != "" {
		fmt.Fprintf(l.Stdout, "To attach: tmux -S %s attach -t %s\n", spec.Socket, spec.Session)
	} else {
		fmt.Fprintf(l.Stdout, "Output: %s\n", spec.Attempt.LogPath)
	}
}

// quietByDefault is l with io.Discard for a nil Stdout or Stderr.
func (l *Local) quietByDefault() *Local {
	if l.Stdout != nil && l.Stderr != nil {
		return l
	}
	c := *l
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return &c
}

// preflight is what is checked before the bead is touched: the free disk where the records and
// the repository are, and the workspace's pre-launch scripts. Then the state directory is made.
func (l *Local) preflight(ctx context.Context, t *Task) error {
	for _, dir := range []string{fsx.ExistingAncestor(l.StateDir), t.Repo} {
		if free, err := supervise.FreeMB(dir); err == nil && free < 2*l.MinFreeMB {
			return fmt.Errorf("only %d MB free in %s; dispatch needs %d MB to start an agent: free some space", free, dir, 2*l.MinFreeMB)
		}
	}
	if err := l.Site.BeforeLaunch(ctx, t.Profile.Name, t.Repo, l.Stdout, l.Stderr); err != nil {
		return err
	}
	if err := os.MkdirAll(l.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	return nil
}

// where says where bead's supervisor runs.
func (l *Local) where(bead string) Where {
	return Where{Backend: l.Backend, Tmux: l.Tmux, Session: Session(bead), KillGrace: l.KillGrace}
}

// open opens the bead's next attempt (OpenWithin), saying first what it is about to replace.
// A refusal over MaxRetries is told; a previous run record set aside is warned of.
func (l *Local) open(ctx context.Context, t *Task) (*Opened, error) {
	if line := l.replacingLine(ctx, t); line != "" {
		fmt.Fprintln(l.Stdout, line)
	}
	opened, err := OpenWithin(ctx, l.Dir, t.Bead, l.where(t.Bead), t.Force, t.MaxRetries)
	var refusal *Refusal
	if errors.As(err, &refusal) {
		l.refuse(ctx, refusal, t)
		return nil, refusal
	}
	if err != nil {
		return nil, err
	}
	if opened.Aside != nil {
		// dispatch.sh read no attempt from such a record and dispatched; so do we, having kept it.
		fmt.Fprintf(l.Stderr, "%s: warning: the previous run record of %s could not be read (%s); it is kept in %s, with the result and log it had; dispatching attempt %d\n",
			l.Tool, t.Bead, record.Printable(opened.Unreadable.Error()), opened.Aside.Dir, opened.Number)
	}
	return opened, nil
}

// replacingLine is what dispatch.sh said before it replaced a live session of bead: one whose
// run record is final is stale and cleaned up, a running one is killed with force (as
// OpenWithin decides); "" when there is none, or it will be refused. It is read before
// OpenWithin takes the bead's lock: it only says what OpenWithin is about to do.
func (l *Local) replacingLine(ctx context.Context, t *Task) string {
	bead := t.Bead
	if live, _ := Alive(ctx, l.Dir, l.where(bead), bead); !live {
		return ""
	}
	runStatus, resultStatus := "", ""
	if r, err := record.ReadRun(l.Dir.Store.RunPath(bead)); err == nil {
		if r.Attempt+1 > t.MaxRetries {
			return "" // refused over DISPATCH_MAX_RETRIES before anything is replaced
		}
		runStatus = r.Status
	}
	if r, err := record.ReadResult(l.Dir.Store.ResultPath(bead)); err == nil {
		resultStatus = r.Status
	}
	switch {
	case runStatus != "" && runStatus != record.StatusRunning:
		return fmt.Sprintf("Cleaning up stale tmux session '%s' (status: result=%s, run=%s)", Session(bead), resultStatus, runStatus)
	case t.Force:
		return fmt.Sprintf("Force-killing existing session '%s'", Session(bead))
	}
	return ""
}

// refuse tells of an attempt over DISPATCH_MAX_RETRIES, refused before anything was touched:
// dispatch.sh's words (pipelines grep them), what became of the bead's records (they are left
// as they are: dispatch.sh rewrote them as failed, max-retries-reached, so a success read as a
// failure), and what to do. The workspace's memory line and wake tell of the refusal as
// dispatch.sh's did.
func (l *Local) refuse(ctx context.Context, r *Refusal, t *Task) {
	fmt.Fprintf(l.Stderr, "Error: %s\n", r.Error())
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
	fmt.Fprintf(l.Stderr, "%s: %s: %s; to run it again, raise DISPATCH_MAX_RETRIES (now %d)\n", l.Tool, r.Bead, record.Printable(last), r.MaxRetries)
	now := record.FormatTime(time.Now())
	// The refusal as dispatch.sh recorded it (failed, max-retries-reached, the attempt
	// capped): told, not written, so that the bead's records keep its last real attempt.
	l.Site.Refused(ctx, &record.Result{SchemaVersion: record.SchemaVersion, Bead: r.Bead, Agent: t.Profile.Name,
		Status: record.StatusFailed, Reason: ReasonMaxRetries, StartedAt: now, FinishedAt: &now,
		DurationSeconds: record.Int(0), Attempt: r.MaxRetries, MaxRetries: r.MaxRetries, ExitCode: record.Int(1),
		SessionName: record.SessionName(r.Bead)}, t.Model.Name, l.Stderr)
}

// prepareRepo checks out t's branch, or makes its worktree, and returns where the agent works
// and on which branch (NoBranch outside git).
func prepareRepo(ctx context.Context, t *Task, stderr io.Writer, tool string) (dir, branch string, err error) {
	r := git.Repo{Dir: t.Repo}
	if t.Branch != "" && !t.Worktree && !r.IsRepo(ctx) {
		// dispatch.sh went on without the branch outside git; so do we, but say so.
		fmt.Fprintf(stderr, "%s: warning: --branch %s ignored: %s is not a git repository\n", tool, t.Branch, t.Repo)
		return t.Repo, NoBranch, nil
	}
	if t.Worktree {
		b := t.Branch
		if b == "" {
			b = "agent/" + t.Bead
		}
		path := r.WorktreePath(t.Bead)
		if err := r.AddWorktree(ctx, path, b); err != nil {
			return "", "", fmt.Errorf("--worktree: %w", err)
		}
		return path, b, nil
	}
	if t.Branch != "" {
		if err := r.Checkout(ctx, t.Branch); err != nil {
			return "", "", fmt.Errorf("--branch: %w", err)
		}
		return t.Repo, t.Branch, nil
	}
	if b, err := r.Branch(ctx); err == nil {
		return t.Repo, b, nil
	}
	return t.Repo, NoBranch, nil
}

// banner is dispatch.sh's console lines for an attempt about to start, and the Note.
func (l *Local) banner(run *record.Run, branch string) {
	fmt.Fprintf(l.Stdout, "Starting agent session: %s\n", run.SessionName)
	fmt.Fprintf(l.Stdout, "Agent: %s | Model: %s\n", run.Agent, run.Model)
	fmt.Fprintf(l.Stdout, "Repo: %s\n", run.Repo)
	fmt.Fprintf(l.Stdout, "Branch: %s\n", branch)
	fmt.Fprintf(l.Stdout, "Attempt: %d/%d\n", run.Attempt, run.MaxRetries)
	if l.Note != "" {
		fmt.Fprintln(l.Stdout, l.Note)
	}
}

// surround adds to t's spec what dispatch runs around its agent: the verification (--verify,
// else the agents config's test_cmd for the repository when the config asks for it), the
// site's hooks, and dispatch's own environment for them.
func (l *Local) surround(t *Task, spec *Spec, workdir string) {
	spec.Verify = t.Verify
	if r, ok := t.Config.Verify(t.Repo); ok && t.Verify == "" && runsTestCmd(t.Config) {
		spec.Verify, spec.VerifyTimeout = r.TestCmd, int64(r.Timeout)
	}
	spec.Hooks = l.Site.Hooks(t.Bead, workdir, l.Stderr)
	spec.HookEnv = l.Site.Env // dispatch.sh's watcher ran the hooks in the caller's environment
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

// launchFailed runs, for an attempt whose supervisor could not be started, the site's hooks
// for it (Site.LaunchFailed), when Launch recorded it as a failed launch.
func (l *Local) launchFailed(ctx context.Context, spec *Spec) {
	store := l.Dir.Store
	res, err := record.ReadResult(store.ResultPath(spec.Run.Bead))
	if err != nil || res.Reason != ReasonLaunchFailed || res.Attempt != spec.Run.Attempt {
		res = nil // not recorded as a failed launch: there is nothing to tell
	}
	l.Site.LaunchFailed(ctx, spec.Hooks, store.RunPath(spec.Run.Bead), store.ResultPath(spec.Run.Bead), res, spec.Run.Model, l.Stderr)
}
