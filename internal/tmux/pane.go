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
