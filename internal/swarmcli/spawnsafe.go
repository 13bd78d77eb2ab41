package swarmcli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
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
func recoverSpawns(ctx context.Context, e *env, h *home, s *worker.State) *worker.State {
	changed := false
	for _, w := range s.Workers {
		if _, ok := journalOf(w); ok && h.recoverSpawn(ctx, e, w.Name) {
			changed = true
		}
	}
	if !changed {
		return s
	}
	if ns, err := h.reg.Load(); err == nil {
		return ns
	}
	return s
}

// recoverSpawn settles name's spawn if it was interrupted; it reports whether it changed
// anything.
func (h *home) recoverSpawn(ctx context.Context, e *env, name string) bool {
	// One try, no wait: whoever holds the lock (the spawn, or its supervisor registering) is
	// at work, so the spawn is not interrupted; and a spawn among a hundred others must not
	// wait on each of theirs.
	unlock, err := h.layout.Lock(ctx, name, 0)
	if err != nil {
		return false
	}
	defer unlock()
	s, err := h.reg.Load()
	if err != nil {
		return false
	}
	w := s.Get(name)
	if w == nil {
		return false
	}
	j, ok := journalOf(w)
	if !ok {
		return false
	}
	entry, _ := h.layout.ReadEntry(name)
	if entry != nil && entry.PID == 0 {
		// Killed between handing the supervisor its spec and recording its pid: the
		// supervisor may not have registered yet, but it runs, with the name on its command
		// line.
		if pid := h.findSupervisor(name); pid > 0 {
			entry.PID = pid
		}
	}
	_, ended := w.Ended()
	launched := ended || w.Metadata.Has(worker.MetaAgentPID) ||
		(entry != nil && entry.PID > 0 && supervise.SupervisorAlive(entry.PID, name))
	if launched {
		// The supervisor runs (or ran): the worker is whole; only the last step is missing.
		h.reg.Update(ctx, func(s *worker.State) error {
			x := s.Get(name)
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
	undoSpawn(ctx, h, w, j, entry)
	e.warnf("the spawn of '%s' was interrupted; removed what it had made", name)
	return true
}

// findSupervisor returns the pid of a live supervisor of name in this swarm directory (its
// command line: the supervise verb, --swarm-dir, the name), or 0.
func (h *home) findSupervisor(name string) int {
	pids, err := fsx.Names("/proc", func(n string) (string, bool) { return n, n != "" && strings.Trim(n, "0123456789") == "" })
	if err != nil {
		return 0
	}
	for _, p := range pids {
		b, err := fsx.ReadFileLimit("/proc/"+p+"/cmdline", 64<<10)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || args[len(args)-1] != name || !slices.Contains(args, supervise.SuperviseVerb) {
			continue
		}
		if i := slices.Index(args, "--swarm-dir"); i < 0 || i+1 >= len(args) || args[i+1] != h.dir.Root {
			continue
		}
		if pid, err := strconv.Atoi(p); err == nil && supervise.SupervisorAlive(pid, name) {
			return pid
		}
	}
	return 0
}

// undoSpawn removes what an interrupted or failed spawn made, in reverse order.
func undoSpawn(ctx context.Context, h *home, w *worker.Worker, j *spawnJournal, entry *supervise.Entry) {
	ctx = context.WithoutCancel(ctx)
	if entry != nil && entry.PID > 0 && supervise.SupervisorAlive(entry.PID, w.Name) {
		syscall.Kill(entry.PID, syscall.SIGKILL)
	}
	if w.Tmux != nil {
		if tc, err := tmuxOf(w); err == nil {
			tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
		}
	}
	h.layout.RemoveEntry(w.Name)
	if j.Worktree != "" {
		p := &worktreePlan{root: j.Root, path: j.Worktree, branch: j.Branch, newBranch: j.NewBranch, from: j.From}
		p.undo(ctx)
	}
	os.Remove(h.dir.StdoutLog(w.Name))
	os.Remove(h.dir.StderrLog(w.Name))
	os.Remove(h.layout.LogPath(w.Name))
	h.reg.Update(ctx, func(s *worker.State) error {
		if x := s.Get(w.Name); x == nil || x.Started != w.Started || !s.Remove(w.Name) {
			return worker.ErrUnchanged
		}
		return nil
	})
}

// stillWanted is asked by a worker's supervisor once registered, before it starts the agent:
// the worker must be in state as this incarnation (a spawn interrupted between handing over the
// spec and its end may have been undone by another command meanwhile).
func stillWanted(h *home, name, started string) error {
	s, err := h.reg.Load()
	if err != nil {
		return err
	}
	if w := s.Get(name); w == nil || w.Started != started {
		return fmt.Errorf("worker '%s' is no longer in %s (its spawn was undone)", name, h.dir.State())
	}
	return nil
}

// crashPoint kills this process outright at the named point of a spawn when
// $SWARM_TEST_CRASH_AT names it: the tests' way to SIGKILL a spawn exactly there.
func crashPoint(name string) {
	if os.Getenv("SWARM_TEST_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
