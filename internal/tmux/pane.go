package tmux

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Capture returns the last lines lines of t's pane as text: no escape sequences, wrapped lines
// joined, trailing spaces and the blank rows below the last text dropped, each line ending in
// "\n". Fewer come back when the pane, history included, holds fewer.
func (c *Client) Capture(ctx context.Context, t Target, lines int) (string, error) {
	if lines < 1 {
		return "", fmt.Errorf("capturing %d lines of tmux pane %s: ask for at least 1", lines, t)
	}
	if err := t.check(); err != nil {
		return "", err
	}
	// tmux 3.3a: -S -n starts n rows up in the history and the capture runs to the bottom of
	// the screen, blank rows and all, so the last lines are picked here. -J keeps trailing
	// spaces (cmd-capture-pane.c turns trimming off with it); lastLines drops them.
	out, err := c.query(ctx, "capture-pane", "-p", "-J", "-t", string(t), "-S", strconv.Itoa(-lines))
	if err != nil {
		return "", err
	}
	return lastLines(string(out), lines), nil
}

// maxTextChunk is the most text SendText passes in one send-keys: tmux 3.3a refuses a command
// whose arguments, with a NUL after each, pass 16 KiB less 4 bytes ("command too long",
// client.c, MAX_IMSGSIZE), and the target and flags need room too.
const maxTextChunk = 8 << 10

// SendText types text into t's pane literally (send-keys -l): key names, a leading '-' and a
// final ';' are typed as they are, and no shell sees any of it. A "\n" arrives as a line feed
// (C-j), which not every program takes for Enter (C-m): end a line with SendKeys(…, "Enter").
// tmux 3.3a drops bytes that are not UTF-8. Text longer than 8 KiB is sent as several commands,
// split between characters; empty text sends nothing.
func (c *Client) SendText(ctx context.Context, t Target, text string) error {
	if err := t.check(); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	if err := c.leaveModes(ctx, t); err != nil {
		return err
	}
	for _, part := range chunks(text, maxTextChunk) {
		if _, err := c.run(ctx, "send-keys", "-l", "-t", string(t), "--", part); err != nil {
			return err
		}
	}
	return nil
}

// SendKeys presses keys in t's pane, each a tmux key name: "Enter", "C-c", "C-d", "Escape",
// "Up", "F1". tmux 3.3a types a word it does not know as a key name as text instead ("Entr"
// types E, n, t, r); with no key at all it would replay the key that ran the command, so at
// least one is required.
func (c *Client) SendKeys(ctx context.Context, t Target, keys ...string) error {
	if err := t.check(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return fmt.Errorf("sending keys to tmux pane %s: no key given", t)
	}
	if err := c.leaveModes(ctx, t); err != nil {
		return err
	}
	_, err := c.run(ctx, append([]string{"send-keys", "-t", string(t), "--"}, keys...)...)
	return err
}

// leaveModes ends copy mode (or any other mode) in t's pane: tmux 3.3a gives keys sent to a
// pane in a mode to the mode's key table, so with someone scrolling back in an attached client
// the text would be read as copy-mode commands ('q' leaves the mode, the rest reaches the
// program). copy-mode -q needs tmux 3.2.
func (c *Client) leaveModes(ctx context.Context, t Target) error {
	_, err := c.run(ctx, "copy-mode", "-q", "-t", string(t))
	return err
}

// paneFormat is what pane asks list-panes for, one line a pane.
const paneFormat = "#{pane_active}\t#{pane_pid}\t#{pane_width}\t#{pane_height}\t#{pane_dead}\t#{pane_dead_status}"

// paneInfo is what tmux says of a pane.
type paneInfo struct {
	pid, cols, rows int
	dead            bool
	status          int // exit status when dead; -1 if killed by a signal or not known yet
}

// pane describes t's pane. It asks list-panes, not display-message -p: tmux 3.3a's
// display-message takes a target it cannot find for the current pane (CMD_FIND_CANFAIL) and
// exits 0 without a word, which would report another window's pane.
func (c *Client) pane(ctx context.Context, t Target) (paneInfo, error) {
	if err := t.check(); err != nil {
		return paneInfo{}, err
	}
	args := []string{"list-panes", "-t", string(t), "-F", paneFormat}
	out, err := c.query(ctx, args...)
	if err != nil {
		return paneInfo{}, err
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if active, rest, _ := strings.Cut(line, "\t"); active == "1" {
			p, err := parsePane(rest)
			if err != nil {
				return paneInfo{}, fmt.Errorf("tmux %s printed %q: %v", strings.Join(args, " "), out, err)
			}
			return p, nil
		}
	}
	return paneInfo{}, fmt.Errorf("tmux %s printed %q: no active pane", strings.Join(args, " "), out)
}

// parsePane reads the fields of paneFormat after the first: pid, width, height, dead, status.
func parsePane(s string) (paneInfo, error) {
	f := strings.Split(s, "\t")
	if len(f) != 5 {
		return paneInfo{}, fmt.Errorf("%d fields, want 5", len(f))
	}
	var p paneInfo
	var err error
	for i, dst := range []*int{&p.pid, &p.cols, &p.rows} {
		if *dst, err = strconv.Atoi(f[i]); err != nil {
			return paneInfo{}, err
		}
	}
	p.dead, p.status = f[3] == "1", -1
	if f[4] != "" {
		if p.status, err = strconv.Atoi(f[4]); err != nil {
			return paneInfo{}, err
		}
	}
	return p, nil
}

// PanePID returns the pid of the process t's pane runs: the argv given to NewSession or
// NewWindow. A pane kept by remain-on-exit (a user's tmux.conf can turn it on) outlives its
// process and still reports its pid: PaneDead tells.
func (c *Client) PanePID(ctx context.Context, t Target) (int, error) {
	p, err := c.pane(ctx, t)
	return p.pid, err
}

// PaneSize returns the width and height of t's pane, in characters.
func (c *Client) PaneSize(ctx context.Context, t Target) (cols, rows int, err error) {
	p, err := c.pane(ctx, t)
	return p.cols, p.rows, err
}

// PaneDead reports whether the process of t's pane has exited, with its exit status, or -1 when
// a signal ended it or tmux has no status. Only a pane kept by remain-on-exit is ever dead:
// otherwise tmux closes the pane when its process exits, its window if that was the only pane,
// and its session if that was the last window, and PaneDead's error matches ErrGone.
//
// dead is reliable (the pane's terminal has closed), the status is not: tmux before 3.6 built
// with libutempter, as Debian's 3.3a is, can miss the SIGCHLD of a pane's process that exits
// while utempter's own handler is installed, and then never reaps it (tmux issues 311 and 4559,
// fixed in 3.6). Here 2 to 5 runs in 40 of "exit 3" stayed dead with no status.
func (c *Client) PaneDead(ctx context.Context, t Target) (dead bool, status int, err error) {
	p, err := c.pane(ctx, t)
	return p.dead, p.status, err
}

// ResizeWindow sets the size of t's window, in characters. A detached session's windows are
// 80x24 in tmux 3.3a (default-size). tmux 3.3a then sets the window's window-size option to
// manual, so the size stays when a client attaches, whatever that terminal's size.
func (c *Client) ResizeWindow(ctx context.Context, t Target, cols, rows int) error {
	if err := t.check(); err != nil {
		return err
	}
	if cols < 1 || rows < 1 {
		return fmt.Errorf("resizing tmux window %s to %dx%d: both must be at least 1", t, cols, rows)
	}
	_, err := c.run(ctx, "resize-window", "-t", string(t), "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
	return err
}
