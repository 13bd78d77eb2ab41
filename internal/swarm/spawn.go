package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// Spec is a worker to start: everything swarm spawn's flags say, typed.
type Spec struct {
	// Name is the worker's name (CheckName): its tmux window, log files, worktree directory
	// and default branch.
	Name string
	// Cmd is the agent's command line, run as given (no shell).
	Cmd []string
	// Dir is the agent's working directory, made absolute; "" for the current directory, or
	// the worktree's path with Worktree or InWorktree.
	Dir string
	// Env is set over Options.Environ, in order.
	Env worker.Env
	// Tags are the worker's tags, in order.
	Tags []string
	// Tmux runs the worker in a tmux window; nil runs it as a background process (a
	// supervisor in a session of its own, the agent on a terminal of its own).
	Tmux *TmuxSpec
	// Worktree makes a new git worktree for the worker (spawn --worktree).
	Worktree *WorktreeSpec
	// InWorktree is an existing worktree the worker runs in (a loop's later iteration, a
	// respawn): its entry names it, so that kill --rm-worktree and clean find it.
	InWorktree *worker.Worktree
	// Profile is the agent profile that watches the worker's screen; "" chooses it by the
	// command (Profile).
	Profile string
	// ReadyWait: Spawn returns once the agent's screen shows its profile's ready pattern, or
	// after ReadyTimeout with a warning (WaitReady).
	ReadyWait    bool
	ReadyTimeout time.Duration
	// Heartbeat starts a heartbeat for the worker once it runs (ParseHeartbeat).
	Heartbeat *HeartbeatSpec
	// Metadata are keys of the caller's in the worker's metadata (a loop's "ralph" and
	// "ralph_iteration"); the swarm's own keys win.
	Metadata worker.Object
	// OnEvent is a command line (hook.Split's words) the supervisor runs when the agent starts
	// waiting for input and when it exits (events.go); nil for none.
	OnEvent []string
}

// TmuxSpec is where a tmux worker's window goes.
type TmuxSpec struct {
	// Session is the tmux session; "" for DefaultSession.
	Session string
	// Socket is the tmux server's socket name (tmux -L); nil for tmux's default server.
	Socket *string
}

// WorktreeSpec is a git worktree Spawn makes for the worker, as the Python swarm made it: at
// <repository>-worktrees/<name> (or Dir/<name>) on a new branch from HEAD, or on the branch if
// it exists.
type WorktreeSpec struct {
	// Repo is a directory of the repository; "" for the current directory.
	Repo string
	// Branch is the worktree's branch; "" for the worker's name.
	Branch string
	// Dir is where worktrees go (relative to the repository's parent); "" for
	// <repository>-worktrees.
	Dir string
}

// HeartbeatSpec is a heartbeat: Message typed into the idle agent every Interval, until Expire
// has passed (0: never). Durations are whole seconds, as in the heartbeat's file.
type HeartbeatSpec struct {
	Interval, Expire time.Duration
	Message          string
}

// ShortHeartbeat is under what the Python swarm warned that a heartbeat's interval is very
// short.
const ShortHeartbeat = time.Minute

// ParseHeartbeat reads a heartbeat's interval and expiry ("" for none) as the Python swarm
// read durations (worker.ParseDuration: 4h, 30m, 90s, 1h30m, bare seconds). The error says
// which one is no duration, in spawn's words.
func ParseHeartbeat(interval, expire, message string) (*HeartbeatSpec, error) {
	note := func(err error) string {
		if errors.Is(err, worker.ErrDurationRange) {
			return err.Error() + "; "
		}
		return ""
	}
	d, err := worker.Duration(interval)
	if err != nil {
		return nil, fmt.Errorf("invalid heartbeat interval '%s' (%snothing was started)", interval, note(err))
	}
	hb := &HeartbeatSpec{Interval: d, Message: message}
	if expire != "" {
		if hb.Expire, err = worker.Duration(expire); err != nil {
			return nil, fmt.Errorf("invalid heartbeat-expire '%s' (%snothing was started)", expire, note(err))
		}
	}
	return hb, nil
}

// ParseEnv reads K=V pairs (spawn's --env) into an environment; an empty key or a pair with no
// "=" is an error in the Python swarm's words.
func ParseEnv(pairs []string) (worker.Env, error) {
	var env worker.Env
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid env format '%s' (expected KEY=VAL)", kv)
		}
		env = append(env, worker.EnvVar{Key: k, Value: v})
	}
	return env, nil
}

// CheckName applies the worker name rule (statedir.CheckName; the Python swarm had none) and,
// for tmux workers, tmux's: a window name of digits is read as a window index even in an exact
// target.
func CheckName(name string, inTmux bool) error {
	if err := statedir.CheckName(statedir.KindWorker, name); err != nil {
		return fmt.Errorf("invalid worker name: %v", err)
	}
	if inTmux && strings.Trim(name, "0123456789") == "" {
		return fmt.Errorf("invalid worker name: %q is all digits, which tmux reads as a window index", name)
	}
	return nil
}

// UndoneError is a spawn that failed once it had begun to make the worker: what it had made
// was undone (the Python swarm said "spawn failed, cleaning up partial state").
type UndoneError struct{ Err error }

func (e *UndoneError) Error() string { return e.Err.Error() }
func (e *UndoneError) Unwrap() error { return e.Err }

// handoffSpec is what a worker's supervisor is handed over the handoff socket.
type handoffSpec struct {
	Worker   string            `json:"worker"`
	Started  string            `json:"started"` // the worker's incarnation (see Recorder)
	SwarmDir string            `json:"swarm_dir"`
	Backend  string            `json:"backend"`
	Socket   string            `json:"socket,omitempty"` // the tmux server's socket path
	Session  string            `json:"session,omitempty"`
	Attempt  supervise.Attempt `json:"attempt"`
	Screen   agent.Patterns    `json:"screen"` // the profile's, for the activity Watch
	// OnEvent is the worker's hook; HookRunner the supervisor's command that runs one event.
	OnEvent    []string `json:"on_event,omitempty"`
	HookRunner []string `json:"hook_runner,omitempty"`
}

// Spawn starts a worker: it writes the worker into state.json with a journal of what it is
// about to make (spawnsafe.go), makes its worktree, launches its supervisor (Options.Supervisor)
// in a tmux window or detached, hands it the agent's spec, and returns the worker's entry once
// the agent runs (so that a Send right after finds it), ready with sp.ReadyWait. A failure once
// something was made is an *UndoneError, everything made undone. When the worker runs but its
// heartbeat could not be started, Spawn returns the worker and an error.
func (s *Swarm) Spawn(ctx context.Context, sp Spec) (*worker.Worker, error) {
	name := sp.Name
	if err := checkSpec(sp); err != nil {
		return nil, err
	}
	prof, err := s.Profile(sp.Profile, sp.Cmd)
	if err != nil {
		return nil, err
	}
	if len(sp.OnEvent) > 0 && len(s.opts.Supervisor) == 0 {
		return nil, errors.New("--on-event: no supervisor command to run the hook with (swarm.Options.Supervisor)")
	}
	if st, err := s.reg.Load(); err == nil && s.recoverSpawns(ctx, st).Get(name) != nil {
		return nil, fmt.Errorf("worker '%s' already exists", name)
	}
	// The worktree is planned before anything is made: outside a git repository the spawn is
	// refused with the Python swarm's one line, nothing to undo.
	var plan *worktreePlan
	if sp.Worktree != nil {
		branch := sp.Worktree.Branch
		if branch == "" {
			branch = name
		}
		if plan, err = planWorktree(ctx, sp.Worktree.Repo, name, branch, sp.Worktree.Dir); errors.Is(err, errNoRepo) {
			return nil, err
		} else if err != nil {
			return nil, fmt.Errorf("failed to create worktree: %w", err)
		}
	}
	if err := s.checkCommand(sp, plan); err != nil {
		return nil, err
	}
	// The name's lock is held from here until the supervisor is registered, so that ls never
	// takes a worker being launched for a lost one.
	unlock, err := s.lockName(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var undo undoList // what this spawn made (what a killed one made is in the journal)
	journal := &spawnJournal{PID: os.Getpid()}
	dir, wt, err := spawnDir(sp, plan, journal)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	w := &worker.Worker{Name: name, Status: worker.StatusRunning, Cmd: sp.Cmd, Started: worker.Timestamp(now), Cwd: dir,
		Env: sp.Env, Tags: sp.Tags, Worktree: wt,
		Metadata: worker.Object{}.SetValue(worker.MetaSupervised, true).SetValue(metaSpawning, journal)}
	hs := &handoffSpec{Worker: name, Started: w.Started, SwarmDir: s.dir.Root, Backend: supervise.BackendProcess}
	w.Metadata, hs.Screen = w.Metadata.SetValue(worker.MetaProfile, prof.Name), prof.Screen
	if len(sp.OnEvent) > 0 {
		w.Metadata = w.Metadata.SetValue(metaOnEvent, sp.OnEvent)
		hs.OnEvent, hs.HookRunner = sp.OnEvent, s.opts.Supervisor
	}
	for _, m := range sp.Metadata {
		if !w.Metadata.Has(m.Key) {
			w.Metadata = w.Metadata.Set(m.Key, m.Value)
		}
	}
	tc, err := s.supervisorFor(sp, w, hs)
	if err != nil {
		return nil, undo.rollback(err)
	}
	// The worker goes into state first, with its journal: from here a killed spawn is undone
	// (or finished) by the next command.
	if err := s.addWorker(ctx, w, journal, &undo); err != nil {
		return nil, undo.rollback(err)
	}
	pid, err := s.startSupervisor(ctx, plan, hs, tc, now)
	if err != nil {
		return nil, undo.rollback(err)
	}
	s.recordPID(ctx, w, pid)
	// Spawn returns once the agent runs, so that `swarm spawn … && swarm send …` finds it
	// there. The supervisor registers its control socket under the name's lock: let go first.
	unlock()
	return w, s.awaitStart(ctx, sp, prof, pid)
}

// checkCommand refuses, before anything is made, an agent's command that cannot be started:
// the supervisor would only record exit 127 after spawn had said "spawned" (as the Python
// swarm did). It is looked for as the supervisor will: in the agent's environment's PATH, then
// in ours, which the supervisor inherits and exec searches.
func (s *Swarm) checkCommand(sp Spec, plan *worktreePlan) error {
	cmd := sp.Cmd[0]
	dir := sp.Dir
	switch {
	case plan != nil && strings.Contains(cmd, "/") && !filepath.IsAbs(cmd):
		// A path in a worktree not made yet: nothing to look at before it is made.
		return nil
	case plan != nil:
		dir = plan.path
	case dir == "" && sp.InWorktree != nil:
		dir = sp.InWorktree.Path
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	env := mergeEnv(s.opts.Environ, sp.Env)
	if err := agent.CheckCommand(cmd, dir, env, os.Getenv("PATH")); err != nil {
		return fmt.Errorf("the agent's %v; install it, or give its path after --; nothing was started", err)
	}
	return nil
}

func (s *Swarm) checkpoint(step string) {
	if s.opts.Checkpoint != nil {
		s.opts.Checkpoint(step)
	}
}

// mergeEnv is the base environment with env set over it.
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

// launch starts the worker's supervisor (Options.Supervisor) in a new tmux window or detached,
// hands it the spec and returns its pid.
func (s *Swarm) launch(ctx context.Context, hs *handoffSpec, tc *tmux.Client) (int, error) {
	if len(s.opts.Supervisor) == 0 {
		return 0, errors.New("no supervisor command to start (swarm.Options.Supervisor)")
	}
	b, err := json.Marshal(hs)
	if err != nil {
		return 0, err
	}
	ho, err := supervise.OfferHandoff(s.layout.HandoffDir(), b)
	if err != nil {
		return 0, err
	}
	defer ho.Close()
	argv := append(append([]string{}, s.opts.Supervisor...), "--swarm-dir", s.dir.Root, "--handoff", ho.Path(), hs.Worker)
	var stop func()
	if tc != nil {
		if _, err := tc.NewWindow(ctx, hs.Session, hs.Worker, hs.Attempt.Dir, nil, argv...); err != nil {
			return 0, err
		}
		stop = func() { tc.KillWindow(context.Background(), tmux.WindowTarget(hs.Session, hs.Worker)) }
	} else {
		// Its own session, no stdio of ours: the worker outlives the shell that spawned it, and
		// (unlike the Python swarm's) does not read the caller's stdin.
		child, err := proc.StartDetached(argv, proc.Detached{Dir: hs.Attempt.Dir})
		if err != nil {
			return 0, err
		}
		stop = child.Kill
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
