package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/tmux"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

func attachCommand() *cli.Command {
	return &cli.Command{
		Name: "attach", Operand: "workers", Usage: "attach to a worker's tmux window", UsageText: "swarm attach NAME",
		ExitCodes: []cli.ExitCode{{Code: 0, Meaning: "detached (the status is tmux attach's)"},
			{Code: 1, Meaning: "not found, not a tmux worker, its window gone, or no terminal"}, {Code: 2, Meaning: "usage error"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 {
				return cli.Usagef("the following arguments are required: name")
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			w, err := one(st, c.Args().First(), 1)
			if err != nil {
				return err
			}
			if w.Tmux == nil {
				// A process worker has no window to attach to; its supervisor's screen and log
				// are what there is to see.
				return fmt.Errorf("worker '%s' is not a tmux worker\nswarm: hint: 'swarm peek %s' shows its screen, "+
					"'swarm logs --follow %s' its output, 'swarm send %s TEXT' types into it", w.Name, w.Name, w.Name, w.Name)
			}
			tc, err := sw.Tmux(w)
			if err != nil {
				return err
			}
			bin, err := exec.LookPath("tmux")
			if err != nil {
				return fmt.Errorf("tmux not found: %v", err)
			}
			// The window first (exact target: a bare name prefix-matches another worker's), then
			// the session: attach shows the session's current window.
			sel := append(sockArgs(tc), "select-window", "-t", string(tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window)))
			if out, err := exec.CommandContext(ctx, bin, sel...).CombinedOutput(); err != nil {
				return fmt.Errorf("worker '%s' has no tmux window %s:%s (is it running?): %s", w.Name, w.Tmux.Session,
					w.Tmux.Window, strings.TrimSpace(string(out)))
			}
			// Without a terminal tmux would only say "open terminal failed: not a terminal",
			// after the exec, with nothing of what to do instead.
			if in, ok := s.In.(*os.File); !ok || !term.IsTerminal(int(in.Fd())) {
				return fmt.Errorf("attach needs a terminal, and stdin is not one: run it from a terminal, or 'swarm peek %s' to see its screen", w.Name)
			}
			argv := tc.AttachArgs(w.Tmux.Session)
			argv[0] = bin
			// As the Python swarm: tmux takes this process's place and terminal.
			return syscall.Exec(bin, argv, os.Environ())
		},
	}
}

// sockArgs are the tmux options that reach the worker's server.
func sockArgs(tc *tmux.Client) []string {
	if tc.Socket == "" {
		return nil
	}
	return []string{"-S", tc.Socket}
}
