package swarm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// echoWait bounds how long send waits for the agent's terminal to show the text.
const echoWait = 2 * time.Second

// sendLockPath is the lock that serialises senders to one worker: supervise/send/<name>.lock.
func (s *Swarm) sendLockPath(name string) string {
	return filepath.Join(s.dir.Supervise(), "send", name+".lock")
}

// SendOptions are swarm send's flags.
type SendOptions struct {
	// Raw: no pre-clear (Escape, Ctrl-U) before the text.
	Raw bool
	// NoEnter: the text is not submitted with Enter.
	NoEnter bool
}

// Send types text into w's agent under the worker's send lock, so two senders' pre-clear, text
// and Enter never interleave: the pre-clear (Escape, Ctrl-U) unless o.Raw, the text in one
// literal write, then, once the agent's screen shows it (at most 2 s), Enter. An agent that
// does not echo (or echoes something else) gets a warning, the Python swarm's pause, and its
// Enter. A worker the Python swarm started is typed into through its tmux pane, as it did.
func (s *Swarm) Send(ctx context.Context, w *worker.Worker, text string, o SendOptions) error {
	return s.send(ctx, w, text, !o.Raw, !o.NoEnter, nil, s.warnf)
}

// send is Send that first asks ready, once it holds the worker's send lock and before it types
// anything: an error from ready is returned and nothing is typed. (The heartbeat checks there
// that the screen it judged idle has not changed meanwhile.) Warnings go to warnf.
func (s *Swarm) send(ctx context.Context, w *worker.Worker, text string, clear, enter bool,
	ready func(ctl *supervise.Control) error, warnf func(format string, args ...any)) error {
	if !w.Supervised() {
		return s.sendUnsupervised(ctx, w, text, clear, enter)
	}
	path := s.sendLockPath(w.Name)
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
	ctl, err := s.control(w)
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
		warnf("%s: the agent's screen did not show the text within %s (it may not echo input); sent anyway", w.Name, echoWait)
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
func (s *Swarm) sendUnsupervised(ctx context.Context, w *worker.Worker, text string, clear, enter bool) error {
	if clear {
		if err := s.Keys(ctx, w, "escape", "clear-line"); err != nil {
			return err
		}
	}
	if err := s.typeInto(ctx, w, text); err != nil {
		return err
	}
	if enter {
		delay := 100 * time.Millisecond
		if strings.Contains(text, "\n") {
			delay = 500 * time.Millisecond
		}
		time.Sleep(delay)
		return s.Keys(ctx, w, "enter")
	}
	return nil
}
