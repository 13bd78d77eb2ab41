package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name: "logs", Usage: "a worker's output", UsageText: "swarm logs NAME [--history] [--lines N] [--follow]",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "history", Usage: "tmux: the pane's history too (--lines of it), not only the screen"},
			&ucli.IntFlag{Name: "lines", Value: 1000, Usage: "tmux with --history: lines of history (`N`)"},
			&ucli.BoolFlag{Name: "follow", Usage: "keep showing: a process worker's log as it grows, a tmux worker's last " +
				"30 lines every second; until Ctrl-C or the worker stops"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 {
				return cli.Usagef("the following arguments are required: name")
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			name := c.Args().First()
			w := st.Get(name)
			if w == nil {
				fmt.Fprintf(s.Err, "swarm: no worker named '%s'\n", name)
				return &cli.ExitError{Code: 1}
			}
			history := 0
			if c.Bool("history") {
				history = max(c.Int("lines"), 0)
			}
			if w.Tmux != nil {
				if c.Bool("follow") {
					return followPane(ctx, s, sw, w, history)
				}
				text, err := sw.Pane(ctx, w, history)
				if err != nil {
					return fmt.Errorf("failed to capture pane for '%s': %v", name, err)
				}
				fmt.Fprint(s.Out, text)
				return nil
			}
			if c.Bool("follow") {
				return followLog(ctx, s, sw, w)
			}
			b, err := fsx.ReadFileLimit(sw.Dir().StdoutLog(name), 1<<30)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(s.Err, "swarm: no logs found for %s\n", name)
				return &cli.ExitError{Code: 1}
			}
			if err != nil {
				return err
			}
			s.Out.Write(b)
			return nil
		},
	}
}

// followPane shows a tmux worker's last 30 lines every second, clearing the terminal first, as
// the Python swarm did, until interrupted (exit 0) or the worker stops.
func followPane(ctx context.Context, s cli.Streams, sw *swarm.Swarm, w *worker.Worker, history int) error {
	for {
		text, err := sw.Pane(ctx, w, history)
		if err == nil {
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			fmt.Fprint(s.Out, "\x1b[2J\x1b[H"+strings.Join(lines, "\n")+"\n")
		}
		if !sw.Live(ctx, w).Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// followLog prints a process worker's log and what is added to it (the Python swarm exec'd
// tail -f) until interrupted (exit 0) or the worker stops and all of its log was printed.
func followLog(ctx context.Context, s cli.Streams, sw *swarm.Swarm, w *worker.Worker) error {
	f, err := os.Open(sw.Dir().StdoutLog(w.Name))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(s.Err, "swarm: no logs found for %s\n", w.Name)
		return &cli.ExitError{Code: 1}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		// Whether it runs is asked before reading: what it wrote before it stopped is read next.
		running := sw.Live(ctx, w).Running
		if _, err := io.Copy(s.Out, f); err != nil {
			return err
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}
