package aiwg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/fsx"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/checkpoint"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
)

// stopWait is how long pause and abort wait for the iteration in flight to stop.
const stopWait = 20 * time.Second

// Pause pauses loop id (a person's pause: only Resume continues it) and returns once the
// iteration in flight is stopped (its controller stops it within 50 ms; it is killed if it does
// not stop) and the controller has left: from then on no agent of the loop starts. The stopped
// iteration is not counted; it runs again on resume. Pausing a paused loop changes nothing.
// It returns the loop's state then.
func (w Workspace) Pause(ctx context.Context, id string) (*State, error) {
	if err := w.Sweep(ctx, []string{id}); err != nil {
		return nil, err
	}
	st, pid, pidStart, err := w.controlLoop(ctx, id, func(st *State) (bool, error) {
		if st.Status == StatusPaused && st.PauseReason == PauseUser {
			return false, nil
		}
		if st.Status == StatusCrashed {
			return false, fmt.Errorf("loop %s is crashed (crashed is final; its agent may still work): 'ralph abort %s' stops its agent, 'ralph resume %s' restarts the loop from its last checkpoint", id, id, id)
		}
		if err := st.Transition(StatusPaused); err != nil {
			return false, err
		}
		// A loop waiting out a usage limit is now paused by a person: it waits for resume.
		st.PauseReason, st.ResumeAt = PauseUser, nil
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	// From here no iteration starts; the one in flight is stopped by its controller, and run
	// again on resume; the controller leaves (resume starts one).
	waitIterationGone(ctx, st)
	waitControllerGone(pid, pidStart, id)
	if cur, err := w.ReadState(id); err == nil {
		st = cur
	}
	return st, nil
}

// controlLoop is a control verb's change of loop id's state, under the workspace's lock:
// change edits it and says whether to save it. It returns the state, and its controller's pid
// and start time as they were before the change (an end clears them, and the controller is
// still there to wait for).
func (w Workspace) controlLoop(ctx context.Context, id string, change func(st *State) (bool, error)) (st *State, pid int, pidStart uint64, err error) {
	err = w.Locked(ctx, func(reg *Registry) error {
		var err error
		if st, err = w.ReadState(id); err != nil {
			return err
		}
		if st.PID != nil {
			pid, pidStart = *st.PID, st.PIDStart
		}
		save, err := change(st)
		if err != nil || !save {
			return err
		}
		return w.save(reg, st)
	})
	return st, pid, pidStart, err
}

// waitIterationGone waits until the supervisor of st's current iteration is gone, and stops it
// if its controller did not (a controller that died).
func waitIterationGone(ctx context.Context, st *State) {
	if st.Iteration < 1 || st.StateDir == "" {
		return
	}
	d := attempt.NewDir(st.StateDir)
	where := attempt.Where{Backend: supervise.BackendProcess}
	bead := Bead(st.LoopID, st.Iteration)
	if attempt.WaitGone(ctx, d, where, bead, stopWait) {
		return
	}
	stopIteration(ctx, st)
}

// stopIteration stops the supervisor of st's current iteration, if one lives, and waits for it.
func stopIteration(ctx context.Context, st *State) {
	if st.Iteration < 1 || st.StateDir == "" {
		return
	}
	d := attempt.NewDir(st.StateDir)
	where := attempt.Where{Backend: supervise.BackendProcess}
	bead := Bead(st.LoopID, st.Iteration)
	live, entry := attempt.Alive(ctx, d, where, bead)
	if !live {
		return
	}
	attempt.Stop(ctx, nil, entry, "", supervise.SignalKill)
	deadline := time.Now().Add(killGrace + 5*time.Second)
	attempt.WaitGone(ctx, d, where, bead, time.Until(deadline))
	// Its entry may be gone before WaitGone first looked (recorded, still exiting): the
	// process the entry named is waited for as well.
	for entry != nil && supervise.SupervisorAlive(entry.PID, bead) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// ResumeSpec is how a loop continues: ralph resume's flags.
type ResumeSpec struct {
	// MaxIterations, when not 0, is the loop's new limit.
	MaxIterations int
	// Timeout, when set, is the loop's new time from now (0: none), as AIWG's resume did.
	Timeout *time.Duration
	// Budget, when set, is the loop's new budget in USD: a loop paused at its budget goes on
	// only with one above what it spent.
	Budget *float64
	// Force resumes a crashed loop even with MaxConcurrent loops active (Runtime.Warn says so).
	Force bool
	// Foreground makes this process the loop's controller (the caller runs RunLoop next),
	// unless a controller waiting out a usage limit still lives and just goes on.
	Foreground bool
}

// Resumed is what Resume did.
type Resumed struct {
	// State is the loop's state as resumed.
	State *State
	// From is its status before: paused, or crashed (restored from its last checkpoint).
	From string
	// Foreground says that this process is now the loop's controller: run RunLoop.
	Foreground bool
}

// Resume continues loop id: a paused loop runs again, under a new controller (or the one that
// waits out a usage limit, which just goes on); a crashed one is restored from its last
// checkpoint (restore), the agents of the iterations after it stopped first. Anything else is
// refused with the table's words.
func (w Workspace) Resume(ctx context.Context, id string, spec ResumeSpec, rt Runtime) (*Resumed, error) {
	if err := w.Sweep(ctx, []string{id}); err != nil {
		return nil, err
	}
	var st *State
	var from string
	err := w.Locked(ctx, func(reg *Registry) error {
		cur, err := w.ReadState(id)
		if err != nil {
			return err
		}
		from = cur.Status
		pausedFor := cur.PauseReason // before the transition clears it
		switch cur.Status {
		case StatusPaused:
			if err := cur.Transition(StatusRunning); err != nil {
				return err
			}
			st = cur
		case StatusCrashed:
			if st, err = w.restore(reg, cur, spec.Force, rt); err != nil {
				return err
			}
			// An iteration past the checkpoint may still run under its own supervisor (it
			// outlives its controller): stopped, or two agents would work in one tree.
			for k := max(st.Iteration, 1); k <= cur.Iteration; k++ {
				stopIteration(ctx, &State{LoopID: id, StateDir: cur.StateDir, Iteration: k})
			}
			w.keepCrashCost(st, cur, rt)
		case StatusRunning, StatusCompleting:
			pid := 0
			if cur.PID != nil {
				pid = *cur.PID
			}
			return fmt.Errorf("loop %s is %s (controller pid %d): nothing to resume", id, cur.Status, pid)
		default:
			return fmt.Errorf("loop %s is %s: %s → %s is %w (%s)", id, cur.Status, cur.Status, StatusRunning, ErrTransition, allowed(cur.Status))
		}
		if st.Configuration.Interactive && !spec.Foreground {
			return fmt.Errorf("loop %s is interactive: it asks before each iteration on a terminal; resume it with --foreground", id)
		}
		if spec.MaxIterations > 0 {
			st.Configuration.MaxIterations = spec.MaxIterations
		}
		if spec.Timeout != nil {
			// A new timeout starts its clock now, as AIWG's resume did.
			st.setTimeout(*spec.Timeout)
			st.TimeoutFrom = stamp(time.Now())
		}
		if err := w.resumeBudget(st, from, pausedFor, spec.Budget, rt); err != nil {
			return err
		}
		switch {
		case controllerAlive(st):
			// A controller waiting out a usage limit: it sees the loop running and goes on.
		case spec.Foreground:
			setController(st, os.Getpid())
		default:
			child, err := w.spawnController(id, rt)
			if err != nil {
				return err
			}
			setController(st, child.Pid)
		}
		return w.save(reg, st)
	})
	if err != nil {
		return nil, err
	}
	return &Resumed{State: st, From: from, Foreground: spec.Foreground && *st.PID == os.Getpid()}, nil
}

// restore is the resume of a crashed loop: its state as its last checkpoint holds it (written
// while it ran, between two iterations), with the crash kept in error_context. Seed 003's table
// has no way out of crashed: this is not a status change of the crashed state but the loop
// taken back to an earlier state of its own, which ran. The active-loop limit holds as for a
// start. Without a checkpoint, or with one that cannot be read (rt.Warn says so), the loop
// restarts from its state at the crash, the iteration in flight run again. The caller holds
// the lock.
func (w Workspace) restore(reg *Registry, cur *State, force bool, rt Runtime) (*State, error) {
	if n := reg.activeCount(); n >= MaxConcurrent {
		if !force {
			return nil, fmt.Errorf("cannot resume loop %s: %d loops already active (max: %d); pass --force, or end one", cur.LoopID, n, MaxConcurrent)
		}
		rt.warn(fmt.Sprintf("%d loops already active (max: %d); --force resumes another", n, MaxConcurrent))
	}
	st, err := w.readCheckpoint(cur)
	switch {
	case err == nil:
	case os.IsNotExist(err):
		cp := *cur
		st = &cp // the iteration in flight runs again, under its number
	default:
		// A checkpoint that cannot be read (truncated, not gzip, not the loop's) is not a way
		// back: the loop continues from its state at the crash, as without one, and says so.
		rt.warn(fmt.Sprintf("loop %s: its last checkpoint cannot be read (%v); it continues from its state at the crash", cur.LoopID, err))
		cp := *cur
		st = &cp // the iteration in flight runs again, under its number
	}
	st.Status, st.ExitReason, st.PauseReason, st.ResumeAt, st.PausedAt, st.CompletedAt = StatusRunning, "", "", nil, nil, nil
	ec := ErrorContext{ErrorMessage: "crashed", ErrorTimestamp: stamp(time.Now())}
	if cur.ErrorContext != nil {
		ec = *cur.ErrorContext
	}
	ec.RecoveryAttempted = true
	st.ErrorContext = &ec
	// The loop's time ran while it was crashed: the clock restarts from the checkpoint's age.
	if cpAt, ok := parseStamp(st.LastUpdated); ok {
		from := st.TimeoutFrom
		if from == "" {
			from = st.StartedAt
		}
		if t, ok := parseStamp(from); ok {
			st.TimeoutFrom = stamp(t.Add(time.Since(cpAt).Truncate(time.Second)))
		}
	}
	// Iterations after the checkpoint did happen: kept, for the report, as rolled back (they
	// run again, and are not counted in the checkpoint's metrics).
	st.Iterations = append([]Iteration{}, cur.Iterations...)
	for k := range st.Iterations {
		if it := &st.Iterations[k]; it.Number > st.Iteration && (it.Outcome == OutcomeDone || it.Outcome == OutcomeFailed) {
			it.Outcome = OutcomeRolledBack
		}
	}
	return st, nil
}

// keepCrashCost keeps in st, restored from cur (a crashed loop), the money cur spent: the
// totals at the crash (the iterations after the checkpoint included, rolled back or not), and
// what the agent of the iteration in flight reported in its log before it was stopped (its
// controller died before it could record it). That iteration is recorded, interrupted.
func (w Workspace) keepCrashCost(st, cur *State, rt Runtime) {
	st.Metrics.TotalCostUSD, st.Metrics.TotalTokens = cur.Metrics.TotalCostUSD, cur.Metrics.TotalTokens
	k := cur.Iteration
	if k < 1 || iterationCounted(cur, k) || cur.StateDir == "" {
		return
	}
	bead := Bead(cur.LoopID, k)
	d := attempt.NewDir(cur.StateDir)
	run, err := record.ReadRun(d.Store.RunPath(bead))
	if err != nil {
		return // it never started
	}
	for _, it := range cur.Iterations {
		if it.Number == k && it.Attempt == run.Attempt {
			return // recorded (interrupted, or held by a usage limit) before the crash
		}
	}
	profile, _, err := rt.agent(cur.Agent)
	if err != nil {
		return
	}
	u := profile.ParseUsage(logTail(d.Layout.LogPath(bead)))
	it := Iteration{Number: k, Bead: bead, Attempt: run.Attempt, StartedAt: run.StartedAt, FinishedAt: stamp(time.Now()),
		Outcome: OutcomeInterrupted, Reason: "in flight when its controller crashed", ExitCode: run.ExitCode,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	if t, ok := parseStamp(run.StartedAt); ok {
		it.DurationSeconds = round2(time.Since(t).Seconds())
	}
	if u.HasCost {
		c := u.CostUSD
		it.CostUSD = &c
	}
	st.Iterations = append(st.Iterations, it)
	addCost(&st.Metrics, it)
}

// NextIteration is the number of the iteration the loop runs next: the current one again when
// it started and did not end counted (stopped by a pause, held by a usage limit, in flight at
// a crash), else the one after it.
func (st *State) NextIteration() int {
	if st.Iteration > 0 && !iterationCounted(st, st.Iteration) {
		return st.Iteration
	}
	return st.Iteration + 1
}

// iterationCounted reports whether iteration i has a counted outcome in st.
func iterationCounted(st *State, i int) bool {
	for _, it := range st.Iterations {
		if it.Number == i && (it.Outcome == OutcomeDone || it.Outcome == OutcomeFailed) {
			return true
		}
	}
	return false
}

// Abort ends loop id for good (aborted) and returns once the iteration in flight is stopped
// and the controller has left: nothing changes the working tree after it returns. The tree is
// left as the agent left it; Revert resets it. A crashed loop stays crashed (the status is
// final), but the agent its dead controller left at work is stopped, and exit_reason and
// error_context say so.
func (w Workspace) Abort(ctx context.Context, id string) (*State, error) {
	if err := w.Sweep(ctx, []string{id}); err != nil {
		return nil, err
	}
	st, pid, pidStart, err := w.controlLoop(ctx, id, func(st *State) (bool, error) {
		if st.Status == StatusCrashed {
			// Crashed is final (seed 003's table), but the agent of the iteration in flight
			// outlived its controller and may still work in the tree: abort stops it, and the
			// state says so; the status stays crashed.
			now := time.Now()
			ec := ErrorContext{ErrorMessage: "crashed", ErrorTimestamp: stamp(now)}
			if st.ErrorContext != nil {
				ec = *st.ErrorContext
			}
			ec.ErrorMessage += fmt.Sprintf("; aborted at %s: the agent of iteration %d was stopped", stamp(now), st.Iteration)
			st.ErrorContext = &ec
			st.ExitReason = StatusAborted
			return true, nil
		}
		if err := st.Transition(StatusAborted); err != nil {
			return false, err
		}
		st.ExitReason = StatusAborted
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if st.Status == StatusCrashed {
		stopIteration(ctx, st) // no controller is left to stop it
		return st, nil
	}
	// The controller sees aborted and stops the agent; wait for both, so that nothing changes
	// the working tree once abort returns.
	waitIterationGone(ctx, st)
	waitControllerGone(pid, pidStart, id)
	return st, nil
}

// Revert resets the working tree of an ended loop st to where it started: HEAD then (git
// reset --hard), the uncommitted changes then re-applied, and the untracked files the loop
// added removed (.aiwg, where the loops live, is never touched). Where it started is the
// loop's seal's (rt.SealDir), outside the workspace: state.json and untracked-at-start are in
// the workspace, where the agent can write them, so they must agree with the seal, and HEAD
// must descend from the start, or nothing is touched (sealedStart).
func (w Workspace) Revert(ctx context.Context, st *State, rt Runtime) error {
	start, err := w.sealedStart(ctx, st, rt)
	if err != nil {
		return fmt.Errorf("loop %s is aborted, but nothing is reverted: %w", st.LoopID, err)
	}
	if err := revertTree(ctx, w, st.LoopID, start); err != nil {
		return fmt.Errorf("loop %s is aborted, but its changes are not reverted: %w", st.LoopID, err)
	}
	return nil
}

// waitControllerGone waits for a loop's old controller to leave; one that does not is killed.
func waitControllerGone(pid int, start uint64, id string) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	probe := &State{LoopID: id, PID: &pid, PIDStart: start}
	deadline := time.Now().Add(stopWait)
	for time.Now().Before(deadline) {
		if !controllerAlive(probe) {
			return
		}
		time.Sleep(pollEvery)
	}
	if controllerAlive(probe) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Short is a commit's name as ralph prints it: its first 12 hex digits.
func Short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// untrackedFile keeps the files git did not track when the loop started: --revert removes only
// the untracked files the loop added.
const untrackedFile = "untracked-at-start"

// maxUntracked bounds that list: a tree with more untracked files than fit in 4 MiB keeps no
// list, and --revert then removes no untracked file.
const maxUntracked = 4 << 20

// recordStart keeps what --revert restores: the uncommitted changes (git stash create, which
// changes nothing) and the untracked files, in the loop's directory. It returns them for the
// loop's seal (nil outside git).
func recordStart(ctx context.Context, ws Workspace, st *State) *startPoint {
	if st.StartCommit == "" {
		return nil
	}
	start := &startPoint{Commit: st.StartCommit}
	if out, err := git(ctx, ws.Root, "stash", "create"); err == nil {
		st.StartStash = strings.TrimSpace(string(out))
		start.Stash = st.StartStash
	}
	if out, err := git(ctx, ws.Root, "ls-files", "--others", "--exclude-standard", "-z"); err == nil && len(out) < maxUntracked {
		if fsx.WriteFileAtomic(filepath.Join(ws.LoopDir(st.LoopID), untrackedFile), out, 0o600) == nil {
			start.UntrackedSHA256 = sha256Hex(out)
		}
	}
	return start
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sealedStart is where loop st started, from its seal, once checked: state.json's start_commit
// and start_stash must be the seal's, untracked-at-start must be the list the seal has the
// digest of, the stash must be of the start, and HEAD must descend from the start. A loop
// without a sealed start (no SealDir, or started before starts were sealed) is not reverted.
func (w Workspace) sealedStart(ctx context.Context, st *State, rt Runtime) (*startPoint, error) {
	s, ok, err := w.readSeal(rt, st.LoopID)
	if err != nil {
		return nil, err
	}
	if !ok || s.Start == nil {
		if st.StartCommit == "" {
			return nil, fmt.Errorf("%s was not a git repository with a commit when the loop started: nothing to reset to", w.Root)
		}
		where := rt.sealPath(st.LoopID)
		if where == "" {
			where = "$SWARM_DIR/aiwg ($SWARM_DIR cannot be told)"
		}
		return nil, fmt.Errorf("the loop's start is not sealed in %s (a loop started before ralph sealed starts, or under another $SWARM_DIR): reset the tree by hand", where)
	}
	sp := s.Start
	if sp.Commit != st.StartCommit || sp.Stash != st.StartStash {
		return nil, fmt.Errorf("state.json's start (start_commit %q, start_stash %q) is not the one sealed when the loop started (%s, %s): it was changed behind ralph's back",
			Short(st.StartCommit), Short(st.StartStash), Short(sp.Commit), Short(sp.Stash))
	}
	if err := checkpoint.CheckStart(ctx, w.Root, sp.Commit); err != nil {
		return nil, err
	}
	if sp.Stash != "" {
		if !checkpoint.ObjectName(sp.Stash) {
			return nil, fmt.Errorf("the sealed stash %q is not a commit's full name", sp.Stash)
		}
		parent, _ := git(ctx, w.Root, "rev-parse", "--verify", "-q", sp.Stash+"^1")
		if strings.TrimSpace(string(parent)) != sp.Commit {
			return nil, fmt.Errorf("the stash %s of the start is not of its commit %s", Short(sp.Stash), Short(sp.Commit))
		}
	}
	if sp.UntrackedSHA256 != "" {
		b, err := statedir.ReadFile(filepath.Join(w.LoopDir(st.LoopID), untrackedFile), maxUntracked)
		if err != nil || sha256Hex(b) != sp.UntrackedSHA256 {
			return nil, fmt.Errorf("%s is not the list of untracked files sealed when the loop started: it was changed behind ralph's back", untrackedFile)
		}
	}
	return sp, nil
}

// revertTree resets the working tree to where loop id started (sp, checked): HEAD then (git
// reset --hard), the uncommitted changes then re-applied, and the untracked files the loop
// added removed (.aiwg, where the loops live, is never touched; with no list of the start's,
// none is removed).
func revertTree(ctx context.Context, ws Workspace, id string, sp *startPoint) error {
	// The list is read before anything changes (it is in .aiwg, which a reset leaves alone, but
	// checked against the seal just now).
	var before map[string]bool
	if sp.UntrackedSHA256 != "" {
		b, err := statedir.ReadFile(filepath.Join(ws.LoopDir(id), untrackedFile), maxUntracked)
		if err != nil || sha256Hex(b) != sp.UntrackedSHA256 {
			return fmt.Errorf("%s changed while the revert read it", untrackedFile)
		}
		before = map[string]bool{}
		for _, f := range bytes.Split(b, []byte{0}) {
			before[string(f)] = true
		}
	}
	if _, err := git(ctx, ws.Root, "reset", "-q", "--hard", sp.Commit); err != nil {
		return err
	}
	if before != nil {
		out, err := git(ctx, ws.Root, "ls-files", "--others", "--exclude-standard", "-z")
		if err != nil {
			return err
		}
		for _, f := range bytes.Split(out, []byte{0}) {
			name := string(f)
			if name == "" || before[name] || name == ".aiwg" || strings.HasPrefix(name, ".aiwg/") {
				continue
			}
			os.Remove(filepath.Join(ws.Root, name)) // a link is removed, never followed
		}
	}
	if sp.Stash != "" {
		if _, err := git(ctx, ws.Root, "stash", "apply", "-q", sp.Stash); err != nil {
			return fmt.Errorf("re-applying the uncommitted changes of the start (%s): %w", Short(sp.Stash), err)
		}
	}
	return nil
}

// git runs git in dir (internal/git's Run, with no input).
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitx.Run(ctx, dir, "", args...)
}

// resumeBudget sets the budget of loop st, resumed from status from (paused for pauseReason),
// in its seal and its state, when budget is set; a loop paused at its budget is refused unless
// the budget (new or kept) is above what the loop spent. The caller holds the lock.
func (w Workspace) resumeBudget(st *State, from, pauseReason string, budget *float64, rt Runtime) error {
	s, sealed, err := w.readSeal(rt, st.LoopID)
	if err != nil {
		return err
	}
	rails, spent := railsOf(st), st.Metrics.TotalCostUSD
	if sealed {
		rails, spent = s.Rails, max(spent, s.SpentUSD)
	}
	if budget != nil {
		b := *budget
		rails.BudgetUSD = &b
	}
	if from == StatusPaused && pauseReason == PauseBudget && rails.BudgetUSD != nil && spent >= *rails.BudgetUSD {
		return fmt.Errorf("loop %s is paused at its budget ($%.4f spent of $%.2f): resume it with a higher one, ralph resume %s --budget USD",
			st.LoopID, spent, *rails.BudgetUSD, st.LoopID)
	}
	if budget == nil {
		return nil
	}
	st.Rails = railsPtr(rails)
	if !sealed {
		return nil
	}
	s.Rails = rails
	return w.storeSeal(rt, s)
}
