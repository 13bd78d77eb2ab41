package loop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
)

// The monitor: `ralph run NAME` (or `swarm ralph run NAME`), one process per loop. It holds
// ralph/<name>/monitor.lock (flock) for as long as it runs, so "is the monitor alive" is
// "is the lock held" — no pid can be mistaken for it — and two monitors never run one loop. Its
// pid is in the state (monitor_pid, written by the monitor itself once it holds the lock,
// cleared under the state lock before it lets the lock go); a signal is sent to that pid only
// after its command line is checked, so a reused pid is never signalled.
//
// Signals it takes: SIGUSR1 "the state changed, look now" (pause, resume, stop send it),
// SIGTERM pause after the current iteration (the Python swarm's), SIGINT and SIGHUP stop
// watching at once (the loop is then monitor_disconnected if its worker still runs).

const signalLook = syscall.SIGUSR1

// monitorLockPath is ralph/<name>/monitor.lock.
func (s store) monitorLockPath() string { return filepath.Join(s.dir.RalphDir(s.name), "monitor.lock") }

// monitorAlive reports whether a monitor holds the loop's lock. It takes the lock for an instant
// when it is free; a monitor starting in that instant waits for it (takeMonitorLock).
func (s store) monitorAlive() bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	unlock, err := fsx.LockFile(ctx, s.monitorLockPath())
	if err != nil {
		return errors.Is(err, fsx.ErrLocked)
	}
	unlock()
	return false
}

// takeMonitorLock is the monitor's first step: the lock, waiting a little (a status check may
// hold it for an instant), refused when another monitor has it.
func (s store) takeMonitorLock(ctx context.Context) (func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	unlock, err := fsx.LockFile(ctx, s.monitorLockPath())
	if errors.Is(err, fsx.ErrLocked) {
		return nil, fmt.Errorf("ralph loop for '%s' already has a monitor running", s.name)
	}
	return unlock, err
}

// isMonitor reports whether pid runs this loop's monitor (or a foreground spawn): its command
// line names the loop and "run" or "spawn". Without /proc, the signal check is all there is.
func isMonitor(pid int, name string) bool {
	return proc.Holds(pid, []string{"run", "spawn"}, []string{name, "--name=" + name})
}

// signalMonitor sends sig to the loop's monitor when the recorded pid is it.
func signalMonitor(st *State, sig syscall.Signal) bool {
	if st == nil || st.MonitorPID == nil || !isMonitor(*st.MonitorPID, st.WorkerName) {
		return false
	}
	return syscall.Kill(*st.MonitorPID, sig) == nil
}

// waitMonitorGone waits until no monitor holds the loop's lock (at most limit), then SIGKILLs
// the recorded one if it is still there. It reports whether the monitor is gone.
func (s store) waitMonitorGone(ctx context.Context, limit time.Duration) bool {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	unlock, err := fsx.LockFile(wctx, s.monitorLockPath())
	if err == nil {
		unlock()
		return true
	}
	if st, _ := s.load(); st != nil {
		signalMonitor(st, syscall.SIGKILL)
	}
	kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
	defer kcancel()
	if unlock, err := fsx.LockFile(kctx, s.monitorLockPath()); err == nil {
		unlock()
		return true
	}
	return false
}

// startMonitor starts the loop's monitor, the command line monitor (Options.Monitor: this
// program's absolute path and its verbs) and the loop's name, detached (proc.StartDetached): in
// a session of its own, stdio on /dev/null, in /, with the agents' environment ($SWARM_DIR
// absolute). The path is the program's own, never relative: the Python swarm started
// "swarm.py" relative to the caller's directory, and the monitor died at once anywhere else.
// It waits (a few seconds) until the monitor has taken its lock and recorded its pid, and
// returns the pid.
func (l *app) startMonitor(ctx context.Context, monitor []string) (int, error) {
	if len(monitor) == 0 {
		return 0, errors.New("starting the monitor: no command to run it (Options.Monitor)")
	}
	argv := append(slices.Clip(monitor), l.st.name)
	child, err := proc.StartDetached(argv, proc.Detached{Dir: "/", Env: l.environ})
	if err != nil {
		return 0, fmt.Errorf("starting the monitor: %w", err)
	}
	pid, exited := child.Pid, child.Done()
	deadline := time.After(10 * time.Second)
	for {
		if st, err := l.st.load(); err == nil && st.MonitorPID != nil && *st.MonitorPID == pid {
			return pid, nil
		}
		select {
		case <-exited:
			// It found the loop not runnable, or another monitor: what it would have said is in
			// iterations.log; the state tells the rest.
			return 0, fmt.Errorf("the monitor (pid %d) exited at once; see '%s logs %s'", pid, l.tool, l.st.name)
		case <-deadline:
			return pid, nil
		case <-ctx.Done():
			return pid, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
