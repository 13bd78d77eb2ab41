package swarm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// A spawn can be killed (SIGKILL, a power cut) at any point. So that no half worker is left,
// spawn writes the worker into state.json first, with a journal in its metadata saying what it
// is about to make (metaSpawning); it makes it, launches the supervisor, and removes the
// journal. The next swarm command that finds a journal whose spawn is gone (the name's lock is
// free) finishes the worker if its supervisor runs, or else undoes what the journal names:
// window, supervisor entry, worktree, the branch spawn created (only while it points where it
// was created), and the state entry.

// metaSpawning is the journal key in a worker's metadata; the Python tool keeps it unread.
const metaSpawning = "spawning"

// spawnJournal is what a spawn in progress has made or is about to make.
type spawnJournal struct {
	PID       int    `json:"pid"` // the spawning swarm
	Worktree  string `json:"worktree,omitempty"`
	Root      string `json:"root,omitempty"`
	Branch    string `json:"branch,omitempty"`
	NewBranch bool   `json:"new_branch,omitempty"`
	From      string `json:"from,omitempty"`
}

func journalOf(w *worker.Worker) (*spawnJournal, bool) {
	var j spawnJournal
	if !w.Meta(metaSpawning, &j) {
		return nil, false
	}
	return &j, true
}

// recoverSpawns settles every interrupted spawn in s and returns the state as it is then
// (s itself when there was none). Spawns still at work are left alone.
func (s *Swarm) recoverSpawns(ctx context.Context, st *worker.State) *worker.State {
	changed := false
	for _, w := range st.Workers {
		if _, ok := journalOf(w); ok && s.recoverSpawn(ctx, w.Name) {
			changed = true
		}
	}
	if !changed {
		return st
	}
	if ns, err := s.reg.Load(); err == nil {
		return ns
	}
	return st
}

// recoverSpawn settles name's spawn if it was interrupted; it reports whether it changed
// anything.
func (s *Swarm) recoverSpawn(ctx context.Context, name string) bool {
	// One try, no wait: whoever holds the lock (the spawn, or its supervisor registering) is
	// at work, so the spawn is not interrupted; and a spawn among a hundred others must not
	// wait on each of theirs.
	unlock, err := s.layout.Lock(ctx, name, 0)
	if err != nil {
		return false
	}
	defer unlock()
	st, err := s.reg.Load()
	if err != nil {
		return false
	}
	w := st.Get(name)
	if w == nil {
		return false
	}
	j, ok := journalOf(w)
	if !ok {
		return false
	}
	entry, _ := s.layout.ReadEntry(name)
	if entry != nil && entry.PID == 0 {
		// Killed between handing the supervisor its spec and recording its pid: the
		// supervisor may not have registered yet, but it runs, with the name on its command
		// line.
		if pid := s.findSupervisor(name); pid > 0 {
			entry.PID = pid
		}
	}
	_, ended := w.Ended()
	launched := ended || w.Metadata.Has(worker.MetaAgentPID) ||
		(entry != nil && entry.PID > 0 && supervise.SupervisorAlive(entry.PID, name))
	if launched {
		// The supervisor runs (or ran): the worker is whole; only the last step is missing.
		s.reg.Update(ctx, func(st *worker.State) error {
			x := st.Get(name)
			if x == nil || x.Started != w.Started {
				return worker.ErrUnchanged
			}
			x.Metadata = x.Metadata.Delete(metaSpawning)
			if entry != nil && entry.PID > 0 {
				x.Metadata = x.Metadata.SetValue(worker.MetaSupervisorPID, entry.PID)
				if x.Tmux == nil {
					p := int64(entry.PID)
					x.PID = &p
				}
			}
			return nil
		})
		return true
	}
	s.undoSpawn(ctx, w, j, entry)
	s.warnf("the spawn of '%s' was interrupted; removed what it had made", name)
	return true
}

// findSupervisor returns the pid of a live supervisor of name in this swarm directory (its
// command line: the supervise verb, --swarm-dir, the name), or 0.
func (s *Swarm) findSupervisor(name string) int {
	pids, err := fsx.Names("/proc", func(n string) (string, bool) { return n, n != "" && strings.Trim(n, "0123456789") == "" })
	if err != nil {
		return 0
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		args, err := proc.Args(pid)
		if err != nil {
			continue
		}
		if len(args) < 2 || args[len(args)-1] != name || !slices.Contains(args, supervise.SuperviseVerb) {
			continue
		}
		if i := slices.Index(args, "--swarm-dir"); i < 0 || i+1 >= len(args) || args[i+1] != s.dir.Root {
			continue
		}
		if supervise.SupervisorAlive(pid, name) {
			return pid
		}
	}
	return 0
}

// undoSpawn removes what an interrupted or failed spawn made, in reverse order.
func (s *Swarm) undoSpawn(ctx context.Context, w *worker.Worker, j *spawnJournal, entry *supervise.Entry) {
	ctx = context.WithoutCancel(ctx)
	if entry != nil && entry.PID > 0 && supervise.SupervisorAlive(entry.PID, w.Name) {
		syscall.Kill(entry.PID, syscall.SIGKILL)
	}
	if w.Tmux != nil {
		if tc, err := s.Tmux(w); err == nil {
			tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
		}
	}
	s.layout.RemoveEntry(w.Name)
	if j.Worktree != "" {
		p := &worktreePlan{root: j.Root, path: j.Worktree, branch: j.Branch, newBranch: j.NewBranch, from: j.From}
		p.undo(ctx)
	}
	s.removeLogs(w.Name)
	s.reg.Update(ctx, func(st *worker.State) error {
		if x := st.Get(w.Name); x == nil || x.Started != w.Started || !st.Remove(w.Name) {
			return worker.ErrUnchanged
		}
		return nil
	})
}

// stillWanted is asked by a worker's supervisor once registered, before it starts the agent:
// the worker must be in state as this incarnation (a spawn interrupted between handing over the
// spec and its end may have been undone by another command meanwhile).
func (s *Swarm) stillWanted(name, started string) error {
	st, err := s.reg.Load()
	if err != nil {
		return err
	}
	if w := st.Get(name); w == nil || w.Started != started {
		return fmt.Errorf("worker '%s' is no longer in %s (its spawn was undone)", name, s.dir.State())
	}
	return nil
}
