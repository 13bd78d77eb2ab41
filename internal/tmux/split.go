package tmux

import (
	"context"
	"fmt"
	"strings"
)

// SplitFrom splits pane (a pane id, "%N", as tmux gives it to the program in a pane in
// $TMUX_PANE; "" for the server's current pane) and starts the default shell in dir in the new
// pane, below it: swarm top's shell on a worker's worktree, beside top. Anything but a pane id
// is refused: a name would be matched by prefix.
func (c *Client) SplitFrom(ctx context.Context, pane, dir string) error {
	return c.SplitRun(ctx, pane, dir)
}

// SplitRun is SplitFrom running argv in the new pane instead of the default shell (dir ""
// leaves the directory to tmux). argv of two words or more is run as it is, no shell (tmux 3.2
// and later); one word would be read by a shell, so it is refused.
func (c *Client) SplitRun(ctx context.Context, pane, dir string, argv ...string) error {
	args := []string{"split-window", "-v"}
	if dir != "" {
		args = append(args, "-c", dir)
	}
	if pane != "" {
		if !isPaneID(pane) {
			return fmt.Errorf("tmux pane %q is not a pane id (%%N)", pane)
		}
		args = append(args, "-t", pane)
	}
	if len(argv) == 1 {
		return fmt.Errorf("tmux split: a command of one word %q would be read by a shell", argv[0])
	}
	if len(argv) > 0 {
		args = append(append(args, "--"), argv...)
	}
	_, err := c.run(ctx, args...)
	return err
}

func isPaneID(s string) bool {
	return len(s) > 1 && s[0] == '%' && strings.Trim(s[1:], "0123456789") == ""
}

// SocketOfEnv is the server's socket path in the value of $TMUX ("SOCKET,PID,SESSION"), as tmux
// sets it for the programs in its panes; "" when there is none.
func SocketOfEnv(tmuxEnv string) string {
	sock, _, _ := strings.Cut(tmuxEnv, ",")
	return sock
}
