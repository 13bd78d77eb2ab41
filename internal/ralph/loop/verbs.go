package loop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// verb is one of the loop verbs.
type verb struct {
	name, usage, usageText string
	flags                  []ucli.Flag
	action                 func(c *ucli.Context, l *app) error
	// signals: the verb handles SIGINT/SIGTERM itself (the monitor).
	signals bool
	// noHome: the verb needs no swarm directory (init, template).
	noHome bool
}

var verbs []*verb

func init() {
	verbs = []*verb{spawnVerb, runVerb, statusVerb, pauseVerb, resumeVerb, stopVerb, listVerb, logsVerb, cleanVerb,
		initVerb, templateVerb}
}

func lookup(name string) *verb {
	if name == "ls" {
		name = "list"
	}
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

func run(args []string, o swarm.Options, stdin io.Reader, stdout, stderr io.Writer) int {
	l := newApp(args, o, stdin, stdout, stderr)
	if len(args) < 2 || args[1] == "help" || args[1] == "--help" || args[1] == "-h" {
		if len(args) >= 3 && args[1] == "help" {
			if v := lookup(args[2]); v != nil {
				return l.exit(v, cli.Run(context.Background(), v.app(l), []string{l.tool + " " + v.name, "--help"}))
			}
		}
		l.usage()
		if len(args) < 2 {
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
	v := lookup(args[1])
	if v == nil {
		var names []string
		for _, v := range verbs {
			names = append(names, "'"+v.name+"'")
		}
		return l.exit(nil, cli.Usagef("invalid choice: '%s' (choose from %s)", args[1], strings.Join(names, ", ")))
	}
	ctx := context.Background()
	if !v.signals {
		var cancel context.CancelFunc
		ctx, cancel = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer cancel()
	}
	rest := args[2:]
	if v == spawnVerb {
		flagArgs, cmd := cli.SplitCommand(rest, v.flags)
		spawnCmd = cmd
		rest = flagArgs
	}
	return l.exit(v, cli.Run(ctx, v.app(l), append([]string{l.tool + " " + v.name}, rest...)))
}

// exit maps err to the exit status as swarm does: nil 0, a usage error 2 (with a hint), an
// ExitError its code, anything else 1, each said as "<prog>: error: ...".
func (l *app) exit(v *verb, err error) int {
	if err == nil {
		return cli.ExitOK
	}
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(l.stderr, "%s: error: %v\n", l.prog, ee.Err)
		}
		return ee.Code
	}
	var ue *cli.UsageError
	msg := err.Error()
	if errors.As(err, &ue) || strings.Contains(msg, "flag provided but not defined") || strings.Contains(msg, "flag needs an argument") ||
		strings.Contains(msg, "invalid value") || strings.Contains(msg, "Required flag") {
		where := l.tool
		if v != nil {
			where += " " + v.name
		}
		fmt.Fprintf(l.stderr, "%s: error: %v\n%s: hint: run '%s --help' for usage\n", l.prog, err, l.prog, where)
		return cli.ExitUsage
	}
	fmt.Fprintf(l.stderr, "%s: error: %v\n", l.prog, err)
	return cli.ExitFailure
}

func (v *verb) app(l *app) *ucli.App {
	return cli.NewApp(cli.Spec{Name: l.tool + " " + v.name, Usage: v.usage, UsageText: strings.ReplaceAll(v.usageText, "TOOL", l.tool),
		Flags: v.flags, HideVersion: true,
		Action: func(c *ucli.Context) error {
			if !v.noHome {
				if err := l.open(); err != nil {
					return err
				}
			}
			return v.action(c, l)
		}}, l.stdout, l.stderr)
}

func (l *app) usage() {
	fmt.Fprintf(l.stdout, "%s - run an agent again and again on one prompt until it is done\n\nUsage:\n   %s <verb> [options] [args]\n\nVerbs:\n", l.tool, l.tool)
	for _, v := range verbs {
		fmt.Fprintf(l.stdout, "   %-9s %s\n", v.name, v.usage)
	}
	fmt.Fprintf(l.stdout, "\nState: $SWARM_DIR/ralph/<name>/ (state.json, iterations.log), as the Python swarm keeps it.\n"+
		"'%s <verb> --help' shows a verb's options. Exit status: 0 ok, 1 failure, 2 usage error.\n", l.tool)
}

// one returns the single NAME argument of a verb.
func one(c *ucli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", cli.Usagef("the following arguments are required: name")
	}
	return c.Args().First(), nil
}

// namedLoop reads the state of the loop a verb's one argument names (one, loadLoop).
func (l *app) namedLoop(c *ucli.Context) (string, *State, error) {
	name, err := one(c)
	if err != nil {
		return "", nil, err
	}
	st, err := l.loadLoop(name)
	return name, st, err
}

// loopName is the loop a verb's one argument names, checked and chosen (one, loop); its state
// is not read.
func (l *app) loopName(c *ucli.Context) (string, error) {
	name, err := one(c)
	if err == nil {
		err = l.loop(name)
	}
	return name, err
}

// spawnCmd is spawn's command (after "--"), split off before the flags are parsed.
var spawnCmd []string

var spawnVerb = &verb{
	name: "spawn", usage: "start a loop: a worker fed the prompt file each iteration",
	usageText: "TOOL spawn --name N --prompt-file F [--max-iterations 50] [--inactivity-timeout 180] [--done-pattern RE]\n" +
		"      [--check-done-continuous|--no-check-done-continuous] [--max-context PCT] [--foreground] [--no-run]\n" +
		"      [--replace] [--clean-state] [--session S] [--tmux-socket K] [--worktree|--no-worktree] [--branch B]\n" +
		"      [--worktree-dir D] [--tag T]... [--env K=V]... [--cwd P] [--ready-wait] [--ready-timeout 120]\n" +
		"      [--profile P] [--state-dir DIR] [--heartbeat DUR [--heartbeat-expire DUR] [--heartbeat-message M]] -- CMD...",
	signals: true,
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "name", Usage: "the loop's and its worker's name (`N`)"},
		&ucli.StringFlag{Name: "prompt-file", Usage: "the prompt typed at each iteration (`F`)"},
		&ucli.IntFlag{Name: "max-iterations", Value: 50, Usage: "stop after `N` iterations"},
		&ucli.IntFlag{Name: "inactivity-timeout", Value: 180, Usage: "restart an iteration whose screen did not change for `S` seconds"},
		&ucli.IntFlag{Name: "max-context", Usage: "nudge the agent at `PCT`% context used, end the iteration at PCT+15%"},
		&ucli.StringFlag{Name: "done-pattern", Usage: "stop the loop when the agent prints this regular expression (`RE`)"},
		&ucli.BoolFlag{Name: "check-done-continuous", Usage: "look for the done pattern while the agent runs (default with --done-pattern)"},
		&ucli.BoolFlag{Name: "no-check-done-continuous", Usage: "look for it only when the agent exits"},
		&ucli.BoolFlag{Name: "no-run", Usage: "do not start the monitor (start it with 'run')"},
		&ucli.BoolFlag{Name: "foreground", Usage: "run the monitor here, until the loop ends"},
		&ucli.BoolFlag{Name: "replace", Usage: "replace a worker of that name (its worktree is kept if it holds work)"},
		&ucli.BoolFlag{Name: "clean-state", Usage: "start from a fresh loop state"},
		&ucli.StringFlag{Name: "session", Usage: "tmux session (`S`)"},
		&ucli.StringFlag{Name: "tmux-socket", Usage: "tmux socket name (`K`)"},
		&ucli.BoolFlag{Name: "worktree", Usage: "run in a git worktree <repo>-worktrees/<name> (the default)"},
		&ucli.BoolFlag{Name: "no-worktree", Usage: "run in the current directory (or --cwd)"},
		&ucli.StringFlag{Name: "branch", Usage: "the worktree's branch (`B`)"},
		&ucli.StringFlag{Name: "worktree-dir", Usage: "where worktrees go (`D`)"},
		&ucli.StringSliceFlag{Name: "tag", Usage: "a tag (`T`), repeatable"},
		&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable `K=V` for the command, repeatable"},
		&ucli.StringFlag{Name: "cwd", Usage: "the command's directory (`P`) with --no-worktree"},
		&ucli.BoolFlag{Name: "ready-wait", Usage: "wait up to --ready-timeout for the agent to be ready before typing the prompt"},
		&ucli.IntFlag{Name: "ready-timeout", Value: 120, Usage: "seconds (`S`) --ready-wait waits"},
		&ucli.StringFlag{Name: "profile", Usage: "the agent profile (`P`) for readiness and usage limits; default by the command"},
		&ucli.StringFlag{Name: "state-dir", Usage: "where the iterations' run records go (`DIR`; default $STATE_DIR, else $SWARM_DIR/state)"},
		&ucli.BoolFlag{Name: "tmux", Usage: "no effect (loops always run in tmux)"},
		&ucli.StringFlag{Name: "heartbeat", Usage: "type the heartbeat message into each iteration's agent when idle, every `DUR` (swarm heartbeat)"},
		&ucli.StringFlag{Name: "heartbeat-expire", Usage: "stop each iteration's heartbeat after `DUR`"},
		&ucli.StringFlag{Name: "heartbeat-message", Value: "continue", Usage: "the heartbeat's message (`M`)"},
	},
	action: func(c *ucli.Context, l *app) error { return l.spawn(c, spawnCmd) },
}

func (l *app) spawn(c *ucli.Context, cmd []string) error {
	ctx := c.Context
	name, promptFile := c.String("name"), c.String("prompt-file")
	var missing []string
	if name == "" {
		missing = append(missing, "--name")
	}
	if promptFile == "" {
		missing = append(missing, "--prompt-file")
	}
	if len(missing) > 0 {
		return cli.Usagef("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	switch {
	case c.Int("max-iterations") < 0:
		return cli.Usagef("argument --max-iterations: must be 0 or more")
	case c.Int("inactivity-timeout") < 0:
		return cli.Usagef("argument --inactivity-timeout: must be 0 or more")
	case c.IsSet("max-context") && (c.Int("max-context") < 1 || c.Int("max-context") > 100):
		return cli.Usagef("argument --max-context: a percentage from 1 to 100")
	case c.Bool("worktree") && c.Bool("no-worktree"):
		return cli.Usagef("--worktree and --no-worktree contradict each other")
	case c.Bool("check-done-continuous") && c.Bool("no-check-done-continuous"):
		return cli.Usagef("--check-done-continuous and --no-check-done-continuous contradict each other")
	}
	if len(cmd) == 0 {
		return errors.New("no command provided (use -- command...)")
	}
	if err := swarm.CheckName(name, true); err != nil {
		return err
	}
	if err := l.loop(name); err != nil {
		return err
	}
	promptAbs, err := filepath.Abs(promptFile)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(promptAbs); err != nil {
		return fmt.Errorf("prompt file not found: %s", promptFile)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("prompt file %s is not a regular file", promptFile)
	}
	prompt, err := readPrompt(promptAbs)
	if err != nil {
		return err
	}
	var done *string
	if p := c.String("done-pattern"); p != "" {
		if _, err := regexp.Compile(p); err != nil {
			return cli.Usagef("argument --done-pattern: not a regular expression: %v", err)
		}
		done = &p
	}
	continuous := done != nil
	if c.Bool("check-done-continuous") {
		continuous = true
	} else if c.Bool("no-check-done-continuous") {
		continuous = false
	}
	env, err := swarm.ParseEnv(c.StringSlice("env"))
	if err != nil {
		return err
	}
	if c.Int("max-iterations") > 50 {
		l.warnf("high iteration count (>50) may consume significant resources")
	}
	if c.Bool("tmux") {
		fmt.Fprintf(l.stderr, "%s: note: Ralph workers always use tmux (--tmux flag has no effect)\n", l.prog)
	}
	recordDir := c.String("state-dir")
	if recordDir == "" {
		recordDir = os.Getenv("STATE_DIR")
	}
	if recordDir == "" {
		recordDir = filepath.Join(l.dir.Root, "state")
	}
	if recordDir, err = filepath.Abs(recordDir); err != nil {
		return err
	}

	var keep *Worktree // a worktree --replace kept because it holds work
	existing, _ := l.home.Worker(name)
	old, _ := l.st.load()
	if existing != nil || (old != nil && l.st.monitorAlive()) {
		if !c.Bool("replace") {
			return fmt.Errorf("worker '%s' already exists", name)
		}
		if keep, err = l.replace(ctx, existing, old); err != nil {
			return err
		}
	}
	if c.Bool("clean-state") {
		if _, err := os.Lstat(l.dir.RalphDir(name)); err == nil {
			if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
				l.warnf("cannot remove ralph state for '%s': %v", name, err)
			} else {
				fmt.Fprintf(l.stdout, "cleared ralph state for %s\n", name)
			}
		}
	}

	sp := swarm.Spec{Name: name, Cmd: cmd, Env: env, Tags: c.StringSlice("tag"), Profile: c.String("profile"),
		Metadata: iterationMeta(1), Tmux: &swarm.TmuxSpec{Session: c.String("session")}}
	var hbText, hbExpire, hbMessage string
	if hbText = c.String("heartbeat"); hbText != "" {
		hbExpire, hbMessage = c.String("heartbeat-expire"), c.String("heartbeat-message")
	}
	if c.IsSet("tmux-socket") {
		s := c.String("tmux-socket")
		sp.Tmux.Socket = &s
	}
	switch {
	case keep != nil:
		sp.InWorktree = &worker.Worktree{Path: keep.Path, Branch: keep.Branch, BaseRepo: keep.BaseRepo}
	case !c.Bool("no-worktree"):
		sp.Worktree = &swarm.WorktreeSpec{Branch: c.String("branch"), Dir: c.String("worktree-dir")}
	default:
		sp.Dir = c.String("cwd")
		if sp.Dir != "" {
			if sp.Dir, err = filepath.Abs(sp.Dir); err != nil {
				return err
			}
		}
	}
	if _, err := l.home.Profile(sp.Profile, cmd); err != nil {
		return err
	}
	if hbText != "" {
		if sp.Heartbeat, err = swarm.ParseHeartbeat(hbText, hbExpire, hbMessage); err != nil {
			return err
		}
	}
	started := time.Now()
	w, err := l.spawnWorker(ctx, sp, hbText)
	if err != nil {
		return err
	}
	ws := &WorkerSpec{Cmd: cmd, Cwd: w.Cwd, Env: c.StringSlice("env"), Tags: sp.Tags, Session: w.Tmux.Session, Socket: sp.Tmux.Socket,
		Profile: sp.Profile, Heartbeat: hbText, HeartbeatExpire: hbExpire, HeartbeatMessage: hbMessage}
	if w.Worktree != nil {
		ws.Worktree = &Worktree{Path: w.Worktree.Path, Branch: w.Worktree.Branch, BaseRepo: w.Worktree.BaseRepo}
	}
	if ws.Env == nil {
		ws.Env = []string{}
	}
	if ws.Tags == nil {
		ws.Tags = []string{}
	}
	st := &State{WorkerName: name, PromptFile: promptAbs, MaxIterations: c.Int("max-iterations"), CurrentIteration: 1,
		Status: StatusRunning, Started: localISO(started), LastIterationStarted: localISO(started),
		IterationDurations: []int64{}, DonePattern: done, InactivityTimeout: c.Int("inactivity-timeout"),
		CheckDoneContinuous: continuous, RecordDir: recordDir, Worker: ws}
	if c.IsSet("max-context") {
		mc := c.Int("max-context")
		st.MaxContext = &mc
	}
	if err := l.st.create(ctx, st); err != nil {
		l.home.Stop(ctx, w)
		l.home.Remove(ctx, w)
		return fmt.Errorf("spawn failed: %v", err)
	}
	l.st.logEvent("START", "iteration 1/%d", st.MaxIterations)
	it := &iteration{n: 1, w: w, started: started}
	l.beginRecord(ctx, st, it, prompt)
	wait := promptReadyWait
	if c.Bool("ready-wait") {
		wait = time.Duration(c.Int("ready-timeout")) * time.Second
	}
	offset, baseline, err := l.typePrompt(ctx, st, w, prompt, wait)
	var pf *preflightError
	if errors.As(err, &pf) {
		// The Python swarm's pre-flight failure: the worker goes, the loop is failed.
		l.st.logEvent("ERROR", "iteration 1: %v", err)
		fmt.Fprintf(l.stderr, "%s: error: %v\n  fix: resolve the issue and re-run %s spawn\n", l.prog, err, l.tool)
		l.home.Stop(ctx, w)
		l.endRecord(ctx, st, it, result{kind: resExited}, "failed")
		l.home.Remove(ctx, w)
		l.st.update(ctx, func(s *State) error {
			s.Status, s.ExitReason = StatusFailed, strp(ReasonFailed)
			return nil
		})
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	if err != nil {
		l.warnf("typing the prompt into '%s': %v", name, err)
	}
	l.st.update(ctx, func(s *State) error {
		s.PromptOffset, s.PromptBaselineContent = offset, baseline
		return nil
	})
	fmt.Fprintf(l.stdout, "spawned %s (tmux: %s:%s) [ralph mode: iteration 1/%d]\n", name, w.Tmux.Session, w.Tmux.Window, st.MaxIterations)
	switch {
	case c.Bool("no-run"):
		return nil
	case c.Bool("foreground"):
		return l.runMonitor(ctx)
	}
	if _, err := l.startMonitor(ctx); err != nil {
		return err
	}
	fmt.Fprintf(l.stdout, "\nMonitor:\n")
	// The Python swarm's hints, its comments in one column (23 + the name's length wide); as
	// swarm ralph, its exact lines.
	stop := l.tool + " stop " + name
	if l.tool == "swarm ralph" {
		stop = "swarm kill " + name
	}
	hints := [][2]string{{l.tool + " status " + name, "loop progress"}, {"swarm peek " + name, "terminal output"},
		{l.tool + " logs " + name, "iteration history"}, {stop, "stop worker"}}
	width := 23 + len(name)
	for _, h := range hints {
		width = max(width, len(h[0])+1)
	}
	for _, h := range hints {
		fmt.Fprintf(l.stdout, "  %-*s# %s\n", width, h[0], h[1])
	}
	return nil
}

// replace ends an existing loop and worker of the name for spawn --replace: its monitor first
// (so it starts nothing more), then the worker, its worktree unless it holds work (then it is
// kept, and returned: the new loop runs in it; the Python swarm removed it by force), the loop's
// state and the worker's entry.
func (l *app) replace(ctx context.Context, w *worker.Worker, old *State) (*Worktree, error) {
	if old != nil {
		l.st.update(ctx, func(st *State) error {
			if st.Status != StatusRunning && st.Status != StatusPaused {
				return fsx.ErrUnchanged
			}
			st.Status, st.ExitReason = StatusStopped, strp(ReasonKilled)
			return nil
		})
		signalMonitor(old, signalLook)
		if !l.st.waitMonitorGone(ctx, 15*time.Second) {
			return nil, fmt.Errorf("the monitor of '%s' does not stop; nothing was replaced", l.st.name)
		}
	}
	var keep *Worktree
	if w != nil {
		if l.home.Live(ctx, w).Running {
			l.home.Stop(ctx, w)
		}
		if w.Worktree != nil {
			if err := swarm.RemoveWorktree(ctx, w.Worktree, false); err != nil {
				l.warnf("keeping the worktree of '%s' (%s): %v", w.Name, w.Worktree.Path, err)
				keep = &Worktree{Path: w.Worktree.Path, Branch: w.Worktree.Branch, BaseRepo: w.Worktree.BaseRepo}
			}
		}
	}
	if err := os.RemoveAll(l.dir.RalphDir(l.st.name)); err != nil {
		l.warnf("cannot remove ralph state for '%s': %v", l.st.name, err)
	}
	if w != nil {
		if err := l.home.Remove(ctx, w); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(l.stdout, "replaced existing worker %s\n", l.st.name)
	return keep, nil
}

var runVerb = &verb{
	name: "run", usage: "run a loop's monitor here (spawn starts one in the background)", usageText: "TOOL run NAME",
	signals: true,
	action: func(c *ucli.Context, l *app) error {
		if _, _, err := l.namedLoop(c); err != nil {
			return err
		}
		return l.runMonitor(c.Context)
	},
}

// runMonitor runs the monitor in this process; exit status 1 when the loop ended failed.
func (l *app) runMonitor(ctx context.Context) error {
	if err := l.monitor(ctx); err != nil {
		return err
	}
	if st, err := l.st.load(); err == nil && st.Status == StatusFailed {
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return nil
}

var statusVerb = &verb{
	name: "status", usage: "a loop's progress", usageText: "TOOL status NAME [--json]",
	flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "the loop's state and its worker's status as JSON"}},
	action: func(c *ucli.Context, l *app) error {
		name, st, err := l.namedLoop(c)
		if err != nil {
			return err
		}
		st = l.checkMonitor(c.Context, st)
		w, _ := l.home.Worker(name)
		ws := "removed"
		running := false
		if w != nil {
			running = l.home.Live(c.Context, w).Running
			ws = map[bool]string{true: "running", false: "stopped"}[running]
		}
		if c.Bool("json") {
			fmt.Fprintf(l.stdout, "%s\n", statusJSON(st, ws, l.st.monitorAlive()))
			return nil
		}
		l.printStatus(c.Context, st, w, ws)
		return nil
	},
}

// checkMonitor records a loop whose monitor died (SIGKILL, a crash) while the state says it
// runs: stopped, monitor_disconnected, as the Python monitor recorded it on its way out.
func (l *app) checkMonitor(ctx context.Context, st *State) *State {
	if st.Status != StatusRunning || st.MonitorPID == nil || l.st.monitorAlive() {
		return st
	}
	pid := *st.MonitorPID
	nst, err := l.st.update(ctx, func(s *State) error {
		if s.Status != StatusRunning || s.MonitorPID == nil || *s.MonitorPID != pid || l.st.monitorAlive() {
			return fsx.ErrUnchanged
		}
		s.Status, s.ExitReason, s.MonitorPID = StatusStopped, strp(ReasonDisconnected), nil
		l.st.logEvent("DISCONNECT", "monitor disconnected (pid %d gone)", pid)
		return nil
	})
	if err != nil || nst == nil {
		return st
	}
	return nst
}

func (l *app) printStatus(ctx context.Context, st *State, w *worker.Worker, ws string) {
	out := l.stdout
	ago := -1
	if st.LastScreenChange != nil {
		if t, ok := parseISO(*st.LastScreenChange); ok {
			ago = int(time.Since(t).Seconds())
		}
	}
	fmt.Fprintf(out, "Ralph Loop: %s\n", st.WorkerName)
	line := "Status: " + st.Status
	// Only a loop at work can be stuck (the Python swarm said it of stopped loops too).
	stuck := ago > 60 && (st.Status == StatusRunning || st.Status == StatusPaused)
	if stuck {
		line += fmt.Sprintf(" (possibly stuck — no output change for %ds)", ago)
	}
	fmt.Fprintln(out, line)
	line = fmt.Sprintf("Iteration: %d/%d", st.CurrentIteration, st.MaxIterations)
	if n := len(st.IterationDurations); n > 0 {
		var sum int64
		for _, d := range st.IterationDurations {
			sum += d
		}
		avg := float64(sum) / float64(n)
		if rem := st.MaxIterations - st.CurrentIteration; rem > 0 && st.Status == StatusRunning {
			line += fmt.Sprintf(" (avg %s/iter, ~%s remaining)", formatDuration(int64(avg)), formatDuration(int64(avg*float64(rem))))
		} else {
			line += fmt.Sprintf(" (avg %s/iter)", formatDuration(int64(avg)))
		}
	}
	fmt.Fprintln(out, line)
	stamp := func(s string) string {
		if t, ok := parseISO(s); ok {
			return t.Format("2006-01-02 15:04:05")
		}
		return s
	}
	if st.Started != "" {
		fmt.Fprintf(out, "Started: %s\n", stamp(st.Started))
	}
	if st.LastIterationStarted != "" {
		fmt.Fprintf(out, "Current iteration started: %s\n", stamp(st.LastIterationStarted))
	}
	if st.LastIterationEnded != "" && st.Status == StatusStopped {
		fmt.Fprintf(out, "Last iteration ended: %s\n", stamp(st.LastIterationEnded))
	}
	fmt.Fprintf(out, "Consecutive failures: %d\n", st.ConsecutiveFailures)
	fmt.Fprintf(out, "Total failures: %d\n", st.TotalFailures)
	fmt.Fprintf(out, "Inactivity timeout: %ds\n", st.InactivityTimeout)
	switch {
	case ago >= 0:
		fmt.Fprintf(out, "Last screen change: %ds ago\n", ago)
	case st.LastScreenChange != nil:
		fmt.Fprintln(out, "Last screen change: (unknown)")
	default:
		fmt.Fprintln(out, "Last screen change: (none)")
	}
	if st.DonePattern != nil && *st.DonePattern != "" {
		fmt.Fprintf(out, "Done pattern: %s\n", *st.DonePattern)
	}
	if st.LimitedUntil != "" {
		if t, ok := parseISO(st.LimitedUntil); ok && time.Until(t) > 0 {
			fmt.Fprintf(out, "Usage limit: waiting until %s\n", t.Local().Format("2006-01-02 15:04:05"))
		}
	}
	if stuck && w != nil && ws == "running" {
		if text, err := l.home.Screen(ctx, w, 200); err == nil {
			var last []string
			for _, s := range lines(text) {
				if strings.TrimSpace(s) != "" {
					last = append(last, s)
				}
			}
			if len(last) > 5 {
				last = last[len(last)-5:]
			}
			if len(last) > 0 {
				fmt.Fprintln(out, "Last output:")
				for _, s := range last {
					fmt.Fprintf(out, "  %s\n", s)
				}
			}
		}
	}
	switch {
	case st.ExitReason != nil && *st.ExitReason == ReasonDisconnected:
		fmt.Fprintf(out, "Exit reason: monitor_disconnected (worker %s)\n", ws)
		fmt.Fprintf(out, "Worker status: %s\n", ws)
	case st.ExitReason != nil:
		fmt.Fprintf(out, "Exit reason: %s\n", *st.ExitReason)
	case st.Status == StatusRunning:
		fmt.Fprintln(out, "Exit reason: (none - still running)")
	}
}

// statusJSON is status --json: the loop's state as state.json holds it, with the worker's
// status and whether a monitor runs.
func statusJSON(st *State, workerStatus string, monitor bool) []byte {
	x := *st
	x.extra = append(append([]member{}, st.extra...), member{"worker_status", mustJSON(workerStatus)},
		member{"monitor_alive", mustJSON(monitor)})
	return x.encode()
}

var pauseVerb = &verb{
	name: "pause", usage: "pause a loop after its current iteration", usageText: "TOOL pause NAME",
	action: func(c *ucli.Context, l *app) error {
		name, _, err := l.namedLoop(c)
		if err != nil {
			return err
		}
		var was string
		st, err := l.st.update(c.Context, func(st *State) error {
			was = st.Status
			if st.Status != StatusRunning {
				return fsx.ErrUnchanged
			}
			st.Status = StatusPaused
			l.st.logEvent("PAUSE", "loop paused reason=manual")
			return nil
		})
		if err != nil {
			return err
		}
		switch was {
		case StatusPaused:
			l.warnf("worker '%s' is already paused", name)
			return nil
		case StatusRunning:
		default:
			return fmt.Errorf("ralph loop for '%s' has status '%s'", name, was)
		}
		signalMonitor(st, signalLook)
		fmt.Fprintf(l.stdout, "paused ralph loop for %s\n", name)
		return nil
	},
}

var resumeVerb = &verb{
	name: "resume", usage: "resume a paused loop (and restart a monitor that died)", usageText: "TOOL resume NAME",
	action: func(c *ucli.Context, l *app) error {
		name, st, err := l.namedLoop(c)
		if err != nil {
			return err
		}
		l.checkMonitor(c.Context, st)
		changed := false
		st, err = l.st.update(c.Context, func(st *State) error {
			changed = false
			switch {
			case st.Status == StatusPaused:
			case st.Status == StatusStopped && st.ExitReason != nil && *st.ExitReason == ReasonDisconnected:
				st.ExitReason = nil
			case st.Status == StatusRunning && !l.st.monitorAlive():
			default:
				return fsx.ErrUnchanged
			}
			st.Status, changed = StatusRunning, true
			return nil
		})
		if err != nil {
			return err
		}
		if !changed {
			l.warnf("worker '%s' is not paused", name)
			return nil
		}
		if l.st.monitorAlive() {
			signalMonitor(st, signalLook)
		} else if _, err := l.startMonitor(c.Context); err != nil {
			return err
		}
		fmt.Fprintf(l.stdout, "resumed ralph loop for %s\n", name)
		return nil
	},
}

var stopVerb = &verb{
	name: "stop", usage: "stop a loop and its worker (swarm kill)", usageText: "TOOL stop NAME [--rm-worktree [--force-dirty]]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "rm-worktree", Usage: "also remove the worktree (not when it holds work) and the loop's state"},
		&ucli.BoolFlag{Name: "force-dirty", Usage: "remove the worktree even with changes"},
	},
	action: func(c *ucli.Context, l *app) error {
		name, err := l.loopName(c)
		if err != nil {
			return err
		}
		w, _ := l.home.Worker(name)
		st, _ := l.st.load()
		if w == nil && st == nil {
			return fmt.Errorf("worker '%s' not found", name)
		}
		l.stopLoop(c.Context, false)
		if w, _ = l.home.Worker(name); w != nil {
			if err := l.home.Stop(c.Context, w); err != nil {
				l.warnf("%v", err)
			}
			if c.Bool("rm-worktree") && w.Worktree != nil {
				if err := swarm.RemoveWorktree(c.Context, w.Worktree, c.Bool("force-dirty")); err != nil {
					l.warnf("cannot remove worktree for '%s': %v", name, err)
					fmt.Fprintf(l.stderr, "%s: use --force-dirty to remove anyway\n", l.prog)
				}
			}
		}
		if c.Bool("rm-worktree") {
			if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
				l.warnf("cannot remove ralph state for '%s': %v", name, err)
			}
		}
		fmt.Fprintf(l.stdout, "killed %s\n", name)
		return nil
	},
}

// stopLoop ends the loop for a kill: stopped, killed, under the lock (DONE ... reason=killed),
// then its monitor is told and waited for (SIGKILLed if it does not go), so that once this
// returns no iteration starts and no worker is being started.
func (l *app) stopLoop(ctx context.Context, quiet bool) {
	st, err := l.st.update(ctx, func(st *State) error {
		if st.Status != StatusRunning && st.Status != StatusPaused {
			return fsx.ErrUnchanged // it ended already, and says why
		}
		l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", st.CurrentIteration, ReasonKilled)
		st.Status, st.ExitReason = StatusStopped, strp(ReasonKilled)
		return nil
	})
	if err != nil {
		return
	}
	signalMonitor(st, signalLook)
	if !l.st.waitMonitorGone(ctx, 20*time.Second) && !quiet {
		l.warnf("the monitor of '%s' did not stop", l.st.name)
	}
}

// Kill is what swarm kill does first for each worker it kills (for each worker with --all):
// when name is a ralph loop of the swarm sw, it ends the loop (stopped, killed) and waits
// until its monitor is gone, so that no new iteration starts and no worker is being started
// once kill has looked the worker up (the Python swarm's kill left the monitor running, and it
// started the next iteration). With rmWorktree the loop's state goes too, as the Python swarm
// did. It reports whether name was a loop. Warnings go to stderr.
func Kill(ctx context.Context, sw *swarm.Swarm, name string, rmWorktree bool, stderr io.Writer) bool {
	l := &app{tool: "swarm ralph", prog: "swarm", verbPrefix: []string{"ralph"}, stdout: io.Discard, stderr: stderr,
		home: sw, dir: sw.Dir()}
	if l.loop(name) != nil {
		return false
	}
	if st, err := l.st.load(); err != nil || st == nil {
		return false
	}
	l.stopLoop(ctx, false)
	if rmWorktree {
		os.RemoveAll(l.dir.RalphDir(name))
	}
	return true
}

var listVerb = &verb{
	name: "list", usage: "list loops (also: ls)", usageText: "TOOL list [--format table|json|names] [--status all|running|paused|stopped|failed] [--json]",
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "format", Value: "table", Usage: "table, json or names"},
		&ucli.StringFlag{Name: "status", Value: "all", Usage: "all, running, paused, stopped or failed"},
		&ucli.BoolFlag{Name: "json", Usage: "the same as --format json"},
	},
	action: func(c *ucli.Context, l *app) error {
		format := c.String("format")
		if c.Bool("json") {
			format = "json"
		}
		if err := choice("format", format, "table", "json", "names"); err != nil {
			return err
		}
		if err := choice("status", c.String("status"), "all", "running", "paused", "stopped", "failed"); err != nil {
			return err
		}
		loops, err := listLoops(c.Context, l)
		if err != nil {
			return err
		}
		var shown []listed
		for _, lp := range loops {
			if s := c.String("status"); s == "all" || lp.st.Status == s {
				shown = append(shown, lp)
			}
		}
		switch format {
		case "json":
			var b strings.Builder
			b.WriteString("[")
			for i, lp := range shown {
				if i > 0 {
					b.WriteString(",")
				}
				x := *lp.st
				x.extra = append(append([]member{}, lp.st.extra...), member{"worker_status", mustJSON(lp.workerStatus)})
				b.Write(x.encodeCompact())
			}
			b.WriteString("]")
			fmt.Fprintf(l.stdout, "%s\n", pyIndent([]byte(b.String())))
		case "names":
			for _, lp := range shown {
				fmt.Fprintln(l.stdout, lp.st.WorkerName)
			}
		default:
			if len(shown) == 0 {
				return nil
			}
			rows := [][]string{{"NAME", "RALPH_STATUS", "WORKER_STATUS", "ITERATION", "FAILURES"}}
			for _, lp := range shown {
				rows = append(rows, []string{lp.st.WorkerName, lp.st.Status, lp.workerStatus,
					fmt.Sprintf("%d/%d", lp.st.CurrentIteration, lp.st.MaxIterations),
					fmt.Sprintf("%d/%d", lp.st.ConsecutiveFailures, lp.st.TotalFailures)})
			}
			cli.Table(l.stdout, rows)
		}
		return nil
	},
}

func choice(name, value string, choices ...string) error {
	for _, c := range choices {
		if value == c {
			return nil
		}
	}
	return cli.Usagef("argument --%s: invalid choice: '%s' (choose from '%s')", name, value, strings.Join(choices, "', '"))
}

var logsVerb = &verb{
	name: "logs", usage: "a loop's iteration log", usageText: "TOOL logs NAME [--live] [--lines N]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "live", Usage: "keep printing new lines (Ctrl-C ends)"},
		&ucli.IntFlag{Name: "lines", Value: -1, Usage: "only the last `N` lines"},
	},
	action: func(c *ucli.Context, l *app) error {
		name, err := l.loopName(c)
		if err != nil {
			return err
		}
		if _, err := l.st.load(); err != nil {
			return fmt.Errorf("no ralph state found for worker '%s'", name)
		}
		path := l.dir.RalphIterations(name)
		b, err := statedir.ReadFile(path, 64<<20)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no iteration log found for worker '%s'", name)
		}
		if err != nil {
			return err
		}
		text := string(b)
		if n := c.Int("lines"); n >= 0 && !c.Bool("live") {
			ls := strings.SplitAfter(text, "\n")
			if ls[len(ls)-1] == "" {
				ls = ls[:len(ls)-1]
			}
			if n < len(ls) {
				ls = ls[len(ls)-n:]
			}
			text = strings.Join(ls, "")
		}
		fmt.Fprint(l.stdout, text)
		if !c.Bool("live") {
			return nil
		}
		pos := int64(len(b))
		for {
			select {
			case <-c.Context.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
			f, err := statedir.Open(path)
			if err != nil {
				continue
			}
			f.Seek(pos, io.SeekStart)
			r := bufio.NewReader(f)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				pos += int64(len(line))
				fmt.Fprint(l.stdout, line)
			}
			f.Close()
		}
	},
}

var cleanVerb = &verb{
	name: "clean", usage: "remove loops' state (not their workers)", usageText: "TOOL clean [NAME] [--all]",
	flags: []ucli.Flag{&ucli.BoolFlag{Name: "all", Usage: "every loop"}},
	action: func(c *ucli.Context, l *app) error {
		var names []string
		if c.Bool("all") {
			entries, _ := os.ReadDir(l.dir.Ralph())
			for _, e := range entries {
				if e.IsDir() && statedirName(e.Name()) {
					names = append(names, e.Name())
				}
			}
		} else {
			if c.NArg() == 0 {
				return errors.New("must specify worker name or use --all")
			}
			names = []string{c.Args().First()}
			if err := l.loop(names[0]); err != nil {
				return err
			}
			if _, err := os.Lstat(l.dir.RalphDir(names[0])); err != nil {
				return fmt.Errorf("no ralph state found for worker '%s'", names[0])
			}
		}
		for _, name := range names {
			if err := l.loop(name); err != nil {
				continue
			}
			if w, _ := l.home.Worker(name); w != nil && l.home.Live(c.Context, w).Running {
				l.warnf("worker '%s' is still running (only ralph state removed)", name)
			}
			// A monitor still at work is told to go: it finds no state and ends.
			st, _ := l.st.load()
			if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
				return err
			}
			signalMonitor(st, signalLook)
			fmt.Fprintf(l.stdout, "cleaned ralph state for %s\n", name)
		}
		return nil
	},
}

// promptTemplate is the Python swarm's RALPH_PROMPT_TEMPLATE.
const promptTemplate = `study specs/README.md
study CLAUDE.md and pick the most important incomplete task

IMPORTANT:

- do not assume anything is implemented - verify by reading code
- update IMPLEMENTATION_PLAN.md when the task is done
- if tests are missing, add them (choose unit/integration/property as appropriate, follow existing patterns)
- run tests after changes
- commit and push when you are done`

var initVerb = &verb{
	name: "init", usage: "write PROMPT.md, a starter prompt", usageText: "TOOL init [--force]", noHome: true,
	flags: []ucli.Flag{&ucli.BoolFlag{Name: "force", Usage: "overwrite an existing PROMPT.md"}},
	action: func(c *ucli.Context, l *app) error {
		_, err := os.Lstat("PROMPT.md")
		exists := err == nil
		if exists && !c.Bool("force") {
			return errors.New("PROMPT.md already exists (use --force to overwrite)")
		}
		if err := fsx.WriteFileAtomic("PROMPT.md", []byte(promptTemplate+"\n"), 0o644); err != nil {
			return err
		}
		if exists {
			fmt.Fprintln(l.stdout, "created PROMPT.md (overwritten)")
		} else {
			fmt.Fprintln(l.stdout, "created PROMPT.md")
		}
		return nil
	},
}

var templateVerb = &verb{
	name: "template", usage: "print the starter prompt", usageText: "TOOL template", noHome: true,
	action: func(c *ucli.Context, l *app) error {
		fmt.Fprintln(l.stdout, promptTemplate)
		return nil
	},
}
