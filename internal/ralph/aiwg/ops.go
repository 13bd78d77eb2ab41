package aiwg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
)

// lockWait is how long a command waits for the workspace's lock: it is held for a few
// milliseconds at a time (a state written, a process started).
const lockWait = 30 * time.Second

// Locked runs fn with the workspace's lock held and the registry read; the registry fn leaves
// is written. Every change of a loop's status, of its state or of the registry is made under
// it, so a check and what it decides (the limit of 4 and the registration; a status read and
// changed) are one step for every process.
func (w Workspace) Locked(ctx context.Context, fn func(reg *Registry) error) error {
	if err := statedir.Mkdir(filepath.Join(w.Root, ".aiwg")); err != nil {
		return err
	}
	if err := statedir.Mkdir(w.Dir()); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	unlock, err := fsx.LockFile(ctx, w.LockPath())
	if errors.Is(err, fsx.ErrLocked) {
		return fmt.Errorf("another ralph holds %s for over %s; retry, or find the process that holds it (fuser %s)", w.LockPath(), lockWait, w.LockPath())
	}
	if err != nil {
		return err
	}
	defer unlock()
	reg, err := w.readRegistry()
	if err != nil {
		return err
	}
	if err := fn(reg); err != nil {
		return err
	}
	return w.writeRegistry(reg)
}

// save writes st, its analytics and its registry entry; the caller holds the lock.
func (w Workspace) save(reg *Registry, st *State) error {
	if err := w.writeState(st); err != nil {
		return err
	}
	if err := w.writeAnalytics(st); err != nil {
		return err
	}
	reg.sync(st)
	return nil
}

// Loops lists the loop ids that have a directory under .aiwg/ralph/loops, sorted.
func (w Workspace) Loops() []string {
	entries, err := os.ReadDir(filepath.Join(w.Dir(), "loops"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && IsLoopID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids
}

// controllerAlive reports whether st's controlling process lives: its pid answers, started
// when the state says (a reused pid is another process), and its command line is ralph's
// (a background controller's names the loop).
func controllerAlive(st *State) bool {
	if st.PID == nil || *st.PID <= 0 {
		return false
	}
	pid := *st.PID
	if !proc.Alive(pid) {
		return false
	}
	start, ok := proc.StartTime(pid)
	if !ok {
		return true // no /proc: trust the signal
	}
	if st.PIDStart != 0 && start != st.PIDStart {
		return false
	}
	// Unreadable now that its stat was read: it has just ended.
	args, _ := proc.Args(pid)
	for _, a := range args {
		if a == st.LoopID || a == "--foreground" {
			return true
		}
	}
	return false
}

// Sweep is the next look at the loops: one whose controlling process died while it was
// running or completing is crashed (the table allows both); a paused one whose controller is
// gone just loses its pid (a user's pause needs none). It takes the lock only when something
// looks dead, and judges again under it.
func (w Workspace) Sweep(ctx context.Context, ids []string) error {
	var dead []string
	for _, id := range ids {
		st, err := w.ReadState(id)
		if err == nil && looksDead(st) {
			dead = append(dead, id)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	return w.Locked(ctx, func(reg *Registry) error {
		for _, id := range dead {
			st, err := w.ReadState(id)
			if err != nil || !looksDead(st) {
				continue
			}
			if err := w.markDead(reg, st); err != nil {
				return err
			}
		}
		return nil
	})
}

func looksDead(st *State) bool {
	switch st.Status {
	case StatusRunning, StatusCompleting:
		return !controllerAlive(st)
	case StatusPaused:
		return st.PID != nil && !controllerAlive(st)
	}
	return false
}

// markDead records that st's controller is gone; the caller holds the lock.
func (w Workspace) markDead(reg *Registry, st *State) error {
	pid := 0
	if st.PID != nil {
		pid = *st.PID
	}
	if st.Status == StatusPaused {
		st.PID, st.PIDStart = nil, 0
		return w.save(reg, st)
	}
	if err := st.Transition(StatusCrashed); err != nil {
		return err
	}
	st.ExitReason = StatusCrashed
	st.ErrorContext = &ErrorContext{ErrorMessage: fmt.Sprintf("the controlling process (pid %d) is gone; 'ralph resume %s' continues from the last checkpoint", pid, st.LoopID),
		ErrorTimestamp: stamp(time.Now())}
	return w.save(reg, st)
}

// activeCount counts the registry's active loops, after their controllers were looked at.
func (reg *Registry) activeCount() int { return len(reg.ActiveLoops) }

// Exists says whether loop id has a state in the workspace: nil, or an error saying where
// the loops are.
func (w Workspace) Exists(id string) error {
	if _, err := os.Lstat(w.StatePath(id)); err != nil {
		return fmt.Errorf("no loop %s in %s; 'ralph list' shows the loops", id, w.Dir())
	}
	return nil
}

// ActiveLoop is the workspace's one active loop, as AIWG chose the loop a verb named none of
// (after a look at every loop's controller): an error when there is none, or several.
func (w Workspace) ActiveLoop(ctx context.Context) (string, error) {
	w.Sweep(ctx, w.Loops())
	reg, err := w.readRegistry()
	if err != nil {
		return "", err
	}
	switch len(reg.ActiveLoops) {
	case 0:
		return "", fmt.Errorf("no active loop in %s; name one ('ralph list' shows them)", w.Root)
	case 1:
		return reg.ActiveLoops[0].LoopID, nil
	}
	var ids []string
	for _, e := range reg.ActiveLoops {
		ids = append(ids, e.LoopID)
	}
	return "", fmt.Errorf("multiple ralph loops active (%d); name one: %s", len(reg.ActiveLoops), strings.Join(ids, ", "))
}
