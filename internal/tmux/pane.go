package tmux

import (
	"context"
	"fmt"
	"strconv"
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
