// Package loop is swarm's ralph loop: an interactive agent started again and again as a swarm
// worker on the same prompt file until a done pattern, a limit, or a person stops it. `ralph
// spawn|run|status|pause|resume|stop|list|logs|clean|init|template` and `swarm ralph …` are
// this package's Run.
//
// Files: $SWARM_DIR/ralph/<name>/state.json (State, the Python swarm's RalphState format, under
// state.lock), iterations.log (its line format), monitor.lock (held by the loop's monitor).
// Each iteration is a swarm worker (internal/swarm's Spec) under a supervisor that records the
// agent's exit code, and a run record (records.go). monitor.go is the loop itself,
// watch.go how an iteration is watched, verbs.go the commands.
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

// Run runs the verb args[1] (args[0] is the tool's name as it prints it: "ralph" or
// "swarm ralph") and returns the exit status. o says how the loops' workers are started (the
// supervisor command of the program that runs Run, the agents config, the agents'
// environment, tmux's socket directory); their warnings go to stderr.
func Run(args []string, o swarm.Options, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, o, stdin, stdout, stderr)
}

// List is every loop of the swarm directory swarmDir, by name.
func List(ctx context.Context, swarmDir string) ([]Summary, error) {
	sw, err := swarm.Open(swarmDir, swarm.Options{})
	if err != nil {
		return nil, err
	}
	loops, err := listLoops(ctx, &app{home: sw, dir: sw.Dir()})
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(loops))
	for _, lp := range loops {
		s := Summary{Name: lp.st.WorkerName, Status: lp.st.Status, WorkerStatus: lp.workerStatus,
			Iteration: lp.st.CurrentIteration, MaxIterations: lp.st.MaxIterations,
			Failures: lp.st.ConsecutiveFailures, TotalFailures: lp.st.TotalFailures}
		if lp.st.ExitReason != nil {
			s.ExitReason = *lp.st.ExitReason
		}
		out = append(out, s)
	}
	return out, nil
}

type listed struct {
	st           *State
	workerStatus string
}

// listLoops reads every ralph/<name>/state.json (names sorted), with its worker's status:
// running, stopped, or removed when it is not in state.json.
func listLoops(ctx context.Context, l *app) ([]listed, error) {
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
	var out []listed
	for _, name := range names {
		s := store{dir: l.dir, name: name, warn: l.warnf}
		st, err := s.load()
		if err != nil {
			if !errors.Is(err, errNoState) {
				l.warnf("%v", err)
			}
			continue
		}
		ws := "removed"
		if w, _ := l.home.Worker(st.WorkerName); w != nil {
			ws = "stopped"
			if l.home.Live(ctx, w).Running {
				ws = "running"
			}
		}
		out = append(out, listed{st: st, workerStatus: ws})
	}
	return out, nil
}

// app is one run of the tool: its name as a person types it, its streams, the swarm directory
// and the loop a verb names.
type app struct {
	tool       string   // "ralph" or "swarm ralph": how the verbs are typed
	prog       string   // "ralph" or "swarm": the prefix of its messages
	verbPrefix []string // this binary's arguments before a verb: nil, or ["ralph"] for swarm
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
	dir        statedir.Swarm
	opts       swarm.Options // how workers are started
	home       *swarm.Swarm
	st         store
}

func (l *app) warnf(format string, args ...any) {
	if l.stderr != nil {
		fmt.Fprintf(l.stderr, "%s: warning: %s\n", l.prog, fmt.Sprintf(format, args...))
	}
}

// open opens the swarm directory ($SWARM_DIR, else ~/.swarm, as swarm finds it). The loop's
// agents find it in their $SWARM_DIR, absolute, wherever they run.
func (l *app) open() error {
	d, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(d.Root)
	if err != nil {
		return err
	}
	o := l.opts
	o.Warnings = l.stderr
	o.Environ = setEnv(o.Environ, "SWARM_DIR", abs)
	if l.home, err = swarm.Open(abs, o); err != nil {
		return err
	}
	l.dir = l.home.Dir()
	return nil
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

func newApp(args []string, o swarm.Options, stdin io.Reader, stdout, stderr io.Writer) *app {
	tool := "ralph"
	if len(args) > 0 && args[0] != "" {
		tool = args[0]
	}
	l := &app{tool: tool, prog: strings.Fields(tool)[0], opts: o, stdin: stdin, stdout: stdout, stderr: stderr}
	if l.prog != "ralph" {
		l.verbPrefix = []string{"ralph"}
	}
	return l
}

// statedirName reports whether a directory under ralph/ can be a loop's (a worker name).
func statedirName(name string) bool { return statedir.CheckName(statedir.KindWorker, name) == nil }
