package swarmcli

import (
	"bytes"
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
	scr "github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

var logsVerb = &verb{
	name: "logs", usage: "a worker's output", usageText: "swarm logs NAME [--history] [--lines N] [--follow]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "history", Usage: "tmux: the pane's history too (--lines of it), not only the screen"},
		&ucli.IntFlag{Name: "lines", Value: 1000, Usage: "tmux with --history: lines of history (`N`)"},
		&ucli.BoolFlag{Name: "follow", Usage: "keep showing: a process worker's log as it grows, a tmux worker's last " +
			"30 lines every second; until Ctrl-C or the worker stops"},
	},
	action: func(c *ucli.Context, e *env) error {
		if c.NArg() != 1 {
			return cli.Usagef("the following arguments are required: name")
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		name := c.Args().First()
		w := s.Get(name)
		if w == nil {
			fmt.Fprintf(e.stderr, "swarm: no worker named '%s'\n", name)
			return &cli.ExitError{Code: 1}
		}
		history := 0
		if c.Bool("history") {
			history = max(c.Int("lines"), 0)
		}
		if w.Tmux != nil {
			if c.Bool("follow") {
				return followPane(c.Context, e, h, w, history)
			}
			text, err := paneText(c.Context, h, w, history)
			if err != nil {
				return fmt.Errorf("failed to capture pane for '%s': %v", name, err)
			}
			fmt.Fprint(e.stdout, text)
			return nil
		}
		if c.Bool("follow") {
			return followLog(c.Context, e, h, w)
		}
		b, err := fsx.ReadFileLimit(h.dir.StdoutLog(name), 1<<30)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(e.stderr, "swarm: no logs found for %s\n", name)
			return &cli.ExitError{Code: 1}
		}
		if err != nil {
			return err
		}
		e.stdout.Write(b)
		return nil
	},
}

// paneText is what logs shows of a tmux worker: its pane's screen, or with history that many
// lines of the pane's history and the screen (capture-pane -S -history, as the Python swarm).
// A worker whose window is gone (it stopped) shows the end of its supervisor's output log,
// control sequences removed (the Python swarm failed with a traceback).
func paneText(ctx context.Context, h *home, w *worker.Worker, history int) (string, error) {
	tc, err := tmuxOf(w)
	if err != nil {
		return "", err
	}
	t := tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window)
	_, rows, err := tc.PaneSize(ctx, t)
	if err != nil {
		if text, ok := logTail(h, w, history); ok {
			return text, nil
		}
		return "", err
	}
	return tc.Capture(ctx, t, rows+history)
}

// logTail returns the last lines of a supervised tmux worker's output log, as text.
func logTail(h *home, w *worker.Worker, history int) (string, bool) {
	if !w.Supervised() {
		return "", false
	}
	b, err := fsx.ReadFileLimit(h.layout.LogPath(w.Name), 64<<20)
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

// followPane shows a tmux worker's last 30 lines every second, clearing the terminal first, as
// the Python swarm did, until interrupted (exit 0) or the worker stops.
func followPane(ctx context.Context, e *env, h *home, w *worker.Worker, history int) error {
	for {
		text, err := paneText(ctx, h, w, history)
		if err == nil {
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			if len(lines) > 30 {
				lines = lines[len(lines)-30:]
			}
			fmt.Fprint(e.stdout, "\x1b[2J\x1b[H"+strings.Join(lines, "\n")+"\n")
		}
		if !h.check(ctx, w).running {
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
func followLog(ctx context.Context, e *env, h *home, w *worker.Worker) error {
	path := h.dir.StdoutLog(w.Name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stderr, "swarm: no logs found for %s\n", w.Name)
		return &cli.ExitError{Code: 1}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		// Whether it runs is asked before reading: what it wrote before it stopped is read next.
		running := h.check(ctx, w).running
		if _, err := io.Copy(e.stdout, f); err != nil {
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
