package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// SpawnSpec is a loop to start: its worker (the command, where it runs, in which tmux
// session), the prompt typed at each iteration and what ends the loop.
type SpawnSpec struct {
	Name       string   // the loop's and its worker's name
	PromptFile string   // the prompt typed at each iteration
	Cmd        []string // the agent's command line

	MaxIterations     int     // stop after this many iterations (the Python swarm's default: 50)
	InactivityTimeout int     // seconds without a screen change that restart an iteration (0: never)
	MaxContext        *int    // nudge at this context percentage, end the iteration at +15
	DonePattern       *string // a regular expression that ends the loop when the agent prints it
	// CheckDoneContinuous looks for the done pattern while the agent runs, not only when it
	// exits.
	CheckDoneContinuous bool

	Replace    bool // end a loop and worker of that name first (their worktree kept if it holds work)
	CleanState bool // start from a fresh loop state

	Session string  // the tmux session
	Socket  *string // the tmux socket name
	// Worktree runs the worker in a git worktree <repo>-worktrees/<name> (Branch, WorktreeDir);
	// else in Cwd (the current directory when empty).
	Worktree            bool
	Branch, WorktreeDir string
	Cwd                 string
	Tags                []string
	Env                 []string // K=V
	Profile             string   // the agent profile; default by the command
	// ReadyWait is how long the first iteration waits for the agent to be ready before the
	// prompt is typed (nil: the default, 30 s).
	ReadyWait *time.Duration
	// RecordDir is where the iterations' run records go (empty: <swarm dir>/state).
	RecordDir string
	// Heartbeat, HeartbeatExpire, HeartbeatMessage: swarm's heartbeat, as typed (durations).
	Heartbeat, HeartbeatExpire, HeartbeatMessage string

	// NoProgress is the no-progress breaker's N: the loop ends (failed, no-progress) after N
	// iterations in a row that made no commit and changed no file, or failed the same way
	// (nil: breaker.DefaultThreshold; 0: off).
	NoProgress *int

	// Rails are the loop's budget, calls per hour, --on-event hook and --commit-each (nil:
	// none). A budget or a hook is refused when the swarm directory is inside the tree the
	// agent works in: it could change them there.
	Rails *rails.Rails

	// Checked, when set, is called once the spec is found sound and before anything changes
	// (the command line's notes and warnings go there, before the spawn's own).
	Checked func()
}

// Spawned is a loop Spawn started: its first iteration's worker.
type Spawned struct {
	State  *State
	Worker *worker.Worker
}

// PatternError is a done pattern that is not a regular expression.
type PatternError struct{ Err error }

func (e *PatternError) Error() string { return e.Err.Error() }
func (e *PatternError) Unwrap() error { return e.Err }

// Spawn starts the loop sp: its state, its first iteration's worker, the prompt typed. It does
// not start the monitor (StartMonitor, RunMonitor). An existing worker or loop of the name is
// refused unless sp.Replace. Progress lines go to Options.Out, warnings to Options.Err.
func (ls *Loops) Spawn(ctx context.Context, sp SpawnSpec) (*Spawned, error) {
	sd, err := ls.spawn(ctx, sp)
	if err != nil && statedir.CheckName(statedir.KindWorker, sp.Name) == nil {
		// A spawn that wrote no state leaves no seal either (nor the directory it made).
		d := ls.base.dir
		if _, serr := os.Lstat(d.RalphState(sp.Name)); errors.Is(serr, os.ErrNotExist) {
			os.Remove(filepath.Join(d.RalphDir(sp.Name), sealFile))
			os.Remove(d.RalphDir(sp.Name))
		}
	}
	return sd, err
}

func (ls *Loops) spawn(ctx context.Context, sp SpawnSpec) (*Spawned, error) {
	if len(sp.Cmd) == 0 {
		return nil, errors.New("no command provided (use -- command...)")
	}
	if err := swarm.CheckName(sp.Name, true); err != nil {
		return nil, err
	}
	l, err := ls.at(sp.Name)
	if err != nil {
		return nil, err
	}
	name := sp.Name
	promptAbs, prompt, err := spawnPrompt(sp.PromptFile)
	if err != nil {
		return nil, err
	}
	if sp.DonePattern != nil {
		if _, err := regexp.Compile(*sp.DonePattern); err != nil {
			return nil, &PatternError{err}
		}
	}
	env, err := swarm.ParseEnv(sp.Env)
	if err != nil {
		return nil, err
	}
	if err := checkLoopRails(sp.Rails); err != nil {
		return nil, err
	}
	if sp.Rails.Guarded() && !sp.Worktree {
		cwd := sp.Cwd
		if cwd == "" {
			cwd = "."
		}
		if err := l.outsideTree(cwd); err != nil {
			return nil, err
		}
	}
	if sp.Checked != nil {
		sp.Checked()
	}
	recordDir, err := l.recordDir(sp.RecordDir)
	if err != nil {
		return nil, err
	}
	keep, err := l.makeRoom(ctx, sp)
	if err != nil {
		return nil, err
	}
	wsp, err := l.workerSpec(sp, env, keep)
	if err != nil {
		return nil, err
	}
	// The rails are sealed before the agent starts (rails.go).
	if err := l.writeSeal(sp.Rails, 0, nil); err != nil {
		return nil, fmt.Errorf("keeping the loop's rails: %v", err)
	}
	started := time.Now()
	w, err := l.spawnWorker(ctx, wsp, sp.Heartbeat)
	if err != nil {
		return nil, err
	}
	ws := loopWorker(sp, wsp, w)
	st := &State{WorkerName: name, PromptFile: promptAbs, MaxIterations: sp.MaxIterations, CurrentIteration: 1,
		Status: StatusRunning, Started: localISO(started), LastIterationStarted: localISO(started),
		IterationDurations: []int64{}, DonePattern: sp.DonePattern, InactivityTimeout: sp.InactivityTimeout,
		CheckDoneContinuous: sp.CheckDoneContinuous, RecordDir: recordDir, Worker: ws, MaxContext: sp.MaxContext,
		NoProgress: sp.NoProgress, Rails: sp.Rails.Clone()}
	if st.Rails.Guarded() && w.Worktree != nil {
		if err := l.outsideTree(w.Worktree.Path); err != nil {
			l.home.Stop(ctx, w)
			l.home.Remove(ctx, w)
			return nil, err
		}
	}
	if st.Rails != nil && st.Rails.MaxCallsPerHour > 0 {
		st.CallTimes = []string{utcISO(started)} // the first iteration is the first call
	}
	return l.startLoop(ctx, sp, st, w, started, prompt)
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
		l.closeLeft(ctx)
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

// outsideTree refuses a budget or a hook for a loop whose agent works in dir when the swarm
// directory, where the loop's state is, lies inside dir: the agent could change them there.
func (l *app) outsideTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, in := rails.Inside(abs, l.dir.Root); in {
		return fmt.Errorf("the swarm directory %s is inside %s, where the loop's agent works: it could change the loop's budget or hook there; set SWARM_DIR to a directory outside it", l.dir.Root, abs)
	}
	return nil
}

// startLoop writes the loop's state st for its first iteration on w (its start recorded and
// sealed, the breaker's first tree) and types the prompt into it.
func (l *app) startLoop(ctx context.Context, sp SpawnSpec, st *State, w *worker.Worker, started time.Time, prompt string) (*Spawned, error) {
	name := sp.Name
	if err := statedir.MkdirFor(l.dir.RalphStateLock(name)); err == nil {
		if start := l.recordStart(ctx, st); start != nil {
			// The start is sealed before the prompt is typed: abort --revert trusts only this.
			if err := l.writeSeal(sp.Rails, 0, start); err != nil {
				l.home.Stop(ctx, w)
				l.home.Remove(ctx, w)
				return nil, fmt.Errorf("keeping the loop's start: %v", err)
			}
		}
	}
	if st.NoProgressN() > 0 {
		// The tree the first iteration starts from: its agent waits for the prompt, not typed yet.
		tree, _ := breaker.Fingerprint(ctx, st.workDir(), l.dir.Root)
		st.Breaker = &breaker.State{Tree: tree}
	}
	if err := l.st.create(ctx, st); err != nil {
		l.home.Stop(ctx, w)
		l.home.Remove(ctx, w)
		return nil, fmt.Errorf("spawn failed: %v", err)
	}
	l.st.logEvent("START", "iteration 1/%d", st.MaxIterations)
	it := &iteration{n: 1, w: w, started: started}
	l.beginRecord(ctx, st, it, prompt)
	return l.firstPrompt(ctx, sp, st, it, prompt)
}
