// Package loop is swarm's ralph loop as a library: an interactive agent started again and
// again as a swarm worker on the same prompt file until a done pattern, a limit, or a person
// stops it. Its command lines (`ralph spawn|run|status|pause|resume|stop|list|logs|clean|init|
// template` and `swarm ralph …`, the same verbs) are cmd/internal/ralphloop's; this package
// parses no flags and reads nothing from the environment.
//
// A program opens the loops of a swarm directory with Open(dir, Options): Options bring the
// swarm library's options for the iterations' workers (their supervisor command, the agents
// config, the agents' environment, tmux's socket directory), the command line that runs a
// loop's monitor (Options.Monitor: the program's own path and verbs, the loop's name appended),
// how the program's verbs are typed (Options.Tool, for the hints in messages), where progress
// lines and warnings go, and two timings tests shorten (Backoff, LimitWait). Then:
//
//   - Spawn(ctx, SpawnSpec) writes the loop's state, starts its first iteration's worker and
//     types the prompt; StartMonitor starts the monitor detached, RunMonitor runs it in this
//     process until the loop ends, is paused or stopped (the monitor catches SIGTERM: pause;
//     SIGINT, SIGHUP: leave; SIGUSR1: look at the state now).
//   - Pause, Resume (a monitor started again when none runs), Stop (the loop killed, its
//     monitor waited for, then its worker stopped), Clean: a loop's control. Control always
//     wins: each is a locked update of the state and a signal to the monitor, which starts an
//     iteration only inside the locked update that counts it, so once one of them returned no
//     iteration starts and nothing the monitor writes undoes it (monitor.go).
//   - Status (a monitor that died found and recorded, monitor_disconnected; WriteText and JSON
//     render it as the Python swarm did), Loops and ListJSON, Logs, List (Summary, for `ralph
//     list` beside AIWG's loops); Kill, which swarm kill calls first for each worker.
//
// Files: $SWARM_DIR/ralph/<name>/state.json (State, the Python swarm's RalphState format, under
// state.lock, checked against the ralph-state schema before every write), iterations.log (its
// line format), monitor.lock (held by the loop's monitor for as long as it runs). Each
// iteration is a swarm worker (internal/swarm's Spec) under a supervisor that records the
// agent's exit code, and a run record (records.go). monitor.go is the loop itself, watch.go how
// an iteration is watched, spawn.go and control.go the operations, view.go what is shown.
package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
)

// Summary is one loop as `ralph list` shows it beside AIWG's loops.
type Summary struct {
	Name          string `json:"name"`
	Status        string `json:"status"`        // running, paused, stopped, failed
	WorkerStatus  string `json:"worker_status"` // running, stopped, removed
	Iteration     int    `json:"current_iteration"`
	MaxIterations int    `json:"max_iterations"`
	Failures      int    `json:"consecutive_failures"`
	TotalFailures int    `json:"total_failures"`
	ExitReason    string `json:"exit_reason,omitempty"`
}

// List is every loop of the swarm directory swarmDir, by name.
func List(ctx context.Context, swarmDir string) ([]Summary, error) {
	ls, err := Open(swarmDir, Options{})
	if err != nil {
		return nil, err
	}
	loops, err := ls.Loops(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(loops))
	for _, lp := range loops {
		s := Summary{Name: lp.State.WorkerName, Status: lp.State.Status, WorkerStatus: lp.WorkerStatus,
			Iteration: lp.State.CurrentIteration, MaxIterations: lp.State.MaxIterations,
			Failures: lp.State.ConsecutiveFailures, TotalFailures: lp.State.TotalFailures}
		if lp.State.ExitReason != nil {
			s.ExitReason = *lp.State.ExitReason
		}
		out = append(out, s)
	}
	return out, nil
}

// Options are what a program running loops brings: how their workers are started, how its
// loop verbs are typed (for the hints in messages), the monitor's command line, where messages
// go, and the loop's timings. Nothing is read from the environment: the command line fills
// these.
type Options struct {
	// Swarm says how the iterations' workers are started (the supervisor command, the agents
	// config, the agents' environment, tmux's socket directory). Its Warnings are Err, and
	// $SWARM_DIR in the agents' environment is the swarm directory, absolute.
	Swarm swarm.Options
	// Monitor is the command line that runs a loop's monitor, without the loop's name: this
	// program's absolute path and its verbs ("/usr/bin/ralph", "run"; "/usr/bin/swarm", "ralph",
	// "run"). It is started detached, with the agents' environment; its command line must hold
	// "run" (a pid is signalled only when its command line says it is the loop's monitor).
	Monitor []string
	// Tool is how a person types the loop verbs ("ralph", "swarm ralph"): hints in messages
	// name it, and its first word begins every warning ("ralph: warning: …").
	Tool string
	// Out takes the monitor's lines ("[ralph] NAME: …") and a spawn's progress ("replaced
	// existing worker N"); Err its warnings and errors. nil: discarded.
	Out, Err io.Writer
	// Backoff is the unit of the wait after a failed iteration: min(2^(n-1), 300) units (default
	// a second; tests shorten it).
	Backoff time.Duration
	// LimitWait is how long a usage limit with no reset time holds the loop (default
	// DefaultLimitWait; tests shorten it).
	LimitWait time.Duration
	// CallWindow is the "hour" of --max-calls-per-hour (default an hour; tests shorten it).
	CallWindow time.Duration
	// HookTimeout bounds each run of the --on-event hook (default hook.DefaultTimeout).
	HookTimeout time.Duration
}

// Loops are the loops of one swarm directory, as a program runs them (Open).
type Loops struct {
	base app // every loop's app, its store unset
}

// Open opens the loops of the swarm directory dir (made absolute: the loop's agents find it in
// their $SWARM_DIR wherever they run).
func Open(dir string, o Options) (*Loops, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if o.Tool == "" {
		o.Tool = "ralph"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.LimitWait <= 0 {
		o.LimitWait = DefaultLimitWait
	}
	if o.CallWindow <= 0 {
		o.CallWindow = time.Hour
	}
	so := o.Swarm
	so.Warnings = o.Err
	so.Environ = setEnv(so.Environ, "SWARM_DIR", abs)
	home, err := swarm.Open(abs, so)
	if err != nil {
		return nil, err
	}
	return &Loops{base: app{tool: o.Tool, prog: strings.Fields(o.Tool)[0], opts: o, environ: so.Environ,
		stdout: o.Out, stderr: o.Err, home: home, dir: home.Dir()}}, nil
}

// Swarm is the swarm the loops' workers are in.
func (ls *Loops) Swarm() *swarm.Swarm { return ls.base.home }

// at is an app for the loop name, checked as a worker name.
func (ls *Loops) at(name string) (*app, error) {
	l := ls.base
	if err := l.loop(name); err != nil {
		return nil, err
	}
	return &l, nil
}

// named is an app for the loop name with its state; without one, the Python swarm's messages.
func (ls *Loops) named(name string) (*app, *State, error) {
	l := ls.base
	st, err := l.loadLoop(name)
	if err != nil {
		return nil, nil, err
	}
	return &l, st, nil
}

// Listed is one loop as Loops reads it: its state and its worker's status (running, stopped,
// or removed when it is not in state.json).
type Listed struct {
	State        *State
	WorkerStatus string
}

// Loops reads every ralph/<name>/state.json (names sorted), with its worker's status. A state
// that cannot be read is a warning.
func (ls *Loops) Loops(ctx context.Context) ([]Listed, error) {
	l := &ls.base
	entries, err := os.ReadDir(l.dir.Ralph())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && statedir.CheckName(statedir.KindWorker, e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []Listed
	for _, name := range names {
		s := store{dir: l.dir, name: name, warn: l.warnf}
		st, err := s.load()
		if err != nil {
			if !errors.Is(err, errNoState) {
				l.warnf("%v", err)
			}
			continue
		}
		out = append(out, Listed{State: st, WorkerStatus: l.workerStatus(ctx, st.WorkerName)})
	}
	return out, nil
}

// workerStatus is running, stopped, or removed when the worker is not in state.json.
func (l *app) workerStatus(ctx context.Context, name string) string {
	w, _ := l.home.Worker(name)
	if w == nil {
		return "removed"
	}
	if l.home.Live(ctx, w).Running {
		return "running"
	}
	return "stopped"
}

// app is one loop of a Loops (st), and what every step of it needs.
type app struct {
	tool    string // "ralph" or "swarm ralph": how the verbs are typed
	prog    string // "ralph" or "swarm": the prefix of its messages
	opts    Options
	environ []string // the agents' and the monitor's environment, $SWARM_DIR absolute
	stdout  io.Writer
	stderr  io.Writer
	dir     statedir.Swarm
	home    *swarm.Swarm
	st      store
	held    *held // the rails and cost the loop's monitor holds (rails.go); nil elsewhere
}

func (l *app) warnf(format string, args ...any) {
	if l.stderr != nil {
		fmt.Fprintf(l.stderr, "%s: warning: %s\n", l.prog, fmt.Sprintf(format, args...))
	}
}

// setEnv is environ with key set to value (in place of any value it had).
func setEnv(environ []string, key, value string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// loop points the app at the loop name, checked as a worker name.
func (l *app) loop(name string) error {
	if err := statedir.CheckName(statedir.KindWorker, name); err != nil {
		return fmt.Errorf("invalid worker name: %v", err)
	}
	l.st = store{dir: l.dir, name: name, warn: l.warnf}
	return nil
}

// loadLoop reads the named loop's state; without one, the Python swarm's messages.
func (l *app) loadLoop(name string) (*State, error) {
	if err := l.loop(name); err != nil {
		return nil, err
	}
	st, err := l.st.load()
	if errors.Is(err, errNoState) {
		if w, _ := l.home.Worker(name); w != nil {
			return nil, fmt.Errorf("worker '%s' is not a ralph worker", name)
		}
		return nil, fmt.Errorf("worker '%s' not found", name)
	}
	return st, err
}
