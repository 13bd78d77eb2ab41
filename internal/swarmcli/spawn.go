package swarmcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

var spawnVerb = &verb{
	name: "spawn", usage: "spawn a new worker",
	usageText: "swarm spawn --name N [--tmux] [--session S] [--tmux-socket K] [--worktree [--branch B] [--worktree-dir D]]\n" +
		"            [--tag T]... [--env K=V]... [--cwd P] -- CMD...",
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "name", Usage: "the worker's name (`N`): its tmux window, worktree directory and default branch"},
		&ucli.BoolFlag{Name: "tmux", Usage: "run in a tmux window (default: a background process)"},
		&ucli.StringFlag{Name: "session", Usage: "tmux session (`S`); default swarm-<hash of $SWARM_DIR>"},
		&ucli.StringFlag{Name: "tmux-socket", Usage: "tmux socket name (`K`, tmux -L); default tmux's default server"},
		&ucli.BoolFlag{Name: "worktree", Usage: "run in a new git worktree <repo>-worktrees/<name> of the current repository"},
		&ucli.StringFlag{Name: "branch", Usage: "the worktree's branch (`B`); default the name"},
		&ucli.StringFlag{Name: "worktree-dir", Usage: "where worktrees go (`D`; relative to the repository's parent)"},
		&ucli.StringSliceFlag{Name: "tag", Usage: "a tag (`T`), repeatable"},
		&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable `K=V` for the command, repeatable"},
		&ucli.StringFlag{Name: "cwd", Usage: "the command's working directory (`P`); ignored with --worktree"},
		&ucli.BoolFlag{Name: "ready-wait", Usage: "wait until the agent's screen shows its profile's ready pattern"},
		&ucli.IntFlag{Name: "ready-timeout", Value: 120, Usage: "give up waiting after `S` seconds (a warning; spawn still succeeds)"},
		&ucli.StringFlag{Name: "profile", Usage: "the agent profile (`P`) that tells ready, busy and waiting from the screen; default by the command"},
		&ucli.StringFlag{Name: "heartbeat", Usage: "start a heartbeat: type the message into the idle agent every `DUR` (swarm heartbeat)"},
		&ucli.StringFlag{Name: "heartbeat-expire", Usage: "stop the heartbeat after `DUR` (default: never)"},
		&ucli.StringFlag{Name: "heartbeat-message", Value: "continue", Usage: "the heartbeat's message (`M`)"},
	},
}

// runSpawn splits spawn's command line as the Python swarm's argparse did (cmd is REMAINDER:
// everything from "--" or from the first word that is no option belongs to the command) and
// runs spawn.
func runSpawn(ctx context.Context, e *env, args []string) error {
	flagArgs, cmd := cli.SplitCommand(args, spawnVerb.flags)
	spawnVerb.action = func(c *ucli.Context, e *env) error { return spawn(c, e, cmd) }
	return cli.Run(ctx, spawnVerb.app(e), append([]string{tool + " spawn"}, flagArgs...))
}

// spec is what a worker's supervisor is handed over the handoff socket.
type spec struct {
	Worker   string            `json:"worker"`
	Started  string            `json:"started"` // the worker's incarnation (see recorder)
	SwarmDir string            `json:"swarm_dir"`
	Backend  string            `json:"backend"`
	Socket   string            `json:"socket,omitempty"` // the tmux server's socket path
	Session  string            `json:"session,omitempty"`
	Attempt  supervise.Attempt `json:"attempt"`
	Screen   agent.Patterns    `json:"screen"` // the profile's, for the activity Watch
}

func spawn(c *ucli.Context, e *env, cmd []string) error {
	ctx := c.Context
	name := c.String("name")
	switch {
	case name == "":
		return cli.Usagef("the following arguments are required: --name")
	case len(cmd) == 0:
		return errors.New("no command provided (use -- command...)")
	}
	// The heartbeat's durations are read before anything is made (the Python swarm created the
	// worker, reported it, and then failed on them).
	var hbSecs, hbExpire int64
	if c.String("heartbeat") != "" {
		var bad, badText string
		if hbSecs, hbExpire, bad, badText = hbDurations(c.String("heartbeat"), c.String("heartbeat-expire")); bad != "" {
			if bad == "interval" {
				return fmt.Errorf("invalid heartbeat interval '%s' (nothing was started)", badText)
			}
			return fmt.Errorf("invalid heartbeat-expire '%s' (nothing was started)", badText)
		}
	}
	useTmux := c.Bool("tmux")
	if err := checkWorkerName(name, useTmux); err != nil {
		return err
	}
	var env worker.Env
	for _, kv := range c.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("invalid env format '%s' (expected KEY=VAL)", kv)
		}
		env = append(env, worker.EnvVar{Key: k, Value: v})
	}
	h, err := openHome(e)
	if err != nil {
		return err
	}
	prof, err := workerProfile(h, c.String("profile"), cmd)
	if err != nil {
		return err
	}
	if s, err := h.reg.Load(); err == nil && recoverSpawns(ctx, e, h, s).Get(name) != nil {
		return fmt.Errorf("worker '%s' already exists", name)
	}
	// The name's lock is held from here until the supervisor is registered, so that ls never
	// takes a worker being launched for a lost one.
	if err := statedir.MkdirFor(h.layout.LockPath(name)); err != nil {
		return err
	}
	unlock, err := h.layout.Lock(ctx, name, 30*time.Second)
	if err != nil {
		return fmt.Errorf("locking worker '%s': %w", name, err)
	}
	defer unlock()

	// What a failed spawn made is undone in reverse; what a killed one made, by the next
	// command, from the journal in the worker's metadata (spawnsafe.go).
	var undo []func()
	rollback := func(err error) error {
		e.warnf("spawn failed, cleaning up partial state")
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return err
	}
	journal := &spawnJournal{PID: os.Getpid()}

	dir, _ := os.Getwd()
	if d := c.String("cwd"); d != "" {
		if dir, err = absPath(d); err != nil {
			return err
		}
	}
	var wt *worker.Worktree
	var plan *worktreePlan
	if c.Bool("worktree") {
		branch := c.String("branch")
		if branch == "" {
			branch = name
		}
		if plan, err = planWorktree(ctx, name, branch, c.String("worktree-dir")); err != nil {
			return rollback(fmt.Errorf("failed to create worktree: %w", err))
		}
		wt, dir = plan.worktree(), plan.path
		journal.Worktree, journal.Root, journal.Branch, journal.NewBranch, journal.From =
			plan.path, plan.root, plan.branch, plan.newBranch, plan.from
	}

	now := time.Now()
	w := &worker.Worker{Name: name, Status: worker.StatusRunning, Cmd: cmd, Started: worker.Timestamp(now), Cwd: dir,
		Env: env, Tags: c.StringSlice("tag"), Worktree: wt,
		Metadata: worker.Object{}.SetValue(worker.MetaSupervised, true).SetValue(metaSpawning, journal)}
	sp := &spec{Worker: name, Started: w.Started, SwarmDir: h.dir.Root, Backend: supervise.BackendProcess}
	w.Metadata, sp.Screen = w.Metadata.SetValue(worker.MetaProfile, prof.Name), prof.Screen
	var tc *tmux.Client
	if useTmux {
		session := c.String("session")
		if session == "" {
			session = h.defaultSession()
		}
		var sock *string
		if c.IsSet("tmux-socket") {
			s := c.String("tmux-socket")
			if s == "" || strings.Contains(s, "/") {
				return rollback(fmt.Errorf("invalid tmux socket name '%s'", s))
			}
			sock = &s
		}
		w.Tmux = &worker.Tmux{Session: session, Window: name, Socket: sock}
		if tc, err = tmuxOf(w); err != nil {
			return rollback(err)
		}
		sp.Backend, sp.Socket, sp.Session = supervise.BackendTmux, tc.Socket, session
	}
	sp.Attempt = supervise.Attempt{Name: name, Number: 1, Dir: dir, Argv: cmd, Env: mergeEnv(os.Environ(), env),
		Terminal: true, KillGrace: 5 * time.Second, LogPath: h.layout.LogPath(name)}
	if !useTmux {
		// A process worker's output goes where the Python swarm put it; its stderr shares the
		// terminal, so stderr.log is created (truncated) and stays empty.
		sp.Attempt.LogPath = h.dir.StdoutLog(name)
		if err := os.WriteFile(h.dir.StderrLog(name), nil, 0o600); err != nil {
			return rollback(fmt.Errorf("failed to spawn process: %w", err))
		}
	}

	// The worker goes into state first, with its journal: from here a killed spawn is undone
	// (or finished) by the next command.
	err = h.reg.Update(ctx, func(s *worker.State) error {
		if s.Get(name) != nil {
			return fmt.Errorf("worker '%s' already exists", name)
		}
		s.Add(w)
		return nil
	})
	if err != nil {
		return rollback(err)
	}
	undo = append(undo, func() {
		entry, _ := h.layout.ReadEntry(name)
		undoSpawn(ctx, h, w, journal, entry)
	})
	crashPoint("state")
	if plan != nil {
		if _, err := plan.create(ctx); err != nil {
			return rollback(fmt.Errorf("failed to create worktree: %w", err))
		}
		crashPoint("worktree")
	}
	h.layout.WriteEntry(&supervise.Entry{Tool: supervisorTool, Name: name, Attempt: 1, Backend: sp.Backend,
		Socket: sp.Socket, Session: sp.Session, StartedAt: now.UTC().Format(time.RFC3339)})

	crashPoint("entry")
	pid, err := launch(ctx, h, sp, tc)
	if err != nil {
		what := "failed to spawn process"
		if useTmux {
			what = "failed to create tmux window"
		}
		return rollback(fmt.Errorf("%s: %w", what, err))
	}
	crashPoint("launched")
	if e, _ := h.layout.ReadEntry(name); e != nil && e.PID == 0 {
		e.PID = pid
		h.layout.WriteEntry(e)
	}
	err = h.reg.Update(ctx, func(s *worker.State) error {
		x := s.Get(name)
		if x == nil || x.Started != w.Started {
			return worker.ErrUnchanged
		}
		x.Metadata = x.Metadata.SetValue(worker.MetaSupervisorPID, pid).Delete(metaSpawning)
		if !useTmux {
			p := int64(pid)
			x.PID = &p
		}
		return nil
	})
	if err != nil {
		e.warnf("recording the supervisor's pid: %v", err)
	}
	// spawn returns once the agent runs, so that `swarm spawn … && swarm send …` finds it
	// there. The supervisor registers its control socket under the name's lock: let go first.
	unlock()
	if h.waitStarted(ctx, name) {
		e.warnf("%s: the agent has not started after %s (its supervisor is still at work)", name, startWait)
	}
	if c.Bool("ready-wait") {
		readyWait(ctx, e, h, name, prof.Screen, time.Duration(c.Int("ready-timeout"))*time.Second)
	}
	if useTmux {
		fmt.Fprintf(e.stdout, "spawned %s (tmux: %s:%s)\n", name, w.Tmux.Session, name)
	} else {
		fmt.Fprintf(e.stdout, "spawned %s (pid: %d)\n", name, pid)
	}
	if hbSecs > 0 {
		if hbSecs < shortInterval {
			e.warnf("very short heartbeat interval (%s), consider using at least 1m", c.String("heartbeat"))
		}
		hb := newHeartbeat(name, hbSecs, hbExpire, c.String("heartbeat-message"), time.Now())
		mon := int64(pid)
		hb.MonitorPID = &mon
		if err := h.updateHeartbeat(ctx, name, func(*worker.Heartbeat) (*worker.Heartbeat, error) { return hb, nil }); err != nil {
			return fmt.Errorf("starting the heartbeat: %w (the worker runs: swarm heartbeat start %s)", err, name)
		}
		fmt.Fprintf(e.stdout, "heartbeat started (%s)\n", heartbeatTerms(hbSecs, hbExpire))
	}
	return nil
}

// checkWorkerName applies the toolkit's name rule (the Python swarm had none) and, for tmux
// workers, tmux's: a window name of digits is read as a window index even in an exact target.
func checkWorkerName(name string, inTmux bool) error {
	if err := statedir.CheckName(statedir.KindWorker, name); err != nil {
		return fmt.Errorf("invalid worker name: %v", err)
	}
	if inTmux && strings.Trim(name, "0123456789") == "" {
		return fmt.Errorf("invalid worker name: %q is all digits, which tmux reads as a window index", name)
	}
	return nil
}

// mergeEnv is the caller's environment with the --env pairs set over it.
func mergeEnv(base []string, env worker.Env) []string {
	out := make([]string, 0, len(base)+len(env))
	set := map[string]bool{}
	for _, kv := range env {
		set[kv.Key] = true
	}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			out = append(out, kv)
		}
	}
	for _, kv := range env {
		out = append(out, kv.Key+"="+kv.Value)
	}
	return out
}

// handoffWait is how long a starting supervisor has to take its spec.
const handoffWait = 15 * time.Second

// launch starts the worker's supervisor (this binary's hidden verb) in a new tmux window or
// detached, hands it the spec and returns its pid.
func launch(ctx context.Context, h *home, sp *spec, tc *tmux.Client) (int, error) {
	b, err := json.Marshal(sp)
	if err != nil {
		return 0, err
	}
	ho, err := supervise.OfferHandoff(h.layout.HandoffDir(), b)
	if err != nil {
		return 0, err
	}
	defer ho.Close()
	exe, err := self()
	if err != nil {
		return 0, err
	}
	argv := []string{exe, supervise.SuperviseVerb, "--swarm-dir", h.dir.Root, "--handoff", ho.Path(), sp.Worker}
	var stop func()
	if tc != nil {
		if _, err := tc.NewWindow(ctx, sp.Session, sp.Worker, sp.Attempt.Dir, nil, argv...); err != nil {
			return 0, err
		}
		stop = func() { tc.KillWindow(context.Background(), tmux.WindowTarget(sp.Session, sp.Worker)) }
	} else {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = sp.Attempt.Dir
		// Its own session, no stdio of ours: the worker outlives the shell that spawned it, and
		// (unlike the Python swarm's) does not read the caller's stdin.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		go cmd.Wait()
		stop = func() { cmd.Process.Kill() }
	}
	hctx, cancel := context.WithTimeout(ctx, handoffWait)
	defer cancel()
	pid, err := ho.Give(hctx)
	if err != nil {
		stop()
		return 0, err
	}
	return pid, nil
}

// superviseVerb runs a worker's supervisor: started by spawn, never by hand.
var superviseVerb = &verb{
	name: supervise.SuperviseVerb, usage: "run a worker's supervisor (started by swarm spawn)", hidden: true,
	flags: []ucli.Flag{
		&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"},
		&ucli.StringFlag{Name: "swarm-dir", Usage: "the swarm directory (`DIR`)"},
	},
	action: func(c *ucli.Context, e *env) error {
		if c.NArg() != 1 || c.String("handoff") == "" || c.String("swarm-dir") == "" {
			return cli.Usagef("%s is started by swarm spawn, not by hand", supervise.SuperviseVerb)
		}
		return superviseWorker(c.String("swarm-dir"), c.String("handoff"), c.Args().First(), e)
	},
}

func superviseWorker(swarmDir, handoff, name string, e *env) error {
	sigs := supervise.CatchSignals() // before the starter lets go: a stop from then on counts
	b, err := supervise.TakeHandoff(handoff)
	if err != nil {
		return err
	}
	var sp spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return fmt.Errorf("the supervisor's spec: %w", err)
	}
	if sp.Worker != name || sp.Attempt.Name != name {
		return fmt.Errorf("the supervisor's spec is for %q, not %q", sp.Worker, name)
	}
	h, err := openHomeAt(e, swarmDir)
	if err != nil {
		return err
	}
	// The heartbeat is beaten from the Watch; the Python swarm's SIGTERM to its monitor_pid
	// (this process) is no stop of the worker.
	beats := newBeater(h, name, sp.Started)
	sp.Attempt.Watch, sp.Attempt.WatchEvery = activityWatch(sp.Screen, beats)
	filtered := make(chan os.Signal, cap(sigs))
	go beats.filterSignals(sigs, filtered)
	console := supervise.ConsoleOf(os.Stdout)
	var input *os.File
	if term.IsTerminal(int(os.Stdin.Fd())) {
		input = os.Stdin
	}
	s := &supervise.Supervisor{Layout: h.layout, Tool: supervisorTool, Name: name, Backend: sp.Backend, Socket: sp.Socket,
		Session: sp.Session, Console: console, Input: input, Once: true, Signals: filtered}
	if err := s.Open(context.Background()); err != nil {
		return err
	}
	defer s.Close()
	if err := stillWanted(h, name, sp.Started); err != nil {
		return err
	}
	s.Run(context.Background(), &sp.Attempt, &recorder{h: h, started: sp.Started})
	return nil
}
