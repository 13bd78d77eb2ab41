package swarmcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// The calls ralph's loops (internal/ralph/loop) make on swarm: each iteration of a loop is a
// swarm worker, started, watched, typed into and stopped exactly as swarm's verbs do it. They
// are thin wrappers over the verbs' own functions, so a loop's worker is a worker like any
// other (ls, peek, send, kill see it) and obeys the same rules (names, worktrees never removed
// with work in them, a supervisor that records the exit code).

// WorkerSpec is a worker a loop starts: what swarm spawn's flags would say. Loops always run in
// tmux, as the Python swarm's did.
type WorkerSpec struct {
	Name    string
	Cmd     []string
	Cwd     string   // the working directory; ignored with NewWorktree
	Env     []string // K=V, in order
	Tags    []string
	Session string  // "" for the default session
	Socket  *string // the tmux socket name (tmux -L), nil for the default server
	Profile string  // the agent profile, "" to choose by the command
	// NewWorktree makes a worktree in the current directory's repository, as spawn --worktree
	// (Branch and WorktreeDir as --branch and --worktree-dir).
	NewWorktree         bool
	Branch, WorktreeDir string
	// Worktree is an existing worktree the worker runs in (a loop's later iterations): Cwd is
	// its path, and the worker's entry names it, so kill --rm-worktree and clean find it.
	Worktree *worker.Worktree
	// Metadata is set in the worker's metadata (the loop's "ralph" and "ralph_iteration").
	Metadata worker.Object
	// Heartbeat, HeartbeatExpire and HeartbeatMessage are spawn's --heartbeat flags ("" none).
	Heartbeat, HeartbeatExpire, HeartbeatMessage string
}

// Spawn starts a worker as swarm spawn --tmux does and returns its entry. The swarm
// directory must be the one $SWARM_DIR names (spawn opens it from there).
func (H *Home) Spawn(ctx context.Context, sp *WorkerSpec) (*worker.Worker, error) {
	if d, err := statedir.SwarmFromEnv(os.LookupEnv); err != nil {
		return nil, err
	} else if abs, err := absPath(d.Root); err != nil || abs != H.h.dir.Root {
		return nil, fmt.Errorf("SWARM_DIR (%s) is not the loop's swarm directory %s", d.Root, H.h.dir.Root)
	}
	args := []string{"--name", sp.Name, "--tmux"}
	if sp.Session != "" {
		args = append(args, "--session", sp.Session)
	}
	if sp.Socket != nil {
		args = append(args, "--tmux-socket", *sp.Socket)
	}
	switch {
	case sp.NewWorktree:
		args = append(args, "--worktree")
		if sp.Branch != "" {
			args = append(args, "--branch", sp.Branch)
		}
		if sp.WorktreeDir != "" {
			args = append(args, "--worktree-dir", sp.WorktreeDir)
		}
	case sp.Worktree != nil:
		args = append(args, "--cwd", sp.Worktree.Path)
	case sp.Cwd != "":
		args = append(args, "--cwd", sp.Cwd)
	}
	for _, t := range sp.Tags {
		args = append(args, "--tag", t)
	}
	for _, kv := range sp.Env {
		args = append(args, "--env", kv)
	}
	if sp.Profile != "" {
		args = append(args, "--profile", sp.Profile)
	}
	if sp.Heartbeat != "" {
		args = append(args, "--heartbeat", sp.Heartbeat)
		if sp.HeartbeatExpire != "" {
			args = append(args, "--heartbeat-expire", sp.HeartbeatExpire)
		}
		if sp.HeartbeatMessage != "" {
			args = append(args, "--heartbeat-message", sp.HeartbeatMessage)
		}
	}
	args = append(append(args, "--"), sp.Cmd...)
	var errs bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errs}
	if err := runSpawn(ctx, e, args); err != nil {
		// spawn's own warnings (the rollback) say nothing the error does not.
		return nil, err
	}
	if errs.Len() > 0 && H.stderr != nil {
		H.stderr.Write(errs.Bytes())
	}
	var out *worker.Worker
	err := H.h.reg.Update(ctx, func(s *worker.State) error {
		w := s.Get(sp.Name)
		if w == nil {
			return fmt.Errorf("worker '%s' is gone from %s right after its spawn", sp.Name, H.h.dir.State())
		}
		for _, m := range sp.Metadata {
			w.Metadata = w.Metadata.Set(m.Key, m.Value)
		}
		if sp.Worktree != nil {
			wt := *sp.Worktree
			w.Worktree = &wt
		}
		x := *w
		out = &x
		return nil
	})
	return out, err
}

// Worker returns the entry of the worker name, nil when there is none.
func (H *Home) Worker(name string) (*worker.Worker, error) {
	s, err := H.h.reg.Load()
	if err != nil {
		return nil, err
	}
	return s.Get(name), nil
}

// Liveness is what swarm knows of a worker now.
type Liveness struct {
	Running bool
	// Outcome is how its agent ended, once its supervisor recorded it: the exit code (nil when
	// it cannot be known) and the reason ("agent-exit-3", "killed", ...).
	Outcome *worker.Outcome
}

// Live tells whether w runs, as ls and status judge it (a supervisor that died without
// recording the end is closed as lost).
func (H *Home) Live(ctx context.Context, w *worker.Worker) Liveness {
	l := H.h.check(ctx, w)
	return Liveness{Running: l.running, Outcome: l.outcome}
}

// Control opens the control socket of a supervised worker's supervisor.
func (H *Home) Control(w *worker.Worker) (*supervise.Control, error) {
	if !w.Supervised() {
		return nil, fmt.Errorf("worker '%s' was not started by this swarm (it has no supervisor)", w.Name)
	}
	return H.h.control(w)
}

// Profile is the agent profile that watches a worker running cmd (name: --profile, else by
// the command), from swarm's agents config.
func (H *Home) Profile(name string, cmd []string) (*agent.Profile, error) {
	return workerProfile(H.h, name, cmd)
}

// WaitReady waits until the worker's screen shows the profile's ready pattern, answering a
// start-up screen with Enter, as spawn --ready-wait does; it warns and returns at the timeout or
// when the worker stopped.
func (H *Home) WaitReady(ctx context.Context, name string, p agent.Patterns, timeout time.Duration) {
	readyWait(ctx, &env{stdout: io.Discard, stderr: H.errw()}, H.h, name, p, timeout)
}

// Stop stops the worker's agent as kill does (through its supervisor, which records the exit)
// and marks it stopped; it waits (a while) for the end to be recorded.
func (H *Home) Stop(ctx context.Context, w *worker.Worker) error {
	stopWorker(ctx, H.h, w)
	return H.h.reg.Update(ctx, func(s *worker.State) error {
		x := s.Get(w.Name)
		if x == nil || x.Started != w.Started || x.Status == worker.StatusStopped {
			return worker.ErrUnchanged
		}
		x.Status = worker.StatusStopped
		return nil
	})
}

// Release waits (at most limit) until a stopped worker's supervisor has exited and its tmux
// window is gone, closing the window itself at the end, so that the name can be spawned again
// at once: the supervisor records the agent's end a moment before it exits, and tmux closes
// the window a moment after.
func (H *Home) Release(ctx context.Context, w *worker.Worker, limit time.Duration) {
	var pid int
	w.Meta(worker.MetaSupervisorPID, &pid)
	deadline := time.Now().Add(limit)
	for pause := time.Millisecond; pid > 0 && supervise.SupervisorAlive(pid, w.Name) && time.Now().Before(deadline); pause = min(2*pause, 20*time.Millisecond) {
		time.Sleep(pause)
	}
	if w.Tmux == nil {
		return
	}
	tc, err := tmuxOf(w)
	if err != nil {
		return
	}
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		windows, _ := tc.ListWindows(ctx, w.Tmux.Session)
		there := false
		for _, win := range windows {
			there = there || win.Name == w.Tmux.Window
		}
		if !there {
			return
		}
		if time.Now().After(deadline) {
			tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
			return
		}
		time.Sleep(pause)
	}
}

// Remove takes a stopped worker out of state.json (this incarnation only: started), keeping its
// logs and its worktree. A running one is refused.
func (H *Home) Remove(ctx context.Context, w *worker.Worker) error {
	if H.h.check(ctx, w).running {
		return fmt.Errorf("worker '%s' is still running", w.Name)
	}
	return H.h.reg.Update(ctx, func(s *worker.State) error {
		if x := s.Get(w.Name); x == nil || x.Started != w.Started || !s.Remove(w.Name) {
			return worker.ErrUnchanged
		}
		return nil
	})
}

// RemoveWorktree removes a worktree as kill --rm-worktree does: never one with uncommitted
// changes or unmerged commits unless force.
func (H *Home) RemoveWorktree(ctx context.Context, wt *worker.Worktree, force bool) error {
	return removeWorktree(ctx, wt, force)
}

// LogPath is the file a tmux worker's supervisor writes the agent's output to (recreated for
// each start of the name).
func (H *Home) LogPath(name string) string { return H.h.layout.LogPath(name) }

// Root is the swarm directory, absolute.
func (H *Home) Root() string { return H.h.dir.Root }

// CheckWorkerName applies spawn's name rule (statedir.CheckName; all digits refused in tmux).
func CheckWorkerName(name string) error { return checkWorkerName(name, true) }

func (H *Home) errw() io.Writer {
	if H.stderr == nil {
		return io.Discard
	}
	return H.stderr
}

// RalphKill is set by ralph's loop package: swarm kill calls it first for the worker it names
// (for each worker with --all). When name is a ralph loop, it ends the loop (stopped, killed)
// and waits until its monitor is gone, so that no new iteration starts and no worker is being
// started once kill has looked the worker up (the Python swarm's kill left the monitor running,
// and it started the next iteration); it reports whether name was a loop. It is nil in a binary
// without ralph's loops.
var RalphKill func(ctx context.Context, swarmDir, name string, rmWorktree bool, stderr io.Writer) bool

// ralphKill calls RalphKill when it is set.
func ralphKill(ctx context.Context, h *home, name string, rmWorktree bool, stderr io.Writer) bool {
	return RalphKill != nil && RalphKill(ctx, h.dir.Root, name, rmWorktree, stderr)
}
