package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// supervisorTool names swarm's attempts in the supervisors' registry.
const supervisorTool = "swarm"

// Options are what a swarm takes from the world its command line runs in: the library reads
// no environment variable and no os.Args of its own, so a command (cmd/swarm, cmd/ralph) or a
// test says each of them here.
type Options struct {
	// Agents is the agents config the workers' screen profiles come from
	// (agent.SwarmConfig: the file $SWARM_AGENTS names, which must exist, else
	// <dir>/agents.json); its zero value is <dir>/agents.json. A default file that is not
	// there leaves the built-in claude, codex and shell profiles.
	Agents agent.ConfigFile
	// Supervisor is the command line that runs a worker's supervisor: a program and its
	// hidden verb ({"/usr/local/bin/swarm", "__supervise"}), to which Spawn appends
	// "--swarm-dir DIR --handoff PATH NAME"; that verb calls Supervise with them. Only Spawn
	// and Respawn need it.
	Supervisor []string
	// Environ is the environment agents start with (a Spec's Env is set over it), usually
	// os.Environ(); nil starts them with the Spec's Env alone.
	Environ []string
	// TmuxTmpDir is $TMUX_TMPDIR: where tmux keeps the sockets it names with -L (a worker's
	// tmux socket); "" for /tmp, as tmux does.
	TmuxTmpDir string
	// Warnings receives what the swarm has to say that is no error, one line each in the
	// Python swarm's words ("swarm: warning: ..."); nil discards them.
	Warnings io.Writer
	// Checkpoint, when set, is called at each step of a spawn ("state": the worker is in
	// state.json; "worktree": its worktree is made; "entry": the supervisor's registry entry
	// is written; "launched": the supervisor has its spec), so that a test can kill the
	// process exactly there (the spawn journal's tests).
	Checkpoint func(step string)
}

// Swarm is a swarm directory opened: its registry of workers (state.json), its supervisors'
// layout (supervise/) and the Options it was opened with. A Swarm has no state of its own
// beyond them: two of them on one directory, in one process or two, see the same workers.
type Swarm struct {
	dir    statedir.Swarm
	reg    *worker.Registry
	layout supervise.Layout
	opts   Options
}

// Open opens the swarm directory dir (made absolute: a supervisor started elsewhere must find
// the same one), creating it and its logs/ as the Python swarm did.
func Open(dir string, o Options) (*Swarm, error) {
	abs, err := absPath(dir)
	if err != nil {
		return nil, err
	}
	d := statedir.Swarm{Root: abs}
	s := &Swarm{dir: d, layout: supervise.Layout{Dir: d.Supervise()}, opts: o}
	s.reg = &worker.Registry{Dir: d, Warn: func(m string) { s.warnf("%s", m) }, Rebuild: s.rebuild}
	if err := s.reg.Ensure(); err != nil {
		return nil, err
	}
	return s, nil
}

// Root is the swarm directory, absolute.
func (s *Swarm) Root() string { return s.dir.Root }

// Dir names the swarm directory's files.
func (s *Swarm) Dir() statedir.Swarm { return s.dir }

// warnf says a warning as the Python swarm did: "swarm: warning: ..." (on every line).
func (s *Swarm) warnf(format string, args ...any) {
	if s.opts.Warnings != nil {
		WriteWarning(s.opts.Warnings, fmt.Sprintf(format, args...))
	}
}

func absPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", p, err)
	}
	return abs, nil
}

// Load reads state.json, once every spawn that was interrupted (its process killed half-way)
// is finished or undone (spawnsafe.go): what every verb looks at.
func (s *Swarm) Load(ctx context.Context) (*worker.State, error) {
	st, err := s.reg.Load()
	if err != nil {
		return nil, err
	}
	return s.recoverSpawns(ctx, st), nil
}

// Worker returns the entry of the worker name as state.json has it, nil when there is none.
func (s *Swarm) Worker(name string) (*worker.Worker, error) {
	st, err := s.reg.Load()
	if err != nil {
		return nil, err
	}
	return st.Get(name), nil
}

// DefaultSession is the Python swarm's tmux session for workers spawned without one: "swarm-"
// and the first 8 hex digits of the SHA-256 of the absolute, symlink-resolved swarm directory.
func (s *Swarm) DefaultSession() string {
	p := s.dir.Root
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	sum := sha256.Sum256([]byte(p))
	return "swarm-" + hex.EncodeToString(sum[:])[:8]
}

// tmuxSocketPath is where tmux 3.3a puts the socket it names `tmux -L name`: the first of
// $TMUX_TMPDIR and /tmp that resolves, then tmux-<uid>/<name>. The directory is made 0700 as
// tmux makes it (tmux -S, which the tmux package uses, does not). "" is tmux's default server.
func (s *Swarm) tmuxSocketPath(name *string) (string, error) {
	if name == nil {
		return "", nil
	}
	base := "/tmp"
	if d := s.opts.TmuxTmpDir; d != "" {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			base = r
		}
	} else if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	dir := filepath.Join(base, "tmux-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("tmux socket directory: %w", err)
	}
	return filepath.Join(dir, *name), nil
}

// Tmux is the tmux client of a tmux worker's server.
func (s *Swarm) Tmux(w *worker.Worker) (*tmux.Client, error) {
	path, err := s.tmuxSocketPath(w.Tmux.Socket)
	if err != nil {
		return nil, err
	}
	return &tmux.Client{Socket: path}, nil
}

// Liveness is what the swarm knows of a worker now.
type Liveness struct {
	// Running: its agent runs (or is being started).
	Running bool
	// Outcome is how its agent ended, once its supervisor recorded it: the exit code (nil
	// when it cannot be known) and the reason ("agent-exit-3", "killed", ...).
	Outcome *worker.Outcome
	// Supervised: started by this swarm under a supervisor (else by the Python swarm, which
	// knew no exit code).
	Supervised bool
	// WaitingInput is since when its running agent waits for input, as its supervisor
	// recorded it (supervise.WatchState.WaitingInput); zero when it does not.
	WaitingInput time.Time
}

// Live tells whether w runs. A supervised worker runs while its supervisor does (its entry's
// pid, checked with its command line); one whose supervisor died without recording the end is
// closed as lost (reconcile) and reported stopped. A worker the Python swarm started is judged
// as it judged it, but with exact tmux targets: its window, or its pid.
func (s *Swarm) Live(ctx context.Context, w *worker.Worker) Liveness {
	return s.LiveAll(ctx, []*worker.Worker{w})[0]
}

// LiveAll is Live of each of ws, in their order, with the workers found lost closed together:
// one write of state.json for all of them (ls and top look at every worker, and a write per
// lost worker, each rewriting the whole file, made ls of 501 of them take 38 to 52 s).
func (s *Swarm) LiveAll(ctx context.Context, ws []*worker.Worker) []Liveness {
	lives := make([]Liveness, len(ws))
	var orphans []*worker.Worker
	var at []int
	for i, w := range ws {
		l, judged := s.liveNow(ctx, w)
		if judged {
			lives[i] = l
			continue
		}
		orphans, at = append(orphans, w), append(at, i)
	}
	for start := 0; start < len(orphans); start += lostBatch {
		end := min(start+lostBatch, len(orphans))
		for j, l := range s.closeLost(ctx, orphans[start:end]) {
			lives[at[start+j]] = l
		}
	}
	for i, w := range ws {
		if lives[i].Running {
			lives[i].WaitingInput = w.WaitingInput()
		}
	}
	return lives
}

// lostBatch bounds how many lost workers are closed in one write: each holds its name's lock
// (an open file) until the write is done.
const lostBatch = 1000

// liveNow is w's liveness as far as it can be told without closing anything: false when w is
// supervised, not ended, and its supervisor is not alive (being launched, recording its end, or
// lost: closeLost tells).
func (s *Swarm) liveNow(ctx context.Context, w *worker.Worker) (Liveness, bool) {
	if !w.Supervised() {
		return Liveness{Running: s.unsupervisedAlive(ctx, w)}, true
	}
	l := Liveness{Supervised: true}
	if out, ok := w.Ended(); ok {
		l.Outcome = out
		return l, true
	}
	e, _ := s.layout.ReadEntry(w.Name)
	if e != nil && (e.PID == 0 || supervise.SupervisorAlive(e.PID, w.Name)) {
		if e.Outcome != nil {
			// Ended, and its supervisor is writing that into state.json: the entry has it
			// already (a wait must not report the exit code unknown meanwhile).
			l.Outcome = outcomeOf(e.Outcome)
		}
		l.Running = e.Outcome == nil
		if l.Running && w.Tmux != nil && e.PID != 0 && hungUp(e.PID) && !s.windowThere(ctx, w) {
			return s.hungUpLiveness(ctx, w, e.PID), true
		}
		return l, true
	}
	return l, false
}

// closeLost is the liveness of ws, supervised workers with no live supervisor: being launched
// (spawn holds the name's lock), recording its end (the supervisor holds it), or lost. The lost
// ones are closed as supervise's Reconcile closes one (lost, or the outcome its entry kept),
// all in one write of state.json, and in the same order for each: judged under its name's
// lock, its end written, then its entry removed, so that a crash leaves nothing half done
// (an entry whose worker has ended is removed by the next reconcile of the name).
func (s *Swarm) closeLost(ctx context.Context, ws []*worker.Worker) []Liveness {
	lives := make([]Liveness, len(ws))
	orphans := map[string]*supervise.Orphan{}
	var unlocks []func() error
	defer func() {
		for _, unlock := range unlocks {
			unlock()
		}
	}()
	for i, w := range ws {
		lives[i].Supervised = true
		unlock, err := s.layout.Lock(ctx, w.Name, 100*time.Millisecond)
		if errors.Is(err, fsx.ErrLocked) {
			continue // at work: state.json tells below
		}
		if err != nil {
			lives[i].Running = true // cannot tell: say what state.json says
			continue
		}
		unlocks = append(unlocks, unlock)
		o, err := s.layout.FindOrphan(ctx, nil, w.Name, "")
		if err != nil {
			lives[i].Running = true
			continue
		}
		if o != nil {
			orphans[w.Name] = o
		}
	}
	closed, err := s.recordLost(ctx, orphans)
	if err != nil {
		for i, w := range ws {
			if orphans[w.Name] != nil {
				lives[i].Running = true
			}
		}
		return lives
	}
	for name := range orphans {
		s.layout.RemoveEntry(name)
	}
	for _, name := range closed {
		s.StopHeartbeat(ctx, name)
	}
	st, err := s.reg.Load()
	if err != nil {
		return lives
	}
	for i, w := range ws {
		if lives[i].Running {
			continue
		}
		if nw := st.Get(w.Name); nw != nil {
			if lives[i].Outcome, _ = nw.Ended(); lives[i].Outcome == nil {
				lives[i].Running = true // locked: a spawn is at work on it
			}
		}
	}
	return lives
}

// recordLost writes the outcomes of orphans into their workers, in one write of state.json, as
// Recorder.Lost writes one (a worker that is gone, not supervised or ended already is left as
// it is), and returns the names of the workers it closed.
func (s *Swarm) recordLost(ctx context.Context, orphans map[string]*supervise.Orphan) ([]string, error) {
	if len(orphans) == 0 {
		return nil, nil
	}
	var closed []string
	err := s.reg.Update(ctx, func(st *worker.State) error {
		closed = closed[:0]
		for name, o := range orphans {
			w := st.Get(name)
			if w == nil || !w.Supervised() {
				continue
			}
			if _, ended := w.Ended(); ended {
				continue
			}
			finish(w, o.Outcome)
			closed = append(closed, name)
		}
		if len(closed) == 0 {
			return worker.ErrUnchanged
		}
		return nil
	})
	return closed, err
}

// hungUp reports whether a tmux worker's supervisor has lost its terminal: its window, session
// or server was killed. tmux runs the supervisor as the leader of the pane's session, with the
// pane as its controlling terminal; closing the pane hangs the terminal up, and the kernel
// (tty_signal_session_leader) then clears the session's controlling terminal before tmux's
// kill command returns, so /proc/PID/stat's tty_nr reads 0 at once, while the supervisor is
// still stopping its agent (up to 5 s for one that ignores SIGHUP and SIGTERM). One read of
// /proc, not a tmux call per worker (ls of 500 workers).
func hungUp(pid int) bool {
	st, ok := proc.ReadStat(pid)
	return ok && st.TTY == 0
}

// hungUpWait bounds how long Live waits for the record of a hung-up worker's end: an agent
// that ends on the hang-up is recorded in milliseconds.
const hungUpWait = time.Second

// hungUpLiveness is a hung-up tmux worker's liveness: stopped, as the Python swarm judged a
// worker whose window is gone, with its outcome once its supervisor recorded it (waited for
// briefly; an agent that ignores the hang-up and SIGTERM is still being stopped, its outcome
// not known yet).
func (s *Swarm) hungUpLiveness(ctx context.Context, w *worker.Worker, pid int) Liveness {
	l := Liveness{Supervised: true}
	deadline := time.Now().Add(hungUpWait)
	for pause := time.Millisecond; ; pause = min(pause*2, 20*time.Millisecond) {
		e, _ := s.layout.ReadEntry(w.Name)
		if e != nil && e.Outcome != nil {
			l.Outcome = outcomeOf(e.Outcome)
			return l
		}
		if e == nil || e.PID != pid || !supervise.SupervisorAlive(pid, w.Name) {
			if st, err := s.reg.Load(); err == nil {
				if nw := st.Get(w.Name); nw != nil && nw.Started == w.Started {
					l.Outcome, _ = nw.Ended()
				}
			}
			return l
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return l
		}
		time.Sleep(pause)
	}
}

// windowThere reports whether a tmux worker's window is still there (and its pane not dead):
// a supervisor read with no terminal (hungUp) is taken for hung up only once its window is
// gone too, since a live supervisor was seen, under load, to read tty_nr 0 while its agent
// worked (status and the ready wait then said stopped). An error counts as there.
func (s *Swarm) windowThere(ctx context.Context, w *worker.Worker) bool {
	c, err := s.Tmux(w)
	if err != nil {
		return true
	}
	windows, err := c.ListWindows(ctx, w.Tmux.Session)
	if err != nil {
		return true
	}
	for _, win := range windows {
		if win.Name == w.Tmux.Window && !win.Dead {
			return true
		}
	}
	return false
}

func (s *Swarm) unsupervisedAlive(ctx context.Context, w *worker.Worker) bool {
	if w.Tmux != nil {
		c, err := s.Tmux(w)
		if err != nil {
			return false
		}
		windows, _ := c.ListWindows(ctx, w.Tmux.Session)
		for _, win := range windows {
			if win.Name == w.Tmux.Window && !win.Dead {
				return true
			}
		}
		return false
	}
	if w.PID != nil && *w.PID > 0 {
		err := syscall.Kill(int(*w.PID), 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	return false
}

// startWait bounds how long Spawn, and the calls that talk to an agent, wait for one that is
// being started (its supervisor registering, the agent's fork and exec): `swarm spawn … &&
// swarm send …` must find the agent there.
const startWait = 10 * time.Second

// starting reports whether name's supervisor is alive (or being launched) and has not started
// its agent yet.
func (s *Swarm) starting(name string) bool {
	e, _ := s.layout.ReadEntry(name)
	return e != nil && e.Outcome == nil && e.AgentPID == 0 && (e.PID == 0 || supervise.SupervisorAlive(e.PID, name))
}

// waitStarted waits (at most startWait) until name's agent has started, or its supervisor is
// gone or done; it reports whether the agent is still being started when it gives up.
func (s *Swarm) waitStarted(ctx context.Context, name string) bool {
	deadline := time.Now().Add(startWait)
	for pause := time.Millisecond; s.starting(name); pause = min(pause*2, 20*time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return true
		}
		time.Sleep(pause)
	}
	return false
}

// WaitGone waits (at most limit) until w's supervisor has exited (its agent ended, it recorded
// the end) and its tmux window is closed, so that `swarm wait w && swarm attach w` (or respawn,
// or clean) finds the worker wholly gone, as the Python swarm's wait did (it waited for the
// window). A window still there at the limit is closed.
func (s *Swarm) WaitGone(ctx context.Context, w *worker.Worker, limit time.Duration) {
	deadline := time.Now().Add(limit)
	var pid int
	if e, _ := s.layout.ReadEntry(w.Name); e != nil && e.PID > 0 {
		pid = e.PID
	} else {
		w.Meta(worker.MetaSupervisorPID, &pid)
	}
	for pid > 0 && time.Now().Before(deadline) && supervise.SupervisorAlive(pid, w.Name) {
		time.Sleep(10 * time.Millisecond)
	}
	s.awaitWindowClosed(ctx, w, deadline)
}

// Control opens the control socket of a supervised worker's supervisor, once its agent has
// started (a worker spawned a moment ago may still be starting it). The caller closes it.
func (s *Swarm) Control(w *worker.Worker) (*supervise.Control, error) {
	if !w.Supervised() {
		return nil, fmt.Errorf("worker '%s' was not started by this swarm (it has no supervisor)", w.Name)
	}
	return s.control(w)
}

func (s *Swarm) control(w *worker.Worker) (*supervise.Control, error) {
	s.waitStarted(context.Background(), w.Name)
	e, err := s.layout.ReadEntry(w.Name)
	if err != nil {
		return nil, err
	}
	path := s.layout.SocketPath(w.Name)
	if e != nil && e.Control != "" {
		path = e.Control
	}
	return supervise.DialControl(path, 5*time.Second)
}

// LogPath is the file a tmux worker's supervisor writes the agent's output to (made anew at
// each start of the name). A process worker's output is Dir().StdoutLog(name).
func (s *Swarm) LogPath(name string) string { return s.layout.LogPath(name) }

// Recorder is swarm's side of the supervisor contract (supervise.Recorder): it writes the
// agent's pid, its activity, exit code, finish time and reason into the worker's metadata in
// state.json, and its status "stopped" once it ended; the worker's heartbeat ends with it.
// Incarnation is the worker's Started: a worker removed and spawned again under the same name
// is not the one this supervisor ran.
// PID, in the supervisor itself, is its own pid: a worker rebuilt from the supervisors'
// registry (rebuild) whose start is not known to the microsecond is still this supervisor's
// when its supervisor_pid is this live process.
type Recorder struct {
	Swarm       *Swarm
	Incarnation string
	PID         int

	events *eventHook // the worker's --on-event hook, nil for none (events.go)
}

func (r *Recorder) update(ctx context.Context, name string, fn func(w *worker.Worker)) error {
	return r.Swarm.reg.Update(ctx, func(s *worker.State) error {
		w := s.Get(name)
		var pid int
		if w == nil || w.Started != r.Incarnation && (r.PID == 0 || !w.Meta(worker.MetaSupervisorPID, &pid) || pid != r.PID) {
			return worker.ErrUnchanged // cleaned, or another incarnation: nothing of ours
		}
		fn(w)
		return nil
	})
}

// Started records the agent's pid.
func (r *Recorder) Started(ctx context.Context, a *supervise.Attempt, pid int) error {
	return r.update(ctx, a.Name, func(w *worker.Worker) {
		w.Metadata = w.Metadata.SetValue(worker.MetaAgentPID, pid)
	})
}

// Finished records how the agent ended. Its heartbeat ends with it.
func (r *Recorder) Finished(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, _ io.Writer) error {
	err := r.update(ctx, a.Name, func(w *worker.Worker) { finish(w, out) })
	r.Swarm.StopHeartbeat(ctx, a.Name)
	return err
}

// Lost closes a worker whose supervisor died without recording the end.
func (r *Recorder) Lost(ctx context.Context, e *supervise.Entry, out *supervise.Outcome) (bool, error) {
	closed, err := r.Swarm.recordLost(ctx, map[string]*supervise.Orphan{e.Name: {Entry: e, Outcome: out}})
	if len(closed) > 0 {
		r.Swarm.StopHeartbeat(ctx, e.Name)
	}
	return len(closed) > 0, err
}

// outcomeOf is out as finish records it.
func outcomeOf(out *supervise.Outcome) *worker.Outcome {
	o := &worker.Outcome{Reason: out.Reason}
	if !out.UnknownExit {
		code := out.ExitCode
		o.ExitCode = &code
	}
	finished := out.Finished
	if finished.IsZero() {
		finished = time.Now()
	}
	o.Finished = worker.Timestamp(finished)
	return o
}

func finish(w *worker.Worker, out *supervise.Outcome) {
	var code any
	if !out.UnknownExit {
		code = out.ExitCode
	}
	finished := out.Finished
	if finished.IsZero() {
		finished = time.Now()
	}
	w.Status = worker.StatusStopped
	w.Metadata = w.Metadata.SetValue(worker.MetaExitCode, code).SetValue(worker.MetaFinished, worker.Timestamp(finished)).
		SetValue(worker.MetaReason, out.Reason)
	w.SetWaitingInput(false, finished)
}

// rebuild returns the workers this swarm's live supervisors run, as their registry entries
// (supervise/) and the agents' processes tell them: what a corrupt state.json is replaced with
// (worker.Registry.Rebuild), so that a truncated file does not hide running workers from ls,
// kill --all and spawn's duplicate check. What the registry does not hold is taken from the
// agent's process (its command line and directory) or left empty: tags, --env, the worktree.
// It runs under state.lock.
func (s *Swarm) rebuild() []*worker.Worker {
	var ws []*worker.Worker
	for _, name := range s.layout.Registered(func(n string) bool { return statedir.CheckName(statedir.KindWorker, n) == nil }) {
		e, err := s.layout.ReadEntry(name)
		if err != nil || e == nil || e.Tool != supervisorTool || e.PID <= 0 || e.Outcome != nil ||
			!supervise.SupervisorAlive(e.PID, name) {
			continue
		}
		w := &worker.Worker{Name: name, Status: worker.StatusRunning, Cmd: []string{}}
		if t, err := time.Parse(time.RFC3339Nano, e.StartedAt); err == nil {
			w.Started = worker.Timestamp(t)
		} else {
			w.Started = worker.Timestamp(time.Now())
		}
		if e.AgentPID > 0 {
			if start, ok := proc.StartTime(e.AgentPID); ok && (e.AgentStart == 0 || start == e.AgentStart) {
				if args, err := proc.Args(e.AgentPID); err == nil {
					w.Cmd = args
				}
				w.Cwd, _ = os.Readlink("/proc/" + strconv.Itoa(e.AgentPID) + "/cwd")
			}
		}
		w.Metadata = worker.Object{}.SetValue(worker.MetaSupervised, true).SetValue(worker.MetaSupervisorPID, e.PID).
			SetValue(metaRebuilt, true)
		if e.AgentPID > 0 {
			w.Metadata = w.Metadata.SetValue(worker.MetaAgentPID, e.AgentPID)
		}
		if e.Backend == supervise.BackendTmux {
			w.Tmux = &worker.Tmux{Session: e.Session, Window: name}
			if e.Socket != "" {
				sock := filepath.Base(e.Socket)
				w.Tmux.Socket = &sock
			}
		} else {
			pid := int64(e.PID)
			w.PID = &pid
		}
		ws = append(ws, w)
	}
	return ws
}

// metaRebuilt marks a worker rebuilt from its supervisor's registry entry after state.json
// was found corrupt: its tags, --env and worktree were lost with the file.
const metaRebuilt = "rebuilt"
