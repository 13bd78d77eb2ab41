package swarm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ordered"
	scr "github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// Screen is what a person would see of the worker's agent: the last lines lines of its screen
// (at least one), from its supervisor (both modes) or, for a worker the Python swarm started,
// its tmux pane. Blank lines at the end are left out.
func (s *Swarm) Screen(ctx context.Context, w *worker.Worker, lines int) (string, error) {
	if lines < 1 {
		lines = 1
	}
	if !w.Supervised() {
		if w.Tmux == nil {
			return "", fmt.Errorf("worker '%s' is not a tmux worker", w.Name)
		}
		tc, err := s.Tmux(w)
		if err != nil {
			return "", err
		}
		return tc.Capture(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window), lines)
	}
	ctl, err := s.control(w)
	if err != nil {
		return "", err
	}
	defer ctl.Close()
	resp, err := ctl.Do(supervise.Request{Op: supervise.OpScreen, Lines: lines})
	if err != nil {
		return "", err
	}
	out := resp.Screen
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) == 0 {
		return "", nil
	}
	return strings.Join(out, "\n") + "\n", nil
}

// Keys presses keys in w's agent, by the supervisor's names: "interrupt" (Ctrl-C), "eof"
// (Ctrl-D), "escape", "enter", "tab", the arrows, and "clear-line" (Ctrl-U). A worker the
// Python swarm started gets them through its tmux pane.
func (s *Swarm) Keys(ctx context.Context, w *worker.Worker, keys ...string) error {
	return s.typeInto(ctx, w, "", keys...)
}

// typeInto types text (and keys) into a worker's agent: through its supervisor, or the tmux
// pane of a worker the Python swarm started. keys are the supervisor's key names.
func (s *Swarm) typeInto(ctx context.Context, w *worker.Worker, text string, keys ...string) error {
	if !w.Supervised() {
		if w.Tmux == nil {
			return fmt.Errorf("worker '%s' is not a tmux worker", w.Name)
		}
		tc, err := s.Tmux(w)
		if err != nil {
			return err
		}
		t := tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window)
		if text != "" {
			if err := tc.SendText(ctx, t, text); err != nil {
				return err
			}
		}
		names := map[string]string{"interrupt": "C-c", "eof": "C-d", "escape": "Escape", "enter": "Enter", "clear-line": "C-u"}
		for _, k := range keys {
			if err := tc.SendKeys(ctx, t, names[k]); err != nil {
				return err
			}
		}
		return nil
	}
	ctl, err := s.control(w)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if text != "" {
		if _, err := ctl.Do(supervise.Request{Op: supervise.OpSend, Text: text}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		req := supervise.Request{Op: supervise.OpKeys, Keys: []string{k}}
		if k == "clear-line" {
			req = supervise.Request{Op: supervise.OpSend, Text: "\x15"} // Ctrl-U: no named key for it
		}
		if _, err := ctl.Do(req); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops w's agent as kill does (through its supervisor, which records the end) and marks
// the worker stopped; it waits (a while) for the end to be recorded.
func (s *Swarm) Stop(ctx context.Context, w *worker.Worker) error {
	return s.StopAll(ctx, []*worker.Worker{w}, nil)
}

// StopAll stops the workers ws as kill does, side by side (each stop waits for its supervisor
// to record the end, and a hundred one after another took seconds), calling done for each in
// their order as soon as it and those before it are stopped (nil: none), then marks them
// stopped in state.json in one change (only them, and only these incarnations: no other
// worker's change is lost).
func (s *Swarm) StopAll(ctx context.Context, ws []*worker.Worker, done func(w *worker.Worker)) error {
	ordered.Map(len(ws), 16, len(ws), func(i int) struct{} {
		s.stopAgent(ctx, ws[i])
		return struct{}{}
	}, func(i int, _ struct{}) {
		if done != nil {
			done(ws[i])
		}
	})
	return s.reg.Update(ctx, func(st *worker.State) error {
		changed := false
		for _, w := range ws {
			if x := st.Get(w.Name); x != nil && x.Started == w.Started && x.Status != worker.StatusStopped {
				x.Status, changed = worker.StatusStopped, true
			}
		}
		if !changed {
			return worker.ErrUnchanged
		}
		return nil
	})
}

// stopAgent stops a worker's agent and waits (a while) for its end to be recorded: a
// supervised one through its supervisor (TERM to the agent's process group, KILL after the
// grace), one of the Python swarm's as it did (kill-window; TERM, 5 s, KILL).
func (s *Swarm) stopAgent(ctx context.Context, w *worker.Worker) {
	if !w.Supervised() {
		if w.Tmux != nil {
			if tc, err := s.Tmux(w); err == nil {
				tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
			}
			return
		}
		if w.PID != nil && *w.PID > 0 {
			pid := int(*w.PID)
			if syscall.Kill(pid, syscall.SIGTERM) != nil {
				return
			}
			for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		return
	}
	e, _ := s.layout.ReadEntry(w.Name)
	if e == nil || e.PID <= 0 || !supervise.SupervisorAlive(e.PID, w.Name) {
		s.Live(ctx, w) // closes a lost one
		return
	}
	syscall.Kill(e.PID, supervise.SignalKill)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && supervise.SupervisorAlive(e.PID, w.Name) {
		time.Sleep(20 * time.Millisecond)
	}
}

// CloseSessions ends the tmux sessions of the workers gone (just stopped or removed) that no
// other worker in state.json uses (the Python swarm's empty-session cleanup).
func (s *Swarm) CloseSessions(ctx context.Context, gone []*worker.Worker) {
	st, err := s.reg.Load()
	if err != nil {
		return
	}
	goneNames := map[string]bool{}
	for _, w := range gone {
		goneNames[w.Name] = true
	}
	key := func(w *worker.Worker) string {
		sock := ""
		if w.Tmux.Socket != nil {
			sock = *w.Tmux.Socket
		}
		return sock + "\x00" + w.Tmux.Session
	}
	used := map[string]bool{}
	for _, w := range st.Workers {
		if w.Tmux != nil && !goneNames[w.Name] {
			used[key(w)] = true
		}
	}
	done := map[string]bool{}
	for _, w := range gone {
		if w.Tmux == nil || used[key(w)] || done[key(w)] {
			continue
		}
		done[key(w)] = true
		if tc, err := s.Tmux(w); err == nil {
			tc.KillSession(ctx, w.Tmux.Session)
		}
	}
}

// Release waits (at most limit) until a stopped worker's supervisor has exited and its tmux
// window is gone, closing the window itself at the end, so that the name can be spawned again
// at once: the supervisor records the agent's end a moment before it exits, and tmux closes
// the window a moment after.
func (s *Swarm) Release(ctx context.Context, w *worker.Worker, limit time.Duration) {
	var pid int
	w.Meta(worker.MetaSupervisorPID, &pid)
	deadline := time.Now().Add(limit)
	for pause := time.Millisecond; pid > 0 && supervise.SupervisorAlive(pid, w.Name) && time.Now().Before(deadline); pause = min(2*pause, 20*time.Millisecond) {
		time.Sleep(pause)
	}
	s.awaitWindowClosed(ctx, w, deadline)
}

// awaitWindowClosed waits until a tmux worker's window is gone, closing it itself once deadline
// has passed (a pane kept by remain-on-exit, or a tmux that never reaped the supervisor). The
// supervisor is the pane's process: tmux closes the window when it sees it exit, in its own
// time, so a supervisor gone does not mean a window gone.
func (s *Swarm) awaitWindowClosed(ctx context.Context, w *worker.Worker, deadline time.Time) {
	if w.Tmux == nil {
		return
	}
	tc, err := s.Tmux(w)
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

// Remove takes a stopped worker out of state.json (this incarnation only), keeping its logs
// and its worktree. A running one is refused.
func (s *Swarm) Remove(ctx context.Context, w *worker.Worker) error {
	if s.Live(ctx, w).Running {
		return fmt.Errorf("worker '%s' is still running", w.Name)
	}
	return s.remove(ctx, w)
}

func (s *Swarm) remove(ctx context.Context, w *worker.Worker) error {
	return s.reg.Update(ctx, func(st *worker.State) error {
		if x := st.Get(w.Name); x == nil || x.Started != w.Started || !st.Remove(w.Name) {
			return worker.ErrUnchanged
		}
		return nil
	})
}

// Clean removes a worker that is not running for good, as swarm clean does: its logs, its
// entry in state.json (this incarnation only) and its heartbeat (stopped; one the Python
// swarm's daemon watched, too). Its worktree is the caller's to remove first (RemoveWorktree),
// and its tmux session to close after (CloseSessions).
func (s *Swarm) Clean(ctx context.Context, w *worker.Worker) error {
	s.removeLogs(w.Name)
	err := s.remove(ctx, w)
	s.StopHeartbeat(ctx, w.Name)
	return err
}

// removeLogs removes the output logs of the worker name: a process worker's logs/N.stdout.log
// and .stderr.log, a tmux worker's supervisor's log.
func (s *Swarm) removeLogs(name string) {
	os.Remove(s.dir.StdoutLog(name))
	os.Remove(s.dir.StderrLog(name))
	os.Remove(s.layout.LogPath(name))
}

// Pane is what swarm logs shows of a tmux worker: its pane's screen, or with history that
// many lines of the pane's history and the screen (capture-pane -S -history, as the Python
// swarm). A worker whose window is gone (it stopped) shows the end of its supervisor's output
// log, control sequences removed (the Python swarm failed with a traceback).
func (s *Swarm) Pane(ctx context.Context, w *worker.Worker, history int) (string, error) {
	tc, err := s.Tmux(w)
	if err != nil {
		return "", err
	}
	t := tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window)
	_, rows, err := tc.PaneSize(ctx, t)
	if err != nil {
		if text, ok := s.logTail(w, history); ok {
			return text, nil
		}
		return "", err
	}
	return tc.Capture(ctx, t, rows+history)
}

// logTail returns the last lines of a supervised tmux worker's output log, as text.
func (s *Swarm) logTail(w *worker.Worker, history int) (string, bool) {
	if !w.Supervised() {
		return "", false
	}
	b, err := fsx.ReadFileLimit(s.layout.LogPath(w.Name), 64<<20)
	if err != nil {
		return "", false
	}
	text := strings.ReplaceAll(scr.Strip(string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")))), "\r", "")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if n := 50 + history; len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "", true
	}
	return strings.Join(lines, "\n") + "\n", true
}
