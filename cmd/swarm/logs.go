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
	"github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// logsOptions are logs' flags.
type logsOptions struct {
	history, follow bool
	lines           int
	linesGiven      bool // a process worker's log is shown whole unless --lines is given
}

// AddFlags appends logs' flags, each writing into o, to flags.
func (o *logsOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "history", Destination: &o.history, Usage: "tmux: the pane's history too (--lines of it), not only the screen"},
		&ucli.IntFlag{Name: "lines", Value: 1000, Destination: &o.lines, Action: cli.Given[int](&o.linesGiven),
			Usage: "tmux with --history: lines of history (`N`); a process worker: its log's last N lines, when given"},
		&ucli.BoolFlag{Name: "follow", Destination: &o.follow, Usage: "keep showing: a process worker's log as it grows, a tmux worker's last " +
			"30 lines every second; until Ctrl-C or the worker stops"},
	)
}

func logsCommand() *cli.Command {
	var o logsOptions
	return &cli.Command{
		Name: "logs", Operand: "workers", Usage: "a worker's output", UsageText: "swarm logs NAME [--history] [--lines N] [--follow]",
		Flags: o.AddFlags(nil),
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
			if o.history {
				history = max(o.lines, 0)
			}
			if w.Tmux != nil {
				if o.follow {
					return followPane(ctx, s, sw, w, history)
				}
				text, err := sw.Pane(ctx, w, history)
				if err != nil {
					return fmt.Errorf("failed to capture pane for '%s': %v", name, err)
				}
				fmt.Fprint(s.Out, text)
				return nil
			}
			f, err := fsx.OpenRegular(sw.Dir().StdoutLog(name))
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(s.Err, "swarm: no logs found for %s\n", name)
				return &cli.ExitError{Code: 1}
			}
			if err != nil {
				return fmt.Errorf("reading the log of '%s': %v", name, err)
			}
			defer f.Close()
			if o.linesGiven {
				if err := seekLastLines(f, max(o.lines, 0)); err != nil {
					return fmt.Errorf("reading the log of '%s': %v", name, err)
				}
			}
			// The agent's output as text: its escapes (clipboard writes, title changes, status
			// queries whose answers would land in the user's shell) are not the user's
			// terminal's to obey. Streamed, so a log of any size takes the same memory.
			out := screen.NewStripWriter(s.Out)
			if o.follow {
				return followLog(ctx, out, sw, w, f)
			}
			if _, err := io.Copy(out, f); err != nil {
				return fmt.Errorf("reading the log of '%s': %v", name, err)
			}
			return nil
		},
	}
}

// seekLastLines moves f to the start of its last n lines (a final newline ends the last line,
// it does not start another; fewer lines than n: all of them), reading back from the end a
// block at a time: however large the log, only what is shown is read.
func seekLastLines(f *os.File, n int) error {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	start := int64(0)
	if n == 0 {
		start = end
	}
	buf := make([]byte, 64<<10)
	for pos := end; n > 0 && pos > 0; {
		k := min(int64(len(buf)), pos)
		pos -= k
		b := buf[:k]
		if _, err := f.ReadAt(b, pos); err != nil {
			return err
		}
		for i := len(b) - 1; i >= 0 && n > 0; i-- {
			if b[i] != '\n' || pos+int64(i) == end-1 {
				continue
			}
			if n--; n == 0 {
				start = pos + int64(i) + 1
			}
		}
	}
	_, err = f.Seek(start, io.SeekStart)
	return err
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

// followLog prints a process worker's log f from where it stands and what is added to it (the
// Python swarm exec'd tail -f) to out, until interrupted (exit 0) or the worker stops and all
// of its log was printed.
func followLog(ctx context.Context, out io.Writer, sw *swarm.Swarm, w *worker.Worker, f *os.File) error {
	for {
		// Whether it runs is asked before reading: what it wrote before it stopped is read next.
		running := sw.Live(ctx, w).Running
		if _, err := io.Copy(out, f); err != nil {
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
