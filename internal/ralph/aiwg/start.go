package aiwg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
)

// StartSpec is a loop to start: ralph start's operand and flags.
type StartSpec struct {
	// Task is what the agent is asked to do; Completion the command that exits 0 once it is
	// done.
	Task, Completion string
	// MaxIterations and CheckpointInterval are at least 1.
	MaxIterations      int
	CheckpointInterval int
	// Timeout is the loop's time (whole seconds); 0 for none.
	Timeout time.Duration
	// Agent is the agent as --agent gives it (AGENT[:MODEL]), resolved by Runtime.Agent.
	Agent string
	// StateDir is where the iterations' run and result records go ("" for the workspace's
	// .aiwg/ralph/state); made absolute.
	StateDir string
	// Force starts the loop even with MaxConcurrent loops active (Runtime.Warn says so).
	Force bool
	// Foreground records this process as the loop's controller: the caller runs RunLoop
	// next. Otherwise a background controller (Runtime.Controller) is started.
	Foreground bool
	// NoProgress is the no-progress breaker's N (nil: breaker.DefaultThreshold; 0: off).
	NoProgress *int
	// Rails are the loop's timeouts per iteration and for inactivity, budget, calls per hour
	// and hook (rails.go).
	Rails rails.Rails
	// Interactive (seed 003's configuration.interactive) asks a person before each iteration
	// after the first (Runtime.Ask); it needs Foreground. NoAutoTest (auto_test false) runs
	// the completion command only after an iteration whose agent ended done. ExecutionMode is
	// seed 003's execution_mode, recorded ("" : default).
	Interactive   bool
	NoAutoTest    bool
	ExecutionMode string
}

// ExecutionModes are seed 003's execution_mode values.
var ExecutionModes = []string{"strict", "seeded", "logged", "default"}

// NewID makes a loop id as AIWG did: ralph-<slug>-<8 hex>, the slug the task lower-cased with
// every run of other characters one '-', trimmed, at most 30 characters ("loop" when nothing
// is left).
func NewID(task string) string {
	var rnd [4]byte
	rand.Read(rnd[:])
	return "ralph-" + slug(task) + "-" + hex.EncodeToString(rnd[:])
}

// slug is a loop id's middle: task lower-cased, every run of other characters one '-',
// trimmed, at most 30 characters ("loop" when nothing is left).
func slug(task string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(task) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 30 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 30 {
		s = strings.Trim(s[:30], "-")
	}
	if s == "" {
		s = "loop"
	}
	return s
}

// Start records a new loop (running) and starts its controller, or, with Foreground, makes
// this process its controller (the caller then runs RunLoop). The count of active loops and
// the registration are one step under the workspace's lock: of eight starts at once, exactly
// MaxConcurrent succeed. It returns the loop's state as recorded.
func (w Workspace) Start(ctx context.Context, spec StartSpec, rt Runtime) (*State, error) {
	mode := spec.ExecutionMode
	if mode == "" {
		mode = "default"
	}
	if !slices.Contains(ExecutionModes, mode) {
		return nil, fmt.Errorf("execution mode %q: one of %s", mode, strings.Join(ExecutionModes, ", "))
	}
	if spec.Interactive && !spec.Foreground {
		return nil, errors.New("an interactive loop asks before each iteration on this terminal: run it with --foreground")
	}
	if err := w.checkRunnable(ctx, spec, rt); err != nil {
		return nil, err
	}
	stateDir := spec.StateDir
	if stateDir == "" {
		stateDir = w.DefaultStateDir()
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}

	now := time.Now()
	st := &State{Version: "2.0.0", LoopID: NewID(spec.Task), Status: StatusRunning, Task: spec.Task,
		CompletionCriteria: spec.Completion, StartedAt: stamp(now), Owner: owner(), WorkingDirectory: w.Root,
		Configuration: Configuration{MaxIterations: spec.MaxIterations, Interactive: spec.Interactive, AutoTest: !spec.NoAutoTest,
			CheckpointInterval: spec.CheckpointInterval, ExecutionMode: mode},
		NoProgress: spec.NoProgress,
		Rails:      railsPtr(spec.Rails),
		Progress:   Progress{CompletionChecks: []Check{}}, Agent: spec.Agent, StateDir: stateDir,
		StartCommit: headCommit(ctx, w.Root), Iterations: []Iteration{}}
	st.setTimeout(spec.Timeout)

	err = w.Locked(ctx, func(reg *Registry) error {
		if err := w.sweepDead(reg); err != nil {
			return err
		}
		if n := reg.activeCount(); n >= MaxConcurrent {
			if !spec.Force {
				return fmt.Errorf("cannot create loop: %d loops already active (max: %d). Adding another would create %d communication paths (REF-088). Use --force to start it anyway, or end one ('ralph list' shows them)",
					n, MaxConcurrent, (n+1)*n/2)
			}
			rt.warn(fmt.Sprintf("%d loops already active (max: %d); --force starts another", n, MaxConcurrent))
		}
		return w.register(ctx, reg, st, spec.Foreground, rt)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// checkRunnable refuses a loop whose iterations would all fail at full speed: its agent's
// command cannot be run, or --commit-each is asked for outside a git repository.
func (w Workspace) checkRunnable(ctx context.Context, spec StartSpec, rt Runtime) error {
	profile, _, err := rt.agent(spec.Agent)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(profile.Command); err != nil {
		return fmt.Errorf("agent %s: its command %q cannot be run (%v); install it, or fix its entry in the agents config", profile.Name, profile.Command, err)
	}
	if spec.Rails.CommitEach {
		if _, err := git(ctx, w.Root, "rev-parse", "--is-inside-work-tree"); err != nil {
			return fmt.Errorf("--commit-each: %s is not in a git repository; run git init there, or leave --commit-each out", w.Root)
		}
	}
	return nil
}

// sweepDead is the next look at the registry's active loops, under the lock: a dead one frees
// its place before the count, and one whose directory is gone is dropped.
func (w Workspace) sweepDead(reg *Registry) error {
	for _, e := range append([]RegistryEntry{}, reg.ActiveLoops...) {
		if cur, err := w.ReadState(e.LoopID); err == nil && looksDead(cur) {
			if err := w.markDead(reg, cur); err != nil {
				return err
			}
		} else if err != nil && os.IsNotExist(err) {
			reg.drop(e.LoopID) // its directory is gone: nothing to count
		}
	}
	return nil
}

// register makes the new loop st's directory and seal, gives it a controller (this process,
// foreground, else one started now) and saves it in reg, under the lock. Whatever fails
// leaves no directory and no controller behind.
func (w Workspace) register(ctx context.Context, reg *Registry, st *State, foreground bool, rt Runtime) error {
	if err := statedir.Mkdir(filepath.Join(w.Dir(), "loops")); err != nil {
		return err
	}
	if err := os.Mkdir(w.LoopDir(st.LoopID), 0o700); err != nil {
		return err
	}
	if err := w.writeSeal(rt, st, recordStart(ctx, w, st)); err != nil {
		os.RemoveAll(w.LoopDir(st.LoopID))
		return err
	}
	var child *proc.Child
	if foreground {
		setController(st, os.Getpid())
	} else {
		// Started under the lock, so it is registered with its pid before anyone can look;
		// it waits for the lock before it reads its state.
		c, err := w.spawnController(st.LoopID, rt)
		if err != nil {
			os.RemoveAll(w.LoopDir(st.LoopID))
			return err
		}
		child = c
		setController(st, c.Pid)
	}
	if err := w.save(reg, st); err != nil {
		if child != nil {
			child.Kill()
		}
		os.RemoveAll(w.LoopDir(st.LoopID))
		return err
	}
	return nil
}

// setTimeout sets the loop's time: timeout_seconds exactly, configuration.timeout_minutes
// rounded up (none for 0).
func (st *State) setTimeout(timeout time.Duration) {
	st.TimeoutSeconds, st.Configuration.TimeoutMinutes = int64(timeout/time.Second), nil
	if timeout > 0 {
		mins := int64((timeout + time.Minute - 1) / time.Minute)
		st.Configuration.TimeoutMinutes = &mins
	}
}

// setController records pid as st's controlling process, with its start time.
func setController(st *State, pid int) {
	st.PID = &pid
	st.PIDStart, _ = proc.StartTime(pid)
}

// spawnController starts a loop's controller (rt.Controller and the loop id) detached
// (proc.StartDetached: a session of its own, so it outlives the terminal and the shell that
// ran ralph start), its output in the loop's controller.log.
func (w Workspace) spawnController(id string, rt Runtime) (*proc.Child, error) {
	if len(rt.Controller) == 0 {
		return nil, errors.New("no command line to start a loop's controller with")
	}
	logf, err := os.OpenFile(filepath.Join(w.LoopDir(id), "controller.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c, err := proc.StartDetached(append(slices.Clip(rt.Controller), id), proc.Detached{Dir: w.Root, Env: rt.Env, Output: logf})
	if err != nil {
		return nil, fmt.Errorf("starting the loop's controller: %w", err)
	}
	return c, nil
}

// drop removes id's entry without counting it (its loop is gone).
func (reg *Registry) drop(id string) {
	for i, e := range reg.ActiveLoops {
		if e.LoopID == id {
			reg.ActiveLoops = append(reg.ActiveLoops[:i], reg.ActiveLoops[i+1:]...)
			return
		}
	}
}

func owner() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := os.Getenv("USER"); v != "" {
		return v
	}
	return "unknown"
}

// headCommit is HEAD of the repository at dir, "" outside git or before the first commit.
func headCommit(ctx context.Context, dir string) string {
	head, err := gitx.Cmd{Dir: dir}.Output(ctx, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return head
}

// railsPtr is r as State.Rails keeps it: nil for none.
func railsPtr(r rails.Rails) *rails.Rails {
	if r.Equal(nil) {
		return nil
	}
	return &r
}
