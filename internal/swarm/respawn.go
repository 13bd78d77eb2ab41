package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// perRun are the metadata keys of one run of a worker, which a respawned worker does not
// inherit (its own spawn writes them again); every other key is carried over.
var perRun = map[string]bool{worker.MetaSupervised: true, worker.MetaSupervisorPID: true, worker.MetaAgentPID: true,
	worker.MetaExitCode: true, worker.MetaFinished: true, worker.MetaReason: true, worker.MetaActivity: true,
	worker.MetaActivitySince: true, worker.MetaReadyAt: true, worker.MetaProfile: true}

// WorktreeKeptError is respawn --clean-first refused: the worktree at Path holds work
// (RemoveWorktree's refusal, Err). The worker stays, stopped.
type WorktreeKeptError struct {
	Path string
	Err  error
}

func (e *WorktreeKeptError) Error() string { return fmt.Sprintf("cannot remove worktree: %v", e.Err) }
func (e *WorktreeKeptError) Unwrap() error { return e.Err }

// Respawn stops w if it runs and starts it again as Spawn would, with its saved command,
// directory, environment, tags, tmux session and socket, worktree and profile, and the other
// keys of its metadata; a live heartbeat goes on with the new incarnation, on its schedule.
// With cleanFirst its worktree is removed first (refused with a *WorktreeKeptError when it
// holds work, unless force) and made again at its path on its branch (a new branch from HEAD
// when the branch is gone); a missing worktree is made again anyway. Unlike the Python swarm,
// a start that fails puts the old entry back (stopped): the worker is never lost from state.
func (s *Swarm) Respawn(ctx context.Context, w *worker.Worker, cleanFirst, force bool) (*worker.Worker, error) {
	hb, _ := s.Heartbeat(w.Name)
	if s.Live(ctx, w).Running {
		s.stopAgent(ctx, w)
	}
	if w.Tmux != nil {
		// A window the agent left (a Python swarm worker's shell, remain-on-exit) would take
		// the new window's name.
		if tc, err := s.Tmux(w); err == nil {
			tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
		}
	}
	if cleanFirst && w.Worktree != nil {
		if err := RemoveWorktree(ctx, w.Worktree, force); err != nil {
			return nil, &WorktreeKeptError{Path: w.Worktree.Path, Err: err}
		}
	}
	old := *w
	removed := false
	err := s.reg.Update(ctx, func(st *worker.State) error {
		x := st.Get(w.Name)
		if x == nil || x.Started != w.Started {
			return worker.ErrUnchanged
		}
		st.Remove(w.Name)
		removed = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !removed {
		return nil, fmt.Errorf("worker '%s' changed while it was being respawned; run respawn again", w.Name)
	}
	restore := func(err error) error {
		old.Status = worker.StatusStopped
		s.reg.Update(context.Background(), func(st *worker.State) error {
			if st.Get(old.Name) != nil {
				return worker.ErrUnchanged
			}
			st.Add(&old)
			return nil
		})
		return err
	}
	if wt := w.Worktree; wt != nil {
		if _, err := os.Stat(wt.Path); err != nil {
			if err := remakeWorktree(ctx, wt); err != nil {
				return nil, restore(fmt.Errorf("failed to create worktree: %v", err))
			}
		}
	}
	nw, err := s.Spawn(ctx, RespawnSpec(w))
	if err != nil {
		return nil, restore(err)
	}
	if hb != nil && hb.Live() {
		mon := s.MonitorOf(nw)
		s.UpdateHeartbeat(ctx, w.Name, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
			if cur == nil || cur.CreatedAt != hb.CreatedAt || cur.Live() {
				return nil, nil
			}
			cur.Status, cur.MonitorPID = hb.Status, mon
			return cur, nil
		})
	}
	return nw, nil
}

// RespawnSpec is the Spec that starts w again as it was saved: its command, directory,
// environment, tags, tmux session and socket, worktree, profile and the metadata keys that are
// not of one run.
func RespawnSpec(w *worker.Worker) Spec {
	sp := Spec{Name: w.Name, Cmd: w.Cmd, Dir: w.Cwd, Env: w.Env, Tags: w.Tags}
	if w.Tmux != nil {
		sp.Tmux = &TmuxSpec{Session: w.Tmux.Session, Socket: w.Tmux.Socket}
	}
	if w.Worktree != nil {
		wt := *w.Worktree
		sp.InWorktree = &wt
	}
	w.Meta(worker.MetaProfile, &sp.Profile)
	w.Meta(metaOnEvent, &sp.OnEvent)
	for _, m := range w.Metadata {
		if !perRun[m.Key] && m.Key != metaOnEvent {
			sp.Metadata = sp.Metadata.Set(m.Key, m.Value)
		}
	}
	return sp
}

// remakeWorktree makes a worker's worktree again at its path, on its branch (a new branch from
// HEAD when the branch is gone). Git runs in the base repository (the Python swarm ran it in
// the caller's directory).
func remakeWorktree(ctx context.Context, wt *worker.Worktree) error {
	if wt.BaseRepo == "" {
		return errors.New("the worker's base repository is not known")
	}
	gitIn(ctx, wt.BaseRepo, "worktree", "prune")
	if _, err := gitIn(ctx, wt.BaseRepo, "worktree", "add", wt.Path, wt.Branch); err != nil {
		if _, err2 := gitIn(ctx, wt.BaseRepo, "worktree", "add", "-b", wt.Branch, wt.Path); err2 != nil {
			return fmt.Errorf("Failed to create worktree at %s: %v", wt.Path, err)
		}
	}
	return nil
}
