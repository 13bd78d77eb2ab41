package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
)

// ErrFailed is what RunMonitor returns when the loop it ran ended failed (its state says why).
var ErrFailed = errors.New("the loop failed")

// RunMonitor runs the monitor of the loop name in this process until the loop ends, is paused
// or stopped, or the monitor is told to go (SIGINT, SIGHUP; SIGTERM pauses the loop after the
// current iteration): the hidden work of `ralph run NAME`. It catches those signals itself
// while it runs. It returns ErrFailed when the loop ended failed.
func (ls *Loops) RunMonitor(ctx context.Context, name string) error {
	l, _, err := ls.named(name)
	if err != nil {
		return err
	}
	if err := l.monitor(ctx); err != nil {
		return err
	}
	if st, err := l.st.load(); err == nil && st.Status == StatusFailed {
		return ErrFailed
	}
	return nil
}

// StartMonitor starts the monitor of the loop name in the background (Options.Monitor, detached)
// and returns its pid once it has taken the loop.
func (ls *Loops) StartMonitor(ctx context.Context, name string) (int, error) {
	l, err := ls.at(name)
	if err != nil {
		return 0, err
	}
	return l.startMonitor(ctx, l.opts.Monitor)
}

// Status is a loop as `ralph status` shows it.
type Status struct {
	State        *State
	WorkerStatus string // running, stopped, removed
	MonitorAlive bool
	// LastOutput is the end of a running worker's screen (its last five lines that are not
	// blank) when the loop seems stuck (no screen change for a minute).
	LastOutput []string
}

// Status reads the loop name, first recording a monitor that died while the state says it runs
// (stopped, monitor_disconnected, as the Python monitor recorded it on its way out).
func (ls *Loops) Status(ctx context.Context, name string) (*Status, error) {
	l, st, err := ls.named(name)
	if err != nil {
		return nil, err
	}
	st = l.checkMonitor(ctx, st)
	s := &Status{State: st, WorkerStatus: l.workerStatus(ctx, name), MonitorAlive: l.st.monitorAlive()}
	if ago := st.screenAge(); ago > 60 && st.atWork() && s.WorkerStatus == "running" {
		if w, _ := l.home.Worker(name); w != nil {
			if text, err := l.home.Screen(ctx, w, 200); err == nil {
				for _, line := range lines(text) {
					if strings.TrimSpace(line) != "" {
						s.LastOutput = append(s.LastOutput, line)
					}
				}
				if len(s.LastOutput) > 5 {
					s.LastOutput = s.LastOutput[len(s.LastOutput)-5:]
				}
			}
		}
	}
	return s, nil
}

// checkMonitor records a loop whose monitor died (SIGKILL, a crash) while the state says it
// runs: stopped, monitor_disconnected, as the Python monitor recorded it on its way out.
func (l *app) checkMonitor(ctx context.Context, st *State) *State {
	if st.Status != StatusRunning || st.MonitorPID == nil || l.st.monitorAlive() {
		return st
	}
	pid := *st.MonitorPID
	nst, err := l.st.update(ctx, func(s *State) error {
		if s.Status != StatusRunning || s.MonitorPID == nil || *s.MonitorPID != pid || l.st.monitorAlive() {
			return fsx.ErrUnchanged
		}
		s.Status, s.ExitReason, s.MonitorPID = StatusStopped, strp(ReasonDisconnected), nil
		l.st.logEvent("DISCONNECT", "monitor disconnected (pid %d gone)", pid)
		return nil
	})
	if err != nil || nst == nil {
		return st
	}
	return nst
}

// Pause pauses the loop name after its current iteration, and returns the status it had: a
// loop already paused is left as it is; one that is neither running nor paused is an error.
func (ls *Loops) Pause(ctx context.Context, name string) (was string, err error) {
	l, _, err := ls.named(name)
	if err != nil {
		return "", err
	}
	st, err := l.st.update(ctx, func(st *State) error {
		was = st.Status
		if st.Status != StatusRunning {
			return fsx.ErrUnchanged
		}
		st.Status = StatusPaused
		l.st.logEvent("PAUSE", "loop paused reason=manual")
		return nil
	})
	if err != nil {
		return was, err
	}
	switch was {
	case StatusPaused:
		return was, nil
	case StatusRunning:
	default:
		return was, fmt.Errorf("ralph loop for '%s' has status '%s'", name, was)
	}
	signalMonitor(st, signalLook)
	return was, nil
}

// Resume sets the loop name running again when it is paused, was left by a monitor that died
// (monitor_disconnected), or runs without a monitor, and starts a monitor (Options.Monitor)
// when none runs. It reports whether the loop was resumed (false: it was not paused).
func (ls *Loops) Resume(ctx context.Context, name string) (bool, error) {
	l, st, err := ls.named(name)
	if err != nil {
		return false, err
	}
	l.checkMonitor(ctx, st)
	changed := false
	st, err = l.st.update(ctx, func(st *State) error {
		changed = false
		switch {
		case st.Status == StatusPaused:
		case st.Status == StatusStopped && st.ExitReason != nil && *st.ExitReason == ReasonDisconnected:
			st.ExitReason = nil
		case st.Status == StatusRunning && !l.st.monitorAlive():
		default:
			return fsx.ErrUnchanged
		}
		st.Status, changed = StatusRunning, true
		return nil
	})
	if err != nil || !changed {
		return false, err
	}
	if l.st.monitorAlive() {
		signalMonitor(st, signalLook)
	} else if _, err := l.startMonitor(ctx, l.opts.Monitor); err != nil {
		return false, err
	}
	return true, nil
}

// StopOptions are what Stop removes beside ending the loop and its worker.
type StopOptions struct {
	// RemoveWorktree removes the worker's worktree (not when it holds work, unless ForceDirty)
	// and the loop's state.
	RemoveWorktree, ForceDirty bool
}

// StopResult says what Stop could not do.
type StopResult struct {
	// WorktreeKept is why the worktree was not removed (it holds work, without ForceDirty).
	WorktreeKept error
}

// Stop ends the loop name (stopped, killed), waits for its monitor to be gone, then stops its
// worker (swarm kill), and with RemoveWorktree removes its worktree and the loop's state. A name
// that is neither a worker nor a loop is an error.
func (ls *Loops) Stop(ctx context.Context, name string, o StopOptions) (StopResult, error) {
	var res StopResult
	l, err := ls.at(name)
	if err != nil {
		return res, err
	}
	w, _ := l.home.Worker(name)
	st, _ := l.st.load()
	if w == nil && st == nil {
		return res, fmt.Errorf("worker '%s' not found", name)
	}
	l.stopLoop(ctx, false)
	if w, _ = l.home.Worker(name); w != nil {
		if err := l.home.Stop(ctx, w); err != nil {
			l.warnf("%v", err)
		}
		if o.RemoveWorktree && w.Worktree != nil {
			res.WorktreeKept = swarm.RemoveWorktree(ctx, w.Worktree, o.ForceDirty)
		}
	}
	if o.RemoveWorktree {
		if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
			l.warnf("cannot remove ralph state for '%s': %v", name, err)
		}
	}
	return res, nil
}

// stopLoop ends the loop for a kill: stopped, killed, under the lock (DONE ... reason=killed),
// then its monitor is told and waited for (SIGKILLed if it does not go), so that once this
// returns no iteration starts and no worker is being started; then the current iteration's
// record is made final if the monitor left it running (closeLeft).
func (l *app) stopLoop(ctx context.Context, quiet bool) {
	st, err := l.st.update(ctx, func(st *State) error {
		if st.Status != StatusRunning && st.Status != StatusPaused {
			return fsx.ErrUnchanged // it ended already, and says why
		}
		l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", st.CurrentIteration, ReasonKilled)
		st.Status, st.ExitReason = StatusStopped, strp(ReasonKilled)
		return nil
	})
	if err != nil {
		return
	}
	signalMonitor(st, signalLook)
	if !l.st.waitMonitorGone(ctx, 20*time.Second) {
		if !quiet {
			l.warnf("the monitor of '%s' did not stop", l.st.name)
		}
		return
	}
	l.closeLeft(ctx)
}

// Kill is what swarm kill does first for each worker it kills (for each worker with --all):
// when name is a ralph loop of the swarm sw, it ends the loop (stopped, killed) and waits
// until its monitor is gone, so that no new iteration starts and no worker is being started
// once kill has looked the worker up (the Python swarm's kill left the monitor running, and it
// started the next iteration). With rmWorktree the loop's state goes too, as the Python swarm
// did. It reports whether name was a loop. Warnings go to stderr ("swarm: warning: …").
func Kill(ctx context.Context, sw *swarm.Swarm, name string, rmWorktree bool, stderr io.Writer) bool {
	l := &app{tool: "swarm ralph", prog: "swarm", stdout: io.Discard, stderr: stderr, home: sw, dir: sw.Dir()}
	if l.loop(name) != nil {
		return false
	}
	if st, err := l.st.load(); err != nil || st == nil {
		return false
	}
	l.stopLoop(ctx, false)
	if rmWorktree {
		os.RemoveAll(l.dir.RalphDir(name))
	}
	return true
}

// Names are the loops that have a directory under ralph/ (names that can be a worker's),
// as the directory lists them.
func (ls *Loops) Names() []string {
	var names []string
	entries, _ := os.ReadDir(ls.base.dir.Ralph())
	for _, e := range entries {
		if e.IsDir() && statedirName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// Exists reports whether the loop name has a directory under ralph/ (an error for a name that
// cannot be a worker's).
func (ls *Loops) Exists(name string) (bool, error) {
	l, err := ls.at(name)
	if err != nil {
		return false, err
	}
	_, err = os.Lstat(l.dir.RalphDir(name))
	return err == nil, nil
}

// Clean removes the state of the loop name (not its worker; a monitor still at work is told
// to go, finds no state and ends). It reports whether the loop's worker still runs.
func (ls *Loops) Clean(ctx context.Context, name string) (workerRunning bool, err error) {
	l, err := ls.at(name)
	if err != nil {
		return false, err
	}
	if w, _ := l.home.Worker(name); w != nil && l.home.Live(ctx, w).Running {
		workerRunning = true
	}
	st, _ := l.st.load()
	if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
		return workerRunning, err
	}
	signalMonitor(st, signalLook)
	return workerRunning, nil
}

// statedirName reports whether a directory under ralph/ can be a loop's (a worker name).
func statedirName(name string) bool { return statedir.CheckName(statedir.KindWorker, name) == nil }
