package aiwg

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
)

// stopWait is how long pause and abort wait for the iteration in flight to stop.
const stopWait = 20 * time.Second

func runSupervisor(ctx context.Context, args []string) error {
	flags, ops, err := parseArgs(args, flagSpec{"state-dir": true, "handoff": true})
	if err != nil || len(ops) != 1 || flags["handoff"] == "" || flags["state-dir"] == "" {
		return cli.Usagef("ralph start %s is started by ralph, not by hand", supervisorVerb)
	}
	return attempt.Supervise(ctx, flags["state-dir"], flags["handoff"], ops[0], os.Stdout, nil)
}

func pauseCmd(ctx context.Context, args []string, stdout io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"loop-id": true})
	if err != nil {
		return err
	}
	ws, id, err := sweptLoop(ctx, flags, ops)
	if err != nil {
		return err
	}
	st, pid, pidStart, err := controlLoop(ctx, ws, id, func(st *State) (bool, error) {
		if st.Status == StatusPaused && st.PauseReason == PauseUser {
			return false, nil
		}
		if err := st.Transition(StatusPaused); err != nil {
			return false, err
		}
		// A loop waiting out a usage limit is now paused by a person: it waits for resume.
		st.PauseReason, st.ResumeAt = PauseUser, nil
		return true, nil
	})
	if err != nil {
		return err
	}
	// From here no iteration starts; the one in flight is stopped by its controller, and run
	// again on resume; the controller leaves (resume starts one).
	waitIterationGone(ctx, st)
	waitControllerGone(pid, pidStart, id)
	if cur, err := ws.ReadState(id); err == nil {
		st = cur
	}
	fmt.Fprintf(stdout, "Loop %s paused after %d of at most %d iterations; 'ralph resume %s' continues it\n",
		id, st.Metrics.TotalIterations, st.Configuration.MaxIterations, id)
	return nil
}

// controlLoop is a control verb's change of loop id's state, under the workspace's lock:
// change edits it and says whether to save it. It returns the state, and its controller's pid
// and start time as they were before the change (an end clears them, and the controller is
// still there to wait for).
func controlLoop(ctx context.Context, ws Workspace, id string, change func(st *State) (bool, error)) (st *State, pid int, pidStart uint64, err error) {
	err = ws.Locked(ctx, func(reg *Registry) error {
		var err error
		if st, err = ws.ReadState(id); err != nil {
			return err
		}
		if st.PID != nil {
			pid, pidStart = *st.PID, st.PIDStart
		}
		save, err := change(st)
		if err != nil || !save {
			return err
		}
		return ws.save(reg, st)
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
	attempt.WaitGone(ctx, d, where, bead, killGrace+5*time.Second)
}

func resumeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"loop-id": true, "max-iterations": true, "timeout": true, "force": false, "foreground": false})
	if err != nil {
		return err
	}
	maxIter, err := positiveFlag(flags, "max-iterations", 0)
	if err != nil {
		return err
	}
	var timeout time.Duration
	if v, ok := flags["timeout"]; ok {
		if timeout, err = parseTimeout(v); err != nil {
			return err
		}
	}
	foreground := flags["foreground"] == "true"
	ws, id, err := sweptLoop(ctx, flags, ops)
	if err != nil {
		return err
	}
	var st *State
	var from string
	err = ws.Locked(ctx, func(reg *Registry) error {
		cur, err := ws.ReadState(id)
		if err != nil {
			return err
		}
		from = cur.Status
		switch cur.Status {
		case StatusPaused:
			if err := cur.Transition(StatusRunning); err != nil {
				return err
			}
			st = cur
		case StatusCrashed:
			if st, err = ws.restore(reg, cur, flags["force"] == "true", stderr); err != nil {
				return err
			}
			// An iteration past the checkpoint may still run under its own supervisor (it
			// outlives its controller): stopped, or two agents would work in one tree.
			for k := st.Iteration + 1; k <= cur.Iteration; k++ {
				stopIteration(ctx, &State{LoopID: id, StateDir: cur.StateDir, Iteration: k})
			}
		case StatusRunning, StatusCompleting:
			pid := 0
			if cur.PID != nil {
				pid = *cur.PID
			}
			return fmt.Errorf("loop %s is %s (controller pid %d): nothing to resume", id, cur.Status, pid)
		default:
			return fmt.Errorf("loop %s is %s: %s → %s is %w (%s)", id, cur.Status, cur.Status, StatusRunning, ErrTransition, allowed(cur.Status))
		}
		if maxIter > 0 {
			st.Configuration.MaxIterations = maxIter
		}
		if _, ok := flags["timeout"]; ok {
			// A new timeout starts its clock now, as AIWG's resume did.
			st.TimeoutSeconds, st.TimeoutFrom, st.Configuration.TimeoutMinutes = int64(timeout/time.Second), stamp(time.Now()), nil
			if timeout > 0 {
				mins := int64((timeout + time.Minute - 1) / time.Minute)
				st.Configuration.TimeoutMinutes = &mins
			}
		}
		switch {
		case controllerAlive(st):
			// A controller waiting out a usage limit: it sees the loop running and goes on.
		case foreground:
			setController(st, os.Getpid())
		default:
			child, err := spawnController(ws, id)
			if err != nil {
				return err
			}
			setController(st, child.Process.Pid)
			child.Process.Release()
		}
		return ws.save(reg, st)
	})
	if err != nil {
		return err
	}
	how := "resumed"
	if from == StatusCrashed {
		how = "restored from " + deref(st.LastCheckpoint)
		if st.LastCheckpoint == nil {
			how = "restarted (it had no checkpoint)"
		}
	}
	fmt.Fprintf(stdout, "Loop %s %s: iteration %d of at most %d next\n", id, how, st.Iteration+1, st.Configuration.MaxIterations)
	if foreground && *st.PID == os.Getpid() {
		return foregroundResult(runLoop(ctx, ws, id, stderr))
	}
	return nil
}

// restore is the resume of a crashed loop: its state as its last checkpoint holds it (written
// while it ran, between two iterations), with the crash kept in error_context. Seed 003's table
// has no way out of crashed: this is not a status change of the crashed state but the loop
// taken back to an earlier state of its own, which ran. The active-loop limit holds as for a
// start. Without a checkpoint the loop restarts from its state at the crash, the iteration in
// flight run again. The caller holds the lock.
func (w Workspace) restore(reg *Registry, cur *State, force bool, stderr io.Writer) (*State, error) {
	if n := reg.activeCount(); n >= MaxConcurrent {
		if !force {
			return nil, fmt.Errorf("cannot resume loop %s: %d loops already active (max: %d); pass --force, or end one", cur.LoopID, n, MaxConcurrent)
		}
		fmt.Fprintf(stderr, "ralph: warning: %d loops already active (max: %d); --force resumes another\n", n, MaxConcurrent)
	}
	st, err := w.readCheckpoint(cur)
	switch {
	case err == nil:
	case os.IsNotExist(err):
		cp := *cur
		st = &cp
		if st.Iteration > 0 && !iterationCounted(st, st.Iteration) {
			st.Iteration--
		}
	default:
		return nil, fmt.Errorf("loop %s: %w; its state.json is as it was at the crash", cur.LoopID, err)
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

// iterationCounted reports whether iteration i has a counted outcome in st.
func iterationCounted(st *State, i int) bool {
	for _, it := range st.Iterations {
		if it.Number == i && (it.Outcome == OutcomeDone || it.Outcome == OutcomeFailed) {
			return true
		}
	}
	return false
}

func abortCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"loop-id": true, "revert": false, "keep-changes": false, "force": false})
	if err != nil {
		return err
	}
	revert := flags["revert"] == "true"
	if revert && flags["keep-changes"] == "true" {
		return cli.Usagef("--revert and --keep-changes exclude each other: give one")
	}
	ws, id, err := sweptLoop(ctx, flags, ops)
	if err != nil {
		return err
	}
	st, pid, pidStart, err := controlLoop(ctx, ws, id, func(st *State) (bool, error) {
		if err := st.Transition(StatusAborted); err != nil {
			return false, err
		}
		st.ExitReason = StatusAborted
		return true, nil
	})
	if err != nil {
		return err
	}
	// The controller sees aborted and stops the agent; wait for both, so that nothing changes
	// the working tree once abort returns.
	waitIterationGone(ctx, st)
	waitControllerGone(pid, pidStart, id)
	fmt.Fprintf(stdout, "Loop %s aborted after %d iterations\n", id, st.Metrics.TotalIterations)
	if !revert {
		return nil
	}
	if err := revertTree(ctx, ws, st); err != nil {
		return fmt.Errorf("loop %s is aborted, but its changes are not reverted: %w", id, err)
	}
	fmt.Fprintf(stdout, "Working tree reset to %s, where the loop started\n", short(st.StartCommit))
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

func short(commit string) string {
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
// changes nothing) and the untracked files, in the loop's directory.
func recordStart(ctx context.Context, ws Workspace, st *State) {
	if st.StartCommit == "" {
		return
	}
	if out, err := git(ctx, ws.Root, "stash", "create"); err == nil {
		st.StartStash = strings.TrimSpace(string(out))
	}
	if out, err := git(ctx, ws.Root, "ls-files", "--others", "--exclude-standard", "-z"); err == nil && len(out) < maxUntracked {
		fsx.WriteFileAtomic(filepath.Join(ws.LoopDir(st.LoopID), untrackedFile), out, 0o600)
	}
}

// revertTree resets the working tree to where the loop started: HEAD then (git reset --hard),
// the uncommitted changes then re-applied, and the untracked files the loop added removed
// (.aiwg, where the loops live, is never touched).
func revertTree(ctx context.Context, ws Workspace, st *State) error {
	if st.StartCommit == "" {
		return fmt.Errorf("%s was not a git repository with a commit when the loop started: nothing to reset to", ws.Root)
	}
	if _, err := git(ctx, ws.Root, "reset", "-q", "--hard", st.StartCommit); err != nil {
		return err
	}
	before := map[string]bool{}
	b, err := statedir.ReadFile(filepath.Join(ws.LoopDir(st.LoopID), untrackedFile), maxUntracked)
	if err == nil {
		for _, f := range bytes.Split(b, []byte{0}) {
			before[string(f)] = true
		}
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
	if st.StartStash != "" {
		if _, err := git(ctx, ws.Root, "stash", "apply", "-q", st.StartStash); err != nil {
			return fmt.Errorf("re-applying the uncommitted changes of the start (%s): %w", short(st.StartStash), err)
		}
	}
	return nil
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
