package swarmcli

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

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
)

// supervisorTool names swarm's attempts in the supervisors' registry.
const supervisorTool = "swarm"

// home is a swarm directory opened: its registry of workers and its supervisors' layout.
type home struct {
	dir    statedir.Swarm
	reg    *worker.Registry
	layout supervise.Layout
}

// openHome finds $SWARM_DIR as the Python swarm did and makes it absolute (a supervisor
// started in another directory must find the same one).
func openHome(e *env) (*home, error) {
	d, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return openHomeAt(e, d.Root)
}

func openHomeAt(e *env, root string) (*home, error) {
	abs, err := absPath(root)
	if err != nil {
		return nil, err
	}
	d := statedir.Swarm{Root: abs}
	h := &home{dir: d, layout: supervise.Layout{Dir: d.Supervise()}}
	h.reg = &worker.Registry{Dir: d, Warn: func(m string) { e.warnf("%s", m) }}
	if err := h.reg.Ensure(); err != nil {
		return nil, err
	}
	return h, nil
}

func absPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", p, err)
	}
	return abs, nil
}

// defaultSession is the Python swarm's: "swarm-" and the first 8 hex digits of the SHA-256 of
// the absolute, symlink-resolved swarm directory.
func (h *home) defaultSession() string {
	p := h.dir.Root
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	sum := sha256.Sum256([]byte(p))
	return "swarm-" + hex.EncodeToString(sum[:])[:8]
}

// tmuxSocketPath is where tmux 3.3a puts the socket it names `tmux -L name`: the first of
// $TMUX_TMPDIR and /tmp that resolves, then tmux-<uid>/<name>. The directory is made 0700 as
// tmux makes it (tmux -S, which the tmux package uses, does not). "" is tmux's default server.
func tmuxSocketPath(name *string) (string, error) {
	if name == nil {
		return "", nil
	}
	base := "/tmp"
	if d := os.Getenv("TMUX_TMPDIR"); d != "" {
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

// tmuxOf is the tmux client of a tmux worker's server.
func tmuxOf(w *worker.Worker) (*tmux.Client, error) {
	path, err := tmuxSocketPath(w.Tmux.Socket)
	if err != nil {
		return nil, err
	}
	return &tmux.Client{Socket: path}, nil
}

// liveness is what swarm knows of a worker now.
type liveness struct {
	running bool
	// outcome is set when a supervisor recorded how the agent ended.
	outcome *worker.Outcome
	// supervised: started by this swarm under a supervisor (else: by the Python tool).
	supervised bool
}

// check tells whether w runs. A supervised worker runs while its supervisor does (its entry's
// pid, checked with its command line); one whose supervisor died without recording the end is
// closed as lost (reconcile). A worker the Python swarm started is judged as it judged it, but
// with exact tmux targets: its window, or its pid.
func (h *home) check(ctx context.Context, w *worker.Worker) liveness {
	if !w.Supervised() {
		return liveness{running: unsupervisedAlive(ctx, w)}
	}
	l := liveness{supervised: true}
	if out, ok := w.Ended(); ok {
		l.outcome = out
		return l
	}
	e, _ := h.layout.ReadEntry(w.Name)
	if e != nil && (e.PID == 0 || supervise.SupervisorAlive(e.PID, w.Name)) {
		if e.Outcome != nil {
			// Ended, and its supervisor is writing that into state.json: the entry has it
			// already (a wait must not report the exit code unknown meanwhile).
			l.outcome = outcomeOf(e.Outcome)
		}
		l.running = e.Outcome == nil
		return l
	}
	// No live supervisor: being launched (spawn holds the name's lock), recording its end (the
	// supervisor holds it), or lost: then Reconcile has the recorder close it.
	if _, err := h.layout.Reconcile(ctx, nil, w.Name, "", &recorder{h: h, started: w.Started}); err != nil {
		l.running = true // cannot tell: say what state.json says
		return l
	}
	if s, err := h.reg.Load(); err == nil {
		if nw := s.Get(w.Name); nw != nil {
			if l.outcome, _ = nw.Ended(); l.outcome == nil {
				l.running = true // locked: a spawn is at work on it
			}
		}
	}
	return l
}

func unsupervisedAlive(ctx context.Context, w *worker.Worker) bool {
	if w.Tmux != nil {
		c, err := tmuxOf(w)
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

func statusWord(running bool) string {
	if running {
		return worker.StatusRunning
	}
	return worker.StatusStopped
}

// startWait bounds how long spawn, and the verbs that talk to an agent, wait for one that is
// being started (its supervisor registering, the agent's fork and exec): `swarm spawn … &&
// swarm send …` must find the agent there.
const startWait = 10 * time.Second

// starting reports whether name's supervisor is alive (or being launched) and has not started
// its agent yet.
func (h *home) starting(name string) bool {
	e, _ := h.layout.ReadEntry(name)
	return e != nil && e.Outcome == nil && e.AgentPID == 0 && (e.PID == 0 || supervise.SupervisorAlive(e.PID, name))
}

// waitStarted waits (at most startWait) until name's agent has started, or its supervisor is
// gone or done; it reports whether the agent is still being started when it gives up.
func (h *home) waitStarted(ctx context.Context, name string) bool {
	deadline := time.Now().Add(startWait)
	for pause := time.Millisecond; h.starting(name); pause = min(pause*2, 20*time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return true
		}
		time.Sleep(pause)
	}
	return false
}

// supervisorGone waits (at most d) until w's supervisor has exited: its agent ended, it
// recorded the end, and its tmux window is closed, so that `swarm wait w && swarm attach w`
// (or respawn, or clean) finds the worker wholly gone.
func (h *home) supervisorGone(w *worker.Worker, d time.Duration) {
	var pid int
	if e, _ := h.layout.ReadEntry(w.Name); e != nil && e.PID > 0 {
		pid = e.PID
	} else if !w.Meta(worker.MetaSupervisorPID, &pid) {
		return
	}
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && supervise.SupervisorAlive(pid, w.Name); {
		time.Sleep(10 * time.Millisecond)
	}
}

// control opens the supervisor's control socket of a running supervised worker, once its
// agent has started (a worker spawned a moment ago may still be starting it).
func (h *home) control(w *worker.Worker) (*supervise.Control, error) {
	h.waitStarted(context.Background(), w.Name)
	e, err := h.layout.ReadEntry(w.Name)
	if err != nil {
		return nil, err
	}
	path := h.layout.SocketPath(w.Name)
	if e != nil && e.Control != "" {
		path = e.Control
	}
	return supervise.DialControl(path, 5*time.Second)
}

// recorder is swarm's side of the supervisor contract: it writes the agent's pid, exit code,
// finish time and reason into the worker's metadata in state.json, and its status "stopped"
// once it ended. started identifies the worker's incarnation: a worker removed and spawned
// again under the same name is not the one this supervisor ran.
type recorder struct {
	h       *home
	started string
}

func (r *recorder) update(ctx context.Context, name string, fn func(w *worker.Worker)) error {
	return r.h.reg.Update(ctx, func(s *worker.State) error {
		w := s.Get(name)
		if w == nil || w.Started != r.started {
			return worker.ErrUnchanged // cleaned, or another incarnation: nothing of ours
		}
		fn(w)
		return nil
	})
}

// Started records the agent's pid.
func (r *recorder) Started(ctx context.Context, a *supervise.Attempt, pid int) error {
	return r.update(ctx, a.Name, func(w *worker.Worker) {
		w.Metadata = w.Metadata.SetValue(worker.MetaAgentPID, pid)
	})
}

// Finished records how the agent ended.
// Its heartbeat ends with it.
func (r *recorder) Finished(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, _ io.Writer) error {
	err := r.update(ctx, a.Name, func(w *worker.Worker) { finish(w, out) })
	r.h.stopHeartbeat(ctx, a.Name)
	return err
}

// Lost closes a worker whose supervisor died without recording the end.
func (r *recorder) Lost(ctx context.Context, e *supervise.Entry, out *supervise.Outcome) (bool, error) {
	closed := false
	err := r.h.reg.Update(ctx, func(s *worker.State) error {
		w := s.Get(e.Name)
		if w == nil || !w.Supervised() {
			return worker.ErrUnchanged
		}
		if _, ended := w.Ended(); ended {
			return worker.ErrUnchanged
		}
		finish(w, out)
		closed = true
		return nil
	})
	if closed {
		r.h.stopHeartbeat(ctx, e.Name)
	}
	return closed, err
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
}
