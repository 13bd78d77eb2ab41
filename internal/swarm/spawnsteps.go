package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// Spawn's steps, in its order: the name's lock (lockName), where the agent works (spawnDir),
// the supervisor's spec (supervisorFor), the worker in state (addWorker), the supervisor started
// (startSupervisor), its pid recorded (recordPID), the agent waited for (awaitStart).

// undoList is what a spawn made, each with its undoing: a failed spawn undoes it in reverse;
// what a killed one made is undone by the next command, from the journal in the worker's
// metadata (spawnsafe.go).
type undoList []func()

func (u *undoList) add(undo func()) { *u = append(*u, undo) }

// rollback undoes what was made, in reverse, and returns err as an *UndoneError.
func (u *undoList) rollback(err error) error {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	return &UndoneError{Err: err}
}

// checkSpec refuses a spec with no command or a name the worker rule (CheckName) refuses.
func checkSpec(sp Spec) error {
	if len(sp.Cmd) == 0 {
		return errors.New("no command provided")
	}
	return CheckName(sp.Name, sp.Tmux != nil)
}

// spawnDir is the agent's working directory (made absolute) and the worktree the worker's
// entry names: the planned one, whose making the journal tells, or the existing one sp runs in.
func spawnDir(sp Spec, plan *worktreePlan, journal *spawnJournal) (string, *worker.Worktree, error) {
	dir := sp.Dir
	switch {
	case dir != "":
		var err error
		if dir, err = absPath(dir); err != nil {
			return "", nil, err
		}
	case sp.InWorktree != nil:
		dir = sp.InWorktree.Path
	default:
		dir, _ = os.Getwd()
	}
	var wt *worker.Worktree
	if plan != nil {
		wt, dir = plan.worktree(), plan.path
		journal.Worktree, journal.Root, journal.Branch, journal.NewBranch, journal.From =
			plan.path, plan.root, plan.branch, plan.newBranch, plan.from
	} else if sp.InWorktree != nil {
		x := *sp.InWorktree
		wt = &x
	}
	return dir, wt, nil
}

// lockName takes the worker name's lock (making its directory), for the spawn to hold until
// the supervisor is registered.
func (s *Swarm) lockName(ctx context.Context, name string) (unlock func() error, err error) {
	if err := statedir.MkdirFor(s.layout.LockPath(name)); err != nil {
		return nil, err
	}
	if unlock, err = s.layout.Lock(ctx, name, 30*time.Second); err != nil {
		return nil, fmt.Errorf("locking worker '%s': %w", name, err)
	}
	return unlock, nil
}

// supervisorFor completes hs, the spec w's supervisor is handed: where it runs (a tmux
// worker's window, whose server it returns; nil for a process) and the agent it runs. A
// process worker's stderr.log is made here.
func (s *Swarm) supervisorFor(sp Spec, w *worker.Worker, hs *handoffSpec) (*tmux.Client, error) {
	name := w.Name
	var tc *tmux.Client
	if sp.Tmux != nil {
		session := sp.Tmux.Session
		if session == "" {
			session = s.DefaultSession()
		}
		if sock := sp.Tmux.Socket; sock != nil && (*sock == "" || strings.Contains(*sock, "/")) {
			return nil, fmt.Errorf("invalid tmux socket name '%s'", *sock)
		}
		w.Tmux = &worker.Tmux{Session: session, Window: name, Socket: sp.Tmux.Socket}
		var err error
		if tc, err = s.Tmux(w); err != nil {
			return nil, err
		}
		hs.Backend, hs.Socket, hs.Session = supervise.BackendTmux, tc.Socket, session
	}
	hs.Attempt = supervise.Attempt{Name: name, Number: 1, Dir: w.Cwd, Argv: sp.Cmd, Env: mergeEnv(s.opts.Environ, sp.Env),
		Terminal: true, KillGrace: 5 * time.Second, LogPath: s.layout.LogPath(name)}
	if sp.Tmux == nil {
		// A process worker's output goes where the Python swarm put it; its stderr shares the
		// terminal, so stderr.log is created (truncated) and stays empty.
		hs.Attempt.LogPath = s.dir.StdoutLog(name)
		f, err := statedir.CreateFresh(s.dir.StderrLog(name))
		if err != nil {
			return nil, fmt.Errorf("failed to spawn process: %w", err)
		}
		f.Close()
	}
	return tc, nil
}

// addWorker writes w into state with its journal, unless a worker of its name is there, and
// adds its undoing (undoSpawn, by the journal) to undo.
func (s *Swarm) addWorker(ctx context.Context, w *worker.Worker, journal *spawnJournal, undo *undoList) error {
	err := s.reg.Update(ctx, func(st *worker.State) error {
		if st.Get(w.Name) != nil {
			return fmt.Errorf("worker '%s' already exists", w.Name)
		}
		st.Add(w)
		return nil
	})
	if err != nil {
		return err
	}
	undo.add(func() {
		entry, _ := s.layout.ReadEntry(w.Name)
		s.undoSpawn(ctx, w, journal, entry)
	})
	s.checkpoint("state")
	return nil
}

// startSupervisor makes the planned worktree, registers the supervisor's entry and launches
// the supervisor with hs (in tc's window, or detached); it returns the supervisor's pid.
func (s *Swarm) startSupervisor(ctx context.Context, plan *worktreePlan, hs *handoffSpec, tc *tmux.Client, now time.Time) (int, error) {
	if plan != nil {
		if _, err := plan.create(ctx); err != nil {
			return 0, fmt.Errorf("failed to create worktree: %w", err)
		}
		s.checkpoint("worktree")
	}
	s.layout.WriteEntry(&supervise.Entry{Tool: supervisorTool, Name: hs.Worker, Attempt: 1, Backend: hs.Backend,
		Socket: hs.Socket, Session: hs.Session, StartedAt: now.UTC().Format(time.RFC3339Nano)})

	// (StartedAt to the nanosecond: a state.json rebuilt from the registry gets the worker's
	// started, its incarnation, back exactly.)
	s.checkpoint("entry")
	pid, err := s.launch(ctx, hs, tc)
	if err != nil {
		what := "failed to spawn process"
		if tc != nil {
			what = "failed to create tmux window"
		}
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	s.checkpoint("launched")
	return pid, nil
}

// recordPID records the supervisor's pid in its entry (when the supervisor has not yet) and in
// w and its state, and ends the spawn's journal: the worker is made.
func (s *Swarm) recordPID(ctx context.Context, w *worker.Worker, pid int) {
	if e, _ := s.layout.ReadEntry(w.Name); e != nil && e.PID == 0 {
		e.PID = pid
		s.layout.WriteEntry(e)
	}
	w.Metadata = w.Metadata.SetValue(worker.MetaSupervisorPID, pid).Delete(metaSpawning)
	if w.Tmux == nil {
		p := int64(pid)
		w.PID = &p
	}
	err := s.reg.Update(ctx, func(st *worker.State) error {
		x := st.Get(w.Name)
		if x == nil || x.Started != w.Started {
			return worker.ErrUnchanged
		}
		x.Metadata = x.Metadata.SetValue(worker.MetaSupervisorPID, pid).Delete(metaSpawning)
		x.PID = w.PID
		return nil
	})
	if err != nil {
		s.warnf("recording the supervisor's pid: %v", err)
	}
}

// awaitStart waits, once the name's lock is let go, for the spawned agent to run (and, with
// sp.ReadyWait, to be ready), then starts its heartbeat. The error is the heartbeat's: the
// worker runs all the same.
func (s *Swarm) awaitStart(ctx context.Context, sp Spec, prof *agent.Profile, pid int) error {
	name := sp.Name
	if s.waitStarted(ctx, name) {
		s.warnf("%s: the agent has not started after %s (its supervisor is still at work)", name, startWait)
	}
	if sp.ReadyWait {
		s.WaitReady(ctx, name, prof.Screen, sp.ReadyTimeout)
	}
	if hb := sp.Heartbeat; hb != nil && hb.Interval > 0 {
		beat := NewHeartbeat(name, *hb, time.Now())
		mon := int64(pid)
		beat.MonitorPID = &mon
		if err := s.UpdateHeartbeat(ctx, name, func(*worker.Heartbeat) (*worker.Heartbeat, error) { return beat, nil }); err != nil {
			return fmt.Errorf("starting the heartbeat: %w (the worker runs: swarm heartbeat start %s)", err, name)
		}
	}
	return nil
}
