package swarmcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ordered"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// load opens the swarm directory and reads its state.
func load(e *env) (*home, *worker.State, error) {
	h, err := openHome(e)
	if err != nil {
		return nil, nil, err
	}
	s, err := h.reg.Load()
	if err != nil {
		return nil, nil, err
	}
	// A spawn killed half-way is finished or undone before anyone looks (spawnsafe.go).
	return h, recoverSpawns(context.Background(), e, h, s), nil
}

// one returns the worker a verb names; not found is an error with code (1, or 2 for status
// and peek, as the Python swarm had it).
func one(s *worker.State, name string, code int) (*worker.Worker, error) {
	if w := s.Get(name); w != nil {
		return w, nil
	}
	return nil, &cli.ExitError{Code: code, Err: errNotFound{name}}
}

func choice(name string, value string, choices ...string) error {
	for _, c := range choices {
		if value == c {
			return nil
		}
	}
	return cli.Usagef("argument --%s: invalid choice: '%s' (choose from '%s')", name, value, strings.Join(choices, "', '"))
}

var lsVerb = &verb{
	name: "ls", usage: "list workers", usageText: "swarm ls [--format table|json|names] [--status running|stopped|all] [--tag T]",
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "format", Value: "table", Usage: "table, json (full workers) or names (one a line)"},
		&ucli.StringFlag{Name: "status", Value: "all", Usage: "running, stopped or all"},
		&ucli.StringFlag{Name: "tag", Usage: "only workers with this tag (`T`)"},
	},
	action: func(c *ucli.Context, e *env) error {
		if err := choice("format", c.String("format"), "table", "json", "names"); err != nil {
			return err
		}
		if err := choice("status", c.String("status"), "running", "stopped", "all"); err != nil {
			return err
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		var shown []*worker.Worker
		for _, w := range s.Workers {
			live := h.check(c.Context, w)
			x := *w
			x.Status = statusWord(live.running)
			x.Metadata = withLiveActivity(w, live.running)
			if o := live.outcome; o != nil && !x.Metadata.Has(worker.MetaFinished) {
				// Ended, and its supervisor is still writing that down: say it already.
				x.Metadata = x.Metadata.SetValue(worker.MetaExitCode, o.ExitCode).SetValue(worker.MetaFinished, o.Finished).
					SetValue(worker.MetaReason, o.Reason)
			}
			if st := c.String("status"); st != "all" && x.Status != st {
				continue
			}
			if t := c.String("tag"); t != "" && !contains(w.Tags, t) {
				continue
			}
			shown = append(shown, &x)
		}
		switch c.String("format") {
		case "json":
			fmt.Fprintf(e.stdout, "%s\n", worker.EncodeWorkers(shown))
		case "names":
			for _, w := range shown {
				fmt.Fprintln(e.stdout, w.Name)
			}
		default:
			printTable(e, shown)
		}
		return nil
	},
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// printTable prints ls's table as the Python swarm did (cli.Table); nothing when there are no
// workers, not even the header.
func printTable(e *env, ws []*worker.Worker) {
	if len(ws) == 0 {
		return
	}
	// The Python swarm's columns first, as it printed them; ours after them, so that scripts
	// that cut its columns still find them where they were.
	rows := [][]string{{"NAME", "STATUS", "PID/WINDOW", "STARTED", "WORKTREE", "TAG", "ACTIVITY", "EXIT"}}
	now := time.Now()
	for _, w := range ws {
		where := "-"
		if w.Tmux != nil {
			where = w.Tmux.Session + ":" + w.Tmux.Window
		} else if w.PID != nil && *w.PID != 0 {
			where = fmt.Sprint(*w.PID)
		}
		wt, tag := "-", "-"
		if w.Worktree != nil {
			wt = w.Worktree.Path
		}
		if len(w.Tags) > 0 {
			tag = strings.Join(w.Tags, ",")
		}
		rows = append(rows, []string{w.Name, w.Status, where, age(w.Started, now), wt, tag,
			activityWords(w, w.Status == worker.StatusRunning, now), exitCell(w)})
	}
	cli.Table(e.stdout, rows)
}

func age(started string, now time.Time) string {
	t, ok := worker.ParseTimestamp(started)
	if !ok {
		return "?"
	}
	return worker.Age(t, now)
}

var statusVerb = &verb{
	name: "status", usage: "a worker's status", usageText: "swarm status NAME",
	exitCodes: []cli.ExitCode{{Code: 0, Meaning: "running"}, {Code: 1, Meaning: "stopped (or failure)"},
		{Code: 2, Meaning: "not found (or usage error)"}},
	action: func(c *ucli.Context, e *env) error {
		if c.NArg() != 1 {
			return cli.Usagef("the following arguments are required: name")
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		w, err := one(s, c.Args().First(), 2)
		if err != nil {
			return err
		}
		live := h.check(c.Context, w)
		line := fmt.Sprintf("%s: %s (", w.Name, statusWord(live.running))
		if w.Tmux != nil {
			line += fmt.Sprintf("tmux window %s:%s", w.Tmux.Session, w.Tmux.Window)
		} else if w.PID != nil && *w.PID != 0 {
			line += fmt.Sprintf("pid %d", *w.PID)
		}
		if w.Worktree != nil {
			line += ", worktree " + w.Worktree.Path
		}
		line += ", uptime " + age(w.Started, time.Now())
		if o := live.outcome; o != nil {
			line += ", " + exitWords(o)
		}
		fmt.Fprintln(e.stdout, line+")")
		if !live.running {
			return &cli.ExitError{Code: 1}
		}
		return nil
	},
}

// exitWords says how a worker's agent ended: "exit code 3" when it exited by itself, "exit
// code 143: killed" when something ended it (the supervisor's reason: killed by swarm kill,
// session-killed when its tmux window or server went, supervisor-signal-SIGTERM, ...), or
// why the code is not known.
func exitWords(o *worker.Outcome) string {
	if o.ExitCode == nil {
		return "exit code unknown: " + o.Reason
	}
	if o.Reason == "" || strings.HasPrefix(o.Reason, "agent-exit-") {
		return fmt.Sprintf("exit code %d", *o.ExitCode)
	}
	return fmt.Sprintf("exit code %d: %s", *o.ExitCode, o.Reason)
}

// exitCell is ls' EXIT column: for a stopped worker of ours, its agent's exit code, with the
// reason when something else than the agent ended it ("143 killed", "? supervisor-lost");
// "-" for a running worker and for one the Python swarm started (it never knew).
func exitCell(w *worker.Worker) string {
	o, ok := w.Ended()
	if w.Status == worker.StatusRunning || !ok {
		return "-"
	}
	code := "?"
	if o.ExitCode != nil {
		code = fmt.Sprint(*o.ExitCode)
	}
	if o.Reason == "" || strings.HasPrefix(o.Reason, "agent-exit-") {
		return code
	}
	return code + " " + o.Reason
}

var peekVerb = &verb{
	name: "peek", usage: "show a worker's screen", usageText: "swarm peek [NAME] [-n N] [--all]",
	flags: []ucli.Flag{
		&ucli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 30, Usage: "lines to show (`N`)"},
		&ucli.BoolFlag{Name: "all", Usage: "every running worker"},
	},
	exitCodes: []cli.ExitCode{{Code: 0, Meaning: "ok"}, {Code: 1, Meaning: "failure"}, {Code: 2, Meaning: "not found (or usage error)"}},
	action: func(c *ucli.Context, e *env) error {
		h, s, err := load(e)
		if err != nil {
			return err
		}
		n := c.Int("lines")
		if c.Bool("all") {
			for _, w := range s.Workers {
				if !h.check(c.Context, w).running {
					continue
				}
				if text, err := screen(c.Context, h, w, n); err == nil {
					fmt.Fprintf(e.stdout, "=== %s ===\n%s\n", w.Name, text)
				}
			}
			return nil
		}
		if c.NArg() == 0 {
			return errors.New("worker name required (or use --all)")
		}
		w, err := one(s, c.Args().First(), 2)
		if err != nil {
			return err
		}
		if !h.check(c.Context, w).running {
			return fmt.Errorf("worker '%s' is not running", w.Name)
		}
		text, err := screen(c.Context, h, w, n)
		if err != nil {
			return fmt.Errorf("failed to capture pane for '%s': %v", w.Name, err)
		}
		fmt.Fprint(e.stdout, text)
		return nil
	},
}

// screen is what a person would see of the worker's agent: the last n lines of its screen,
// from its supervisor (both modes) or, for a worker the Python swarm started, its tmux pane.
func screen(ctx context.Context, h *home, w *worker.Worker, n int) (string, error) {
	if n < 1 {
		n = 1
	}
	if !w.Supervised() {
		if w.Tmux == nil {
			return "", fmt.Errorf("worker '%s' is not a tmux worker", w.Name)
		}
		tc, err := tmuxOf(w)
		if err != nil {
			return "", err
		}
		return tc.Capture(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window), n)
	}
	ctl, err := h.control(w)
	if err != nil {
		return "", err
	}
	defer ctl.Close()
	resp, err := ctl.Do(supervise.Request{Op: supervise.OpScreen, Lines: n})
	if err != nil {
		return "", err
	}
	lines := resp.Screen
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// targets returns the workers a verb with --all acts on (the running ones) or the one named.
func targets(c *ucli.Context, h *home, s *worker.State, name string, noName string) ([]*worker.Worker, error) {
	if c.Bool("all") {
		var ws []*worker.Worker
		for _, w := range s.Workers {
			if h.check(c.Context, w).running && (w.Supervised() || w.Tmux != nil) {
				ws = append(ws, w)
			}
		}
		return ws, nil
	}
	if name == "" {
		return nil, errors.New(noName)
	}
	w, err := one(s, name, 1)
	if err != nil {
		return nil, err
	}
	if !w.Supervised() && w.Tmux == nil {
		return nil, fmt.Errorf("worker '%s' is not a tmux worker", w.Name)
	}
	if !h.check(c.Context, w).running {
		return nil, fmt.Errorf("worker '%s' is not running", w.Name)
	}
	return []*worker.Worker{w}, nil
}

// typeInto types text (and keys) into a worker's agent: through its supervisor, or the tmux
// pane of a worker the Python swarm started. keys are the supervisor's key names.
func typeInto(ctx context.Context, h *home, w *worker.Worker, text string, keys ...string) error {
	if !w.Supervised() {
		tc, err := tmuxOf(w)
		if err != nil {
			return err
		}
		t := tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window)
		if text != "" {
			if err := tc.SendText(ctx, t, text); err != nil {
				return err
			}
		}
		names := map[string]string{"interrupt": "C-c", "eof": "C-d", "escape": "Escape", "enter": "Enter", "clear-line": "C-u"}
		for _, k := range keys {
			if err := tc.SendKeys(ctx, t, names[k]); err != nil {
				return err
			}
		}
		return nil
	}
	ctl, err := h.control(w)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if text != "" {
		if _, err := ctl.Do(supervise.Request{Op: supervise.OpSend, Text: text}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		req := supervise.Request{Op: supervise.OpKeys, Keys: []string{k}}
		if k == "clear-line" {
			req = supervise.Request{Op: supervise.OpSend, Text: "\x15"} // Ctrl-U: no named key for it
		}
		if _, err := ctl.Do(req); err != nil {
			return err
		}
	}
	return nil
}

var interruptVerb = &verb{
	name: "interrupt", usage: "press Ctrl-C in a worker", usageText: "swarm interrupt [NAME] [--all]",
	flags: []ucli.Flag{&ucli.BoolFlag{Name: "all", Usage: "every running worker"}},
	action: func(c *ucli.Context, e *env) error {
		h, s, err := load(e)
		if err != nil {
			return err
		}
		ws, err := targets(c, h, s, c.Args().First(), "worker name required when not using --all")
		if err != nil {
			return err
		}
		for _, w := range ws {
			typeInto(c.Context, h, w, "", "interrupt") // errors ignored, as the Python swarm did
			fmt.Fprintf(e.stdout, "interrupted %s\n", w.Name)
		}
		return nil
	},
}

var eofVerb = &verb{
	name: "eof", usage: "press Ctrl-D in a worker", usageText: "swarm eof NAME",
	action: func(c *ucli.Context, e *env) error {
		if c.NArg() != 1 {
			return cli.Usagef("the following arguments are required: name")
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		ws, err := targets(c, h, s, c.Args().First(), "")
		if err != nil {
			return err
		}
		typeInto(c.Context, h, ws[0], "", "eof")
		fmt.Fprintf(e.stdout, "sent eof to %s\n", ws[0].Name)
		return nil
	},
}

var killVerb = &verb{
	name: "kill", usage: "stop workers (they stay listed, stopped)", usageText: "swarm kill [NAME] [--rm-worktree] [--force-dirty] [--all]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "rm-worktree", Usage: "remove the worker's worktree (not when it has changes)"},
		&ucli.BoolFlag{Name: "force-dirty", Usage: "remove it even with changes"},
		&ucli.BoolFlag{Name: "all", Usage: "every worker"},
	},
	action: func(c *ucli.Context, e *env) error {
		h, s, err := load(e)
		if err != nil {
			return err
		}
		// A ralph loop's monitor goes first (it would start the next iteration), then the
		// workers are read again: the monitor may have just replaced the one it ran.
		loops := false
		if c.Bool("all") {
			for _, w := range s.Workers {
				loops = ralphKill(c.Context, h, w.Name, c.Bool("rm-worktree"), e.stderr) || loops
			}
		} else if c.NArg() > 0 {
			loops = ralphKill(c.Context, h, c.Args().First(), c.Bool("rm-worktree"), e.stderr)
		}
		if loops {
			if s, err = h.reg.Load(); err != nil {
				return err
			}
		}
		ws := s.Workers
		if !c.Bool("all") {
			if c.NArg() == 0 {
				return errors.New("must specify worker name or --all")
			}
			w, err := one(s, c.Args().First(), 1)
			if err != nil && loops {
				// A loop between two iterations has no worker: the loop was what there was to kill.
				fmt.Fprintf(e.stdout, "killed %s\n", c.Args().First())
				return nil
			}
			if err != nil {
				return err
			}
			ws = []*worker.Worker{w}
		}
		killed := map[string]bool{}
		// The workers are stopped side by side: each stop waits for its supervisor to record
		// the end, and a hundred one after another took seconds. What is said about them is
		// said in their order, as the Python swarm did.
		ordered.Map(len(ws), 16, len(ws), func(i int) struct{} {
			stopWorker(c.Context, h, ws[i])
			return struct{}{}
		}, func(i int, _ struct{}) {
			w := ws[i]
			if c.Bool("rm-worktree") && w.Worktree != nil {
				if err := removeWorktree(c.Context, w.Worktree, c.Bool("force-dirty")); err != nil {
					e.warnf("cannot remove worktree for '%s': %v", w.Name, err)
					fmt.Fprintf(e.stderr, "swarm: use --force-dirty to remove anyway\n")
				}
			}
			killed[w.Name] = true
			fmt.Fprintf(e.stdout, "killed %s\n", w.Name)
		})
		// Only these workers' status, under the lock: no other worker's change is lost.
		h.reg.Update(c.Context, func(s *worker.State) error {
			changed := false
			for _, w := range ws {
				if x := s.Get(w.Name); x != nil && x.Started == w.Started && x.Status != worker.StatusStopped {
					x.Status, changed = worker.StatusStopped, true
				}
			}
			if !changed {
				return worker.ErrUnchanged
			}
			return nil
		})
		cleanSessions(c.Context, h, ws, killed)
		return nil
	},
}

// stopWorker stops a worker's agent and waits (a while) for its end to be recorded: a
// supervised one through its supervisor (TERM to the agent's process group, KILL after the
// grace), one of the Python swarm's as it did (kill-window; TERM, 5 s, KILL).
func stopWorker(ctx context.Context, h *home, w *worker.Worker) {
	if !w.Supervised() {
		if w.Tmux != nil {
			if tc, err := tmuxOf(w); err == nil {
				tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
			}
			return
		}
		if w.PID != nil && *w.PID > 0 {
			pid := int(*w.PID)
			if syscall.Kill(pid, syscall.SIGTERM) != nil {
				return
			}
			for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		return
	}
	e, _ := h.layout.ReadEntry(w.Name)
	if e == nil || e.PID <= 0 || !supervise.SupervisorAlive(e.PID, w.Name) {
		h.check(ctx, w) // closes a lost one
		return
	}
	syscall.Kill(e.PID, supervise.SignalKill)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && supervise.SupervisorAlive(e.PID, w.Name) {
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanSessions ends the tmux sessions of the workers just stopped or removed that no other
// worker in state uses (the Python swarm's empty-session cleanup).
func cleanSessions(ctx context.Context, h *home, gone []*worker.Worker, goneNames map[string]bool) {
	s, err := h.reg.Load()
	if err != nil {
		return
	}
	key := func(w *worker.Worker) string {
		sock := ""
		if w.Tmux.Socket != nil {
			sock = *w.Tmux.Socket
		}
		return sock + "\x00" + w.Tmux.Session
	}
	used := map[string]bool{}
	for _, w := range s.Workers {
		if w.Tmux != nil && !goneNames[w.Name] {
			used[key(w)] = true
		}
	}
	done := map[string]bool{}
	for _, w := range gone {
		if w.Tmux == nil || used[key(w)] || done[key(w)] {
			continue
		}
		done[key(w)] = true
		if tc, err := tmuxOf(w); err == nil {
			tc.KillSession(ctx, w.Tmux.Session)
		}
	}
}

var waitVerb = &verb{
	name: "wait", usage: "wait for workers to exit", usageText: "swarm wait [NAME] [--timeout S] [--all]",
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "timeout", Usage: "give up after `S` seconds (or a duration: 90s, 30m, 1h30m); 0: never"},
		&ucli.BoolFlag{Name: "all", Usage: "every running worker"},
	},
	exitCodes: []cli.ExitCode{{Code: 0, Meaning: "exited with 0"}, {Code: 1, Meaning: "timeout or failure"},
		{Code: 2, Meaning: "usage error"}, {Code: 3, Meaning: "and above: the worker's exit code (--all: the first non-zero)"}},
	action: func(c *ucli.Context, e *env) error {
		var timeout time.Duration
		if t := c.String("timeout"); t != "" && t != "0" {
			secs, err := worker.ParseDuration(t)
			if err != nil {
				return cli.Usagef("argument --timeout: invalid value: '%s'", t)
			}
			timeout = time.Duration(secs) * time.Second
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		var ws []*worker.Worker
		if c.Bool("all") {
			for _, w := range s.Workers {
				if h.check(c.Context, w).running {
					ws = append(ws, w)
				}
			}
		} else {
			if c.NArg() == 0 {
				return errors.New("name required (or use --all)")
			}
			w, err := one(s, c.Args().First(), 1)
			if err != nil {
				return err
			}
			ws = []*worker.Worker{w}
		}
		start := time.Now()
		code := 0
		pending := ws
		for len(pending) > 0 {
			if timeout > 0 && time.Since(start) > timeout {
				for _, w := range pending {
					fmt.Fprintf(e.stdout, "%s: still running (timeout)\n", w.Name)
				}
				return &cli.ExitError{Code: 1}
			}
			var still []*worker.Worker
			for _, w := range pending {
				live := h.check(c.Context, w)
				if live.running {
					still = append(still, w)
					continue
				}
				if live.supervised {
					h.supervisorGone(w, 5*time.Second)
				}
				fmt.Fprintf(e.stdout, "%s: exited\n", w.Name)
				if c := exitCode(e, w, live); code == 0 {
					code = c
				}
			}
			pending = still
			if len(pending) > 0 {
				select {
				case <-c.Context.Done():
					return c.Context.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		if code != 0 {
			return &cli.ExitError{Code: code}
		}
		return nil
	},
}

// exitCode is the status wait exits with for a worker that stopped: its agent's exit code
// (capped to 255), 1 when it cannot be known (said why), 0 for a worker the Python swarm
// started (it had none to give).
func exitCode(e *env, w *worker.Worker, live liveness) int {
	if !live.supervised {
		return 0
	}
	if live.outcome == nil || live.outcome.ExitCode == nil {
		reason := "no outcome recorded"
		if live.outcome != nil {
			reason = live.outcome.Reason
		}
		e.warnf("%s: exit code unknown (%s)", w.Name, reason)
		return 1
	}
	c := int(*live.outcome.ExitCode)
	if c < 0 || c > 255 {
		return 1
	}
	return c
}

var cleanVerb = &verb{
	name: "clean", usage: "remove stopped workers", usageText: "swarm clean [NAME] [--no-rm-worktree] [--force-dirty] [--all]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "rm-worktree", Value: true, Usage: "remove the worktree (the default)"},
		&ucli.BoolFlag{Name: "no-rm-worktree", Usage: "keep the worktree"},
		&ucli.BoolFlag{Name: "force-dirty", Usage: "remove worktrees even with changes"},
		&ucli.BoolFlag{Name: "all", Usage: "every stopped worker"},
	},
	action: func(c *ucli.Context, e *env) error {
		h, s, err := load(e)
		if err != nil {
			return err
		}
		var ws []*worker.Worker
		if c.Bool("all") {
			for _, w := range s.Workers {
				if !h.check(c.Context, w).running {
					ws = append(ws, w)
				}
			}
		} else {
			if c.NArg() == 0 {
				return errors.New("must specify worker name or use --all")
			}
			w, err := one(s, c.Args().First(), 1)
			if err != nil {
				return err
			}
			if h.check(c.Context, w).running {
				return fmt.Errorf("cannot clean running worker '%s'", w.Name)
			}
			ws = []*worker.Worker{w}
		}
		gone := map[string]bool{}
		for _, w := range ws {
			if w.Worktree != nil && !c.Bool("no-rm-worktree") {
				if err := removeWorktree(c.Context, w.Worktree, c.Bool("force-dirty")); err != nil {
					e.warnf("preserving worktree for '%s': %v", w.Name, err)
					fmt.Fprintf(e.stderr, "swarm: worktree at: %s\nswarm: use --force-dirty to remove anyway\n", w.Worktree.Path)
				}
			}
			os.Remove(h.dir.StdoutLog(w.Name))
			os.Remove(h.dir.StderrLog(w.Name))
			os.Remove(h.layout.LogPath(w.Name))
			h.reg.Update(c.Context, func(s *worker.State) error {
				if x := s.Get(w.Name); x == nil || x.Started != w.Started || !s.Remove(w.Name) {
					return worker.ErrUnchanged
				}
				return nil
			})
			h.stopHeartbeat(c.Context, w.Name) // (one the Python swarm's daemon watched, too)
			gone[w.Name] = true
			fmt.Fprintf(e.stdout, "cleaned %s\n", w.Name)
		}
		cleanSessions(c.Context, h, ws, gone)
		return nil
	},
}
