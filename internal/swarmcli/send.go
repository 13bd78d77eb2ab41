package swarmcli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// echoWait bounds how long send waits for the agent's terminal to show the text.
const echoWait = 2 * time.Second

var sendVerb = &verb{
	name: "send", usage: "type text into a worker", usageText: "swarm send [NAME] TEXT [--no-enter] [--all] [--raw]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "no-enter", Usage: "do not press Enter after the text"},
		&ucli.BoolFlag{Name: "all", Usage: "every running worker"},
		&ucli.BoolFlag{Name: "raw", Usage: "no pre-clear (Escape, Ctrl-U) before the text"},
	},
	action: func(c *ucli.Context, e *env) error {
		var name, text string
		switch c.NArg() {
		case 0:
			return cli.Usagef("the following arguments are required: text")
		case 1:
			text = c.Args().First()
		default:
			name, text = c.Args().Get(0), c.Args().Get(1)
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		ws, err := targets(c, h, s, name, "worker name required when not using --all")
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := sendTo(c.Context, e, h, w, text, !c.Bool("raw"), !c.Bool("no-enter")); err != nil {
				return fmt.Errorf("sending to '%s': %v", w.Name, err)
			}
			fmt.Fprintf(e.stdout, "sent to %s\n", w.Name)
		}
		return nil
	},
}

// sendLockPath is the lock that serialises senders to one worker: supervise/send/<name>.lock.
func sendLockPath(h *home, name string) string {
	return filepath.Join(h.dir.Supervise(), "send", name+".lock")
}

// sendTo types text into w under the worker's send lock, so two senders' pre-clear, text and
// Enter never interleave: the pre-clear (Escape, Ctrl-U) unless raw, the text in one literal
// write, then, once the agent's screen shows it (at most echoWait), Enter. An agent that does
// not echo (or echoes something else) gets a warning, the Python swarm's pause, and its Enter.
func sendTo(ctx context.Context, e *env, h *home, w *worker.Worker, text string, clear, enter bool) error {
	return sendToIf(ctx, e, h, w, text, clear, enter, nil)
}

// sendToIf is sendTo that first asks ready, once it holds the worker's send lock and before
// it types anything: an error from ready is returned and nothing is typed. (The heartbeat
// checks there that the screen it judged idle has not changed meanwhile.)
func sendToIf(ctx context.Context, e *env, h *home, w *worker.Worker, text string, clear, enter bool,
	ready func(ctl *supervise.Control) error) error {
	if !w.Supervised() {
		return sendUnsupervised(ctx, h, w, text, clear, enter)
	}
	path := sendLockPath(h, w.Name)
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	unlock, err := fsx.LockFile(lctx, path)
	if err != nil {
		return fmt.Errorf("another send to it holds %s: %w", path, err)
	}
	defer unlock()
	ctl, err := h.control(w)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if ready != nil {
		if err := ready(ctl); err != nil {
			return err
		}
	}
	needle := echoNeedle(text)
	before := 0
	if needle != "" {
		if r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen, Lines: 200}); err == nil {
			before = strings.Count(strings.Join(r.Screen, "\n"), needle)
		}
	}
	if clear {
		// Escape and Ctrl-U as two writes, as the Python swarm's two send-keys: an Escape
		// followed at once by text is read by many line editors as Alt+<char>.
		if _, err := ctl.Do(supervise.Request{Op: supervise.OpKeys, Keys: []string{"escape"}}); err != nil {
			return err
		}
		if _, err := ctl.Do(supervise.Request{Op: supervise.OpSend, Text: "\x15"}); err != nil {
			return err
		}
	}
	if _, err := ctl.Do(supervise.Request{Op: supervise.OpSend, Text: text}); err != nil {
		return err
	}
	if !echoed(ctl, needle, before) {
		e.warnf("%s: the agent's screen did not show the text within %s (it may not echo input); sent anyway", w.Name, echoWait)
		if enter {
			delay := 100 * time.Millisecond
			if strings.Contains(text, "\n") {
				delay = 500 * time.Millisecond
			}
			time.Sleep(delay)
		}
	}
	if enter {
		if _, err := ctl.Do(supervise.Request{Op: supervise.OpKeys, Keys: []string{"enter"}}); err != nil {
			return err
		}
	}
	return nil
}

// echoNeedle is what of text the screen should show once typed: its last non-empty line,
// trimmed, at most its last 40 characters (a long line wraps).
func echoNeedle(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 40 {
			l = strings.TrimSpace(string(r[len(r)-40:]))
		}
		return l
	}
	return ""
}

// echoed waits (at most echoWait) until the screen holds needle more often than before.
func echoed(ctl *supervise.Control, needle string, before int) bool {
	if needle == "" {
		return true
	}
	deadline := time.Now().Add(echoWait)
	for pause := time.Millisecond; ; pause = min(pause*2, 20*time.Millisecond) {
		if r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen, Lines: 200}); err == nil &&
			strings.Count(strings.Join(r.Screen, "\n"), needle) > before {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// sendUnsupervised is send to a worker the Python swarm started, as it did (tmux send-keys).
func sendUnsupervised(ctx context.Context, h *home, w *worker.Worker, text string, clear, enter bool) error {
	if clear {
		if err := typeInto(ctx, h, w, "", "escape", "clear-line"); err != nil {
			return err
		}
	}
	if err := typeInto(ctx, h, w, text); err != nil {
		return err
	}
	if enter {
		delay := 100 * time.Millisecond
		if strings.Contains(text, "\n") {
			delay = 500 * time.Millisecond
		}
		time.Sleep(delay)
		return typeInto(ctx, h, w, "", "enter")
	}
	return nil
}
