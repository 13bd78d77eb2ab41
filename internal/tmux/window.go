package tmux

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Window is one window of a session as ListWindows reports it, with the state of its active
// pane (a worker's window has only the one).
type Window struct {
	Name   string
	PID    int  // the pid of the pane's process
	Dead   bool // the process has exited and remain-on-exit keeps the pane (see PaneDead)
	Status int  // the exit status when Dead; -1 when a signal ended it or tmux has none (see PaneDead)
}

// ListWindows returns the windows of session in tmux's order (by index), or none when there is
// no such session or no server.
func (c *Client) ListWindows(ctx context.Context, session string) ([]Window, error) {
	if err := checkName(sessionName, session); err != nil {
		return nil, err
	}
	// pane_* fields are the active pane's; paneFormat without pane_active. Window names cannot
	// hold a tab: tmux 3.3a stores one as "\t" (window_set_name, utf8_stravis).
	args := []string{"list-windows", "-t", exact(session), "-F", "#{window_name}" + strings.TrimPrefix(paneFormat, "#{pane_active}")}
	out, err := c.query(ctx, args...)
	if err != nil {
		if noServer(err) {
			return nil, nil
		}
		return nil, err
	}
	var windows []Window
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		name, rest, _ := strings.Cut(line, "\t")
		p, err := parsePane(rest)
		if err != nil {
			return nil, fmt.Errorf("tmux %s printed %q: %v", strings.Join(args, " "), line, err)
		}
		windows = append(windows, Window{Name: name, PID: p.pid, Dead: p.dead, Status: p.status})
	}
	return windows, nil
}

// NewWindow starts argv in a new detached window named window in session, creating the session
// if there is none, and returns the pid of the pane's process. dir, env and argv are as for
// NewSession, and reach the program as literally. A window of that name already in the session
// is an error matching ErrExists, since a target could not tell the two apart; the check and the
// creation are two tmux commands, so callers that may race on one name need a lock of their own.
// Names tmux cannot target exactly (see WindowTarget) are refused.
func (c *Client) NewWindow(ctx context.Context, session, window, dir string, env []string, argv ...string) (int, error) {
	if err := checkName(sessionName, session); err != nil {
		return 0, err
	}
	if err := checkName(windowName, window); err != nil {
		return 0, err
	}
	tail := []string{"-n", escapeFormat(window), "-c", escapeFormat(dir)}
	for _, kv := range env {
		tail = append(tail, "-e", kv)
	}
	tail = append(tail, "--")
	tail = append(tail, argv...)
	// "=session:" with no window makes new-window take the session's next free index (tmux
	// 3.3a, CMD_FIND_WINDOW_INDEX).
	newWindow := append([]string{"new-window", "-d", "-P", "-F", "#{pane_pid}", "-t", string(SessionTarget(session))}, tail...)
	newSession := append([]string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", escapeFormat(session)}, tail...)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		windows, err := c.ListWindows(ctx, session)
		if err != nil {
			return 0, err
		}
		args := newSession
		if windows != nil {
			for _, w := range windows {
				if w.Name == window {
					return 0, fmt.Errorf("tmux session %q already has a window %q: %w", session, window, ErrExists)
				}
			}
			args = newWindow
		}
		pid, err := c.newPane(ctx, args)
		// ErrGone: the session or the server ended between ListWindows and new-window, or
		// new-session reached an exiting server (see NewSession). ErrExists: another caller
		// created the session first. Either way, look again.
		if err == nil || !(errors.Is(err, ErrGone) || errors.Is(err, ErrExists)) || time.Since(start) >= createWait {
			return pid, err
		}
		if err := pause(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// KillWindow ends t's window and the processes in it; a window that is already gone is not an
// error. Ending a session's last window ends the session, and with the last session tmux 3.3a
// ends the server (exit-empty).
func (c *Client) KillWindow(ctx context.Context, t Target) error {
	if err := t.check(); err != nil {
		return err
	}
	_, err := c.run(ctx, "kill-window", "-t", string(t))
	if err != nil && noServer(err) {
		return nil
	}
	return err
}
