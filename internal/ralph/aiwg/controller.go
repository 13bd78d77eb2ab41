package aiwg

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/supervise"
)

// A loop's controller is the process that runs its iterations (RunLoop): ralph start
// --foreground itself, or ralph start __run LOOP_ID in the background. Every decision it takes
// (start the next iteration, pause, end) is taken under the workspace's lock on the state as it
// is on disk, so a pause or an abort written by another process before that moment always
// wins: no iteration starts after `ralph pause|abort` returned, and no stale copy of the state
// is ever written over theirs.

// defaultLimitWait is how long a usage-limit pause lasts when the message names no reset time.
const defaultLimitWait = 15 * time.Minute

// pollEvery is how often a controller looks at its state while an iteration runs or while it
// waits out a usage limit: the latency of pause and abort, and between two iterations.
const pollEvery = 50 * time.Millisecond

// controller is one loop's controlling process at work.
type controller struct {
	ws   Workspace
	id   string
	rt   Runtime
	log  io.Writer
	me   int
	stop atomic.Bool // SIGINT or SIGTERM: pause (interrupted) and leave
	// criteria is the completion command, as the loop's seal keeps it (seal.go), taken when
	// the controller starts: never the one the state says later.
	criteria string
	// limits are the loop's iteration cap and timeout as the controller first read them under
	// the lock (Start and Resume set them, with a person's options, before they let it go):
	// the agent, which can write state.json, must not lift them (holdLimits).
	limits    loopLimits
	limitsSet bool
	// ended: this controller completed the loop (its check passed); the next look leaves.
	ended bool
	// ledger is the loop's rails, what it spent and its agent's calls, as the seal keeps them
	// (rails.go); hook is told the loop's transitions (nil: no --on-event); started says the
	// hook was told this controller's first iteration.
	ledger  ledger
	hook    *hook.Hook
	started bool
}

// loopLimits are what ends a loop that never passes its check, and how it runs: whether it
// asks a person before each iteration (interactive) and runs its check after a failed one
// (autoTest).
type loopLimits struct {
	maxIterations          int
	timeoutSeconds         int64
	timeoutFrom, startedAt string
	noProgress             int
	interactive, autoTest  bool
}

func limitsOf(st *State) loopLimits {
	return loopLimits{st.Configuration.MaxIterations, st.TimeoutSeconds, st.TimeoutFrom, st.StartedAt, st.NoProgressN(),
		st.Configuration.Interactive, st.Configuration.AutoTest}
}

// holdLimits puts the controller's limits back into st when st says others, with a line in the
// controller's log; it reports whether it changed st.
func (c *controller) holdLimits(st *State) bool {
	if !c.limitsSet {
		c.limits, c.limitsSet = limitsOf(st), true
	}
	if limitsOf(st) == c.limits {
		return false
	}
	fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json's iteration cap, timeout or configuration was changed behind the controller's back; the loop's own are kept\n", c.id)
	st.Configuration.MaxIterations, st.TimeoutSeconds, st.TimeoutFrom, st.StartedAt =
		c.limits.maxIterations, c.limits.timeoutSeconds, c.limits.timeoutFrom, c.limits.startedAt
	st.Configuration.Interactive, st.Configuration.AutoTest = c.limits.interactive, c.limits.autoTest
	if st.NoProgressN() != c.limits.noProgress {
		n := c.limits.noProgress
		st.NoProgress = &n
	}
	return true
}

// holdStatus undoes an end the state claims while this controller still runs the loop: only
// the controller itself completes or fails a loop (after its check, or at a limit), and it
// leaves at once when it does; a loop found completed, completing, failed or crashed under
// its pid was written so by someone else, the agent most likely. (A person's pause and abort
// are states the controller obeys.) It reports whether it changed st.
func (c *controller) holdStatus(st *State) bool {
	if c.ended {
		return false
	}
	switch st.Status {
	case StatusCompleting, StatusCompleted, StatusFailed, StatusCrashed:
	default:
		return false
	}
	fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json says %s behind the controller's back; only the controller ends a loop, it goes on\n", c.id, st.Status)
	st.Status, st.ExitReason, st.CompletedAt = StatusRunning, "", nil
	return true
}

// action is what the controller does next.
type action int

const (
	actExit action = iota
	actWait
	actIterate
)

// RunLoop is loop id's controller at work, in this process: it runs the loop's iterations
// until the loop ends or is paused by a person (or this process gets SIGINT or SIGTERM, which
// pause it: interrupted), and returns the loop's status then. The loop's state must name this
// process as its controller (Start or Resume with Foreground, or a background controller
// started by them); once it names another, RunLoop leaves.
func (w Workspace) RunLoop(ctx context.Context, id string, rt Runtime) (string, error) {
	c := &controller{ws: w, id: id, rt: rt, log: rt.log(), me: os.Getpid()}
	sealed, ok, err := w.readSeal(rt, id)
	if err != nil {
		c.giveUp(err)
		return "", err
	}
	if ok {
		c.criteria = sealed.CompletionCriteria
		c.ledger.fromSeal(sealed)
	} else {
		// No seal (a loop started without a SealDir): the state's, as this controller first
		// reads it, held from then on.
		st, err := w.ReadState(id)
		if err != nil {
			return "", err
		}
		c.criteria = st.CompletionCriteria
		c.ledger.rails, c.ledger.spent = railsOf(st), st.Metrics.TotalCostUSD
	}
	c.startHook()
	defer c.hook.Close() // the events told so far are run, each within its bound
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		signal.Stop(sigs)
		close(sigs)
	}()
	go func() {
		for range sigs {
			c.stop.Store(true)
		}
	}()
	for {
		act, st, err := c.next()
		if err != nil {
			c.giveUp(err)
			return "", err
		}
		switch act {
		case actExit:
			return st.Status, nil
		case actWait:
			time.Sleep(pollEvery * 4)
			continue
		}
		i := st.Iteration
		res := c.iterate(ctx, st, i)
		if err := c.finish(ctx, i, res); err != nil {
			c.giveUp(err)
			return "", err
		}
		if res.fatal || res.it.Reason == supervise.ReasonStartFailed {
			// The agent cannot start, or its attempt cannot be set up: every iteration would
			// fail the same way, at once.
			err := fmt.Errorf("iteration %d: the agent could not be started: %s", i, res.it.Reason)
			c.giveUp(err)
			return "", err
		}
		if goOn, err := c.askToGoOn(ctx, i, res); err != nil || !goOn {
			if err != nil {
				c.giveUp(err)
			}
			return StatusPaused, err
		}
	}
}

// giveUp records an error that stops the controller where the loop's state can say it (the
// loop is then failed); when even that fails, the next look finds it crashed.
func (c *controller) giveUp(cause error) {
	fmt.Fprintf(c.log, "ralph: error: loop %s: %v\n", c.id, cause)
	c.ws.Locked(context.Background(), func(reg *Registry) error {
		st, err := c.ws.ReadState(c.id)
		if err != nil || !c.mine(st) || !CanTransition(st.Status, StatusFailed) {
			return err
		}
		st.Transition(StatusFailed)
		st.ExitReason = "error"
		st.ErrorContext = &ErrorContext{ErrorMessage: cause.Error(), ErrorTimestamp: stamp(time.Now())}
		c.finalCheckpoint(st)
		if err := c.ws.save(reg, st); err != nil {
			return err
		}
		c.event(hook.Failure, st, st.Iteration, "error: "+cause.Error(), filepath.Join(c.ws.LoopDir(c.id), "controller.log"))
		return nil
	})
}

// noProgress counts iteration res into st's no-progress breaker and, when it opens, records
// the loop's end (exit_reason no-progress) and reports true. The baseline of the first count
// is the tree as the iteration found it.
func (c *controller) noProgress(st *State, res iterResult) bool {
	if st.Breaker == nil {
		st.Breaker = &breaker.State{Tree: res.before}
	}
	o := breaker.Observation{Tree: res.after, Failed: res.it.Outcome == OutcomeFailed, Tail: res.tail}
	if res.it.ExitCode != nil {
		o.Exit = *res.it.ExitCode
	}
	open, why := st.Breaker.Observe(o, st.NoProgressN())
	if !open {
		return false
	}
	st.ExitReason = breaker.Reason
	st.ErrorContext = &ErrorContext{ErrorMessage: "no progress: " + why, ErrorTimestamp: stamp(time.Now())}
	fmt.Fprintf(c.log, "%s loop %s: no progress: %s; the loop ends\n", stamp(time.Now()), c.id, why)
	return true
}

// finalCheckpoint writes the checkpoint of a loop that ends failed ("at the end", as for one
// that completes: it had none, issue 19), named after its last iteration. A checkpoint that
// cannot be written is said in the log; the loop ends failed all the same.
func (c *controller) finalCheckpoint(st *State) {
	if err := c.ws.checkpoint(st, st.Iteration); err != nil {
		fmt.Fprintf(c.log, "%s loop %s: its final checkpoint: %v\n", stamp(time.Now()), c.id, err)
	}
}

// mine reports whether st names this process as its controller (a resumed loop may have
// another by now).
func (c *controller) mine(st *State) bool { return st.PID != nil && *st.PID == c.me }

// next decides, under the lock, what to do: start iteration st.Iteration (already recorded as
// started), wait (a usage-limit pause), or leave.
func (c *controller) next() (action, *State, error) {
	var act action
	var out *State
	err := c.ws.Locked(context.Background(), func(reg *Registry) error {
		st, err := c.ws.ReadState(c.id)
		if err != nil {
			return err
		}
		out = st
		if !c.mine(st) {
			act = actExit // another controller took the loop over (ralph resume)
			return nil
		}
		// Saved with whatever this decides; every branch saves, or leaves.
		c.holdCriteria(st)
		c.holdLimits(st)
		c.holdStatus(st)
		c.refresh()
		c.holdRails(st)
		act, err = c.decide(reg, st)
		return err
	})
	return act, out, err
}

// decide is next's decision on st, read under the lock, saved in reg unless it leaves st as
// it is.
func (c *controller) decide(reg *Registry, st *State) (action, error) {
	if c.stop.Load() && (st.Status == StatusRunning || st.Status == StatusPaused) {
		if st.Status == StatusRunning {
			st.Transition(StatusPaused)
		}
		// Interrupted, even while it waited out a usage limit: no controller is left to
		// continue it at resume_at, ralph resume does.
		st.PauseReason, st.ResumeAt = PauseInterrupted, nil
		st.PID, st.PIDStart = nil, 0
		return actExit, c.ws.save(reg, st)
	}
	now := time.Now()
	switch st.Status {
	case StatusPaused:
		if act, resumed, err := c.resumeIfDue(reg, st, now); !resumed || err != nil {
			return act, err
		}
	case StatusRunning:
	default:
		return actExit, nil
	}
	// An iteration that started and did not end counted (paused, interrupted, held by a
	// usage limit, or in flight at a crash) runs again under its own number: the counter
	// never goes down.
	rerun := st.NextIteration() == st.Iteration
	if reason, msg := c.limitReached(st, now, rerun); reason != "" {
		return actExit, c.endAtLimit(reg, st, now, reason, msg)
	}
	if c.budgetReached() {
		return actExit, c.pauseForBudget(reg, st, now)
	}
	if at, full := c.callsFull(now); full {
		return actWait, c.pauseForCalls(reg, st, now, at)
	}
	if !rerun {
		st.Iteration++
	}
	if n := c.ledger.rails.MaxCallsPerHour; n > 0 {
		// The last n starts are all the limit needs.
		c.ledger.calls.Max = n
		c.ledger.calls.Note(now)
		c.saveLedger()
	}
	if err := c.ws.save(reg, st); err != nil {
		return actIterate, err
	}
	if !c.started {
		c.started = true
		c.event(hook.Start, st, st.Iteration, "", "")
	}
	return actIterate, nil
}

// resumeIfDue looks at a paused loop: one a person paused is left (ralph resume starts a
// controller again), one paused by a limit waits until its resume_at and then runs again
// (resumed).
func (c *controller) resumeIfDue(reg *Registry, st *State, now time.Time) (act action, resumed bool, err error) {
	if !selfResuming(st.PauseReason) {
		st.PID, st.PIDStart = nil, 0
		return actExit, false, c.ws.save(reg, st)
	}
	if at, ok := parseStamp(deref(st.ResumeAt)); ok && now.Before(at) {
		return actWait, false, nil
	}
	if st.PauseReason == PauseCalls {
		fmt.Fprintf(c.log, "%s loop %s: an hour has passed since the oldest call; the loop goes on\n", stamp(now), c.id)
	} else {
		fmt.Fprintf(c.log, "%s loop %s: the usage limit has reset; iteration %d again\n", stamp(now), c.id, st.Iteration)
	}
	if err := st.Transition(StatusRunning); err != nil {
		return actExit, false, err
	}
	return actIterate, true, nil
}

// endAtLimit ends the loop failed for reason (its timeout, or its iterations used up).
func (c *controller) endAtLimit(reg *Registry, st *State, now time.Time, reason, msg string) error {
	if err := st.Transition(StatusFailed); err != nil {
		return err
	}
	st.ExitReason = reason
	st.ErrorContext = &ErrorContext{ErrorMessage: msg, ErrorTimestamp: stamp(now)}
	c.finalCheckpoint(st)
	if err := c.ws.save(reg, st); err != nil {
		return err
	}
	c.event(hook.End, st, st.Iteration, reason, "")
	return nil
}

// pauseForBudget pauses the loop whose budget is spent. A person raises it (ralph resume
// --budget): no controller waits.
func (c *controller) pauseForBudget(reg *Registry, st *State, now time.Time) error {
	if err := st.Transition(StatusPaused); err != nil {
		return err
	}
	st.PauseReason, st.PID, st.PIDStart = PauseBudget, nil, 0
	b := *c.ledger.rails.BudgetUSD
	fmt.Fprintf(c.log, "%s loop %s: its budget is spent ($%.4f of $%.2f); paused: 'ralph resume %s --budget USD' raises it\n", stamp(now), c.id, c.ledger.spent, b, c.id)
	if err := c.ws.save(reg, st); err != nil {
		return err
	}
	c.event(hook.Limit, st, st.Iteration, fmt.Sprintf("budget: $%.4f of $%.2f spent", c.ledger.spent, b), "")
	return nil
}

// pauseForCalls pauses the loop until at, when the oldest of its calls within the hour is an
// hour old; this controller waits for it.
func (c *controller) pauseForCalls(reg *Registry, st *State, now, at time.Time) error {
	if err := st.Transition(StatusPaused); err != nil {
		return err
	}
	s := stamp(at)
	st.PauseReason, st.ResumeAt = PauseCalls, &s
	fmt.Fprintf(c.log, "%s loop %s: %d calls within the hour; paused until %s\n", stamp(now), c.id, c.ledger.rails.MaxCallsPerHour, s)
	if err := c.ws.save(reg, st); err != nil {
		return err
	}
	c.event(hook.Limit, st, st.Iteration, fmt.Sprintf("calls-per-hour: %d calls within the hour; resumes at %s", c.ledger.rails.MaxCallsPerHour, s), "")
	return nil
}

// limitReached says whether the loop must end before another iteration: its timeout passed, or
// its iterations are used up.
func (c *controller) limitReached(st *State, now time.Time, rerun bool) (reason, msg string) {
	if dl, ok := deadline(st); ok && !now.Before(dl) {
		return "timeout", fmt.Sprintf("the loop's timeout (%s) passed before the completion command passed", time.Duration(st.TimeoutSeconds)*time.Second)
	}
	if n := st.Iteration; n > st.Configuration.MaxIterations || n == st.Configuration.MaxIterations && !rerun {
		return "max-iterations", fmt.Sprintf("%d iterations ran and the completion command did not pass", st.Configuration.MaxIterations)
	}
	return "", ""
}

// deadline is when the loop's timeout ends, counted from its start.
func deadline(st *State) (time.Time, bool) {
	if st.TimeoutSeconds <= 0 {
		return time.Time{}, false
	}
	from := st.TimeoutFrom
	if from == "" {
		from = st.StartedAt
	}
	start, ok := parseStamp(from)
	if !ok {
		return time.Time{}, false
	}
	return start.Add(time.Duration(st.TimeoutSeconds) * time.Second), true
}

// finish records iteration i's outcome under the lock; if it counts, it runs the completion
// command and records its check, and a pass ends the loop: completing, then completed.
func (c *controller) finish(ctx context.Context, i int, res iterResult) error {
	counted, cur, err := c.recordIteration(ctx, i, res)
	if err != nil || !counted || !c.mine(cur) {
		return err
	}
	fmt.Fprintf(c.log, "%s iteration %d: %s (exit %s, %.1f s, cost %s)\n", stamp(time.Now()), i, res.it.Outcome,
		exitOf(res.it.ExitCode), res.it.DurationSeconds, cost(res.it.CostUSD))
	// --no-auto-test: the tests run only after an iteration whose agent ended done, not after
	// one that failed (it cannot have finished the task).
	checked := c.limits.autoTest || res.it.Outcome == OutcomeDone
	var check Check
	if checked {
		check = c.check(ctx, cur, i)
	} else {
		fmt.Fprintf(c.log, "%s iteration %d: the completion command is not run after a failed iteration (--no-auto-test)\n", stamp(time.Now()), i)
	}
	return c.recordCheck(ctx, i, res, check, checked)
}

// recordIteration adds iteration i to the loop's state, under the lock, and says whether it
// counts (it was not interrupted or held by a usage limit). cur is the state as read.
func (c *controller) recordIteration(ctx context.Context, i int, res iterResult) (counted bool, cur *State, err error) {
	err = c.ws.Locked(ctx, func(reg *Registry) error {
		st, err := c.ws.ReadState(c.id)
		if err != nil {
			return err
		}
		cur = st
		if !c.mine(st) {
			return nil
		}
		c.holdCriteria(st) // the agent worked in the workspace meanwhile
		c.refresh()
		c.holdRails(st)
		c.spend(res.it)
		c.saveLedger()
		st.Iterations = append(st.Iterations, res.it)
		var ev *hookEvent
		switch {
		case res.it.Outcome == OutcomeUsageLimit:
			// The same iteration again, not a failure: its number stays (next runs it again).
			addCost(&st.Metrics, res.it)
			if st.Status == StatusRunning {
				if ev, err = c.pauseForUsage(st, res.resetAt); err != nil {
					return err
				}
			}
		case res.it.Outcome == OutcomeInterrupted:
			addCost(&st.Metrics, res.it) // what it spent was spent
		default:
			counted = true
			if res.it.Outcome != OutcomeDone {
				ev = &hookEvent{hook.Failure, res.it.Reason}
			}
			countIteration(st, res)
		}
		if err := c.ws.save(reg, st); err != nil {
			return err
		}
		if ev != nil {
			c.event(ev.name, st, i, ev.reason, res.log)
		}
		return nil
	})
	return counted, cur, err
}

// pauseForUsage pauses the running loop whose agent hit a usage limit, until resetAt (or
// defaultLimitWait from now when the message named no time), and returns the hook's event.
func (c *controller) pauseForUsage(st *State, resetAt time.Time) (*hookEvent, error) {
	if err := st.Transition(StatusPaused); err != nil {
		return nil, err
	}
	at := resetAt
	if at.IsZero() {
		at = time.Now().Add(defaultLimitWait)
	}
	s := stamp(at)
	st.PauseReason, st.ResumeAt = PauseUsageLimit, &s
	fmt.Fprintf(c.log, "%s loop %s: the agent hit a usage limit; paused until %s\n", stamp(time.Now()), c.id, s)
	return &hookEvent{hook.Limit, "usage limit; resumes at " + s}, nil
}

// countIteration adds a counted iteration, the last of st.Iterations, to the loop's metrics.
func countIteration(st *State, res iterResult) {
	m := &st.Metrics
	m.TotalIterations++
	if res.madeProgress() {
		m.SuccessfulIterations++
	}
	if res.it.Outcome != OutcomeDone {
		m.FailedIterations++
	}
	addCost(m, res.it)
	var secs float64
	for _, it := range st.Iterations {
		if it.Outcome == OutcomeDone || it.Outcome == OutcomeFailed {
			secs += it.DurationSeconds
		}
	}
	m.TotalDurationSeconds = int64(secs + 0.5)
	m.AverageIterationTimeSeconds = round2(secs / float64(m.TotalIterations))
}

// check runs the completion command after iteration i (cur is the loop's state), stopping it
// when the loop is interrupted, no longer runs or is taken over, and logs its verdict.
func (c *controller) check(ctx context.Context, cur *State, i int) Check {
	check := runCheck(ctx, cur, i, c.rt.Env, func() bool {
		st, err := c.ws.ReadState(c.id)
		return c.stop.Load() || (err == nil && (st.Status != StatusRunning || !c.mine(st)))
	})
	verdict := "failed"
	if check.Passed {
		verdict = "passed"
	}
	fmt.Fprintf(c.log, "%s iteration %d: the completion command %s (exit %d)\n", stamp(time.Now()), i, verdict, check.ExitCode)
	return check
}

// recordCheck records, under the lock, the check run after iteration i (when checked): a pass
// completes the loop, and a loop that made no progress for too long fails. Either ends with a
// checkpoint, as every CheckpointInterval-th iteration does.
func (c *controller) recordCheck(ctx context.Context, i int, res iterResult, check Check, checked bool) error {
	return c.ws.Locked(ctx, func(reg *Registry) error {
		st, err := c.ws.ReadState(c.id)
		if err != nil {
			return err
		}
		if !c.mine(st) {
			return nil
		}
		c.holdCriteria(st)
		if checked {
			addCheck(st, check)
		}
		var ev *hookEvent
		ended := false
		if check.Passed && st.Status == StatusRunning {
			ended = true
			if err := st.Transition(StatusCompleting); err != nil {
				return err
			}
			if err := c.ws.save(reg, st); err != nil {
				return err
			}
			if err := st.Transition(StatusCompleted); err != nil {
				return err
			}
			st.ExitReason = StatusCompleted
			c.ended = true
			ev = &hookEvent{hook.End, StatusCompleted}
		}
		if !ended && st.Status == StatusRunning && c.noProgress(st, res) {
			if err := st.Transition(StatusFailed); err != nil {
				return err
			}
			ended = true // its final checkpoint below
			ev = &hookEvent{hook.Breaker, breaker.Reason + ": " + st.ErrorContext.ErrorMessage}
		}
		if every := st.Configuration.CheckpointInterval; ended || (every > 0 && i%every == 0) {
			if err := c.ws.checkpoint(st, i); err != nil {
				return err
			}
		}
		if err := c.ws.save(reg, st); err != nil {
			return err
		}
		if ev != nil {
			c.event(ev.name, st, i, ev.reason, res.log)
		}
		return nil
	})
}

// addCheck adds check to the loop's progress. The last check's output is kept whole
// (maxCheckOutput) for the next prompt; older ones shrink to their end, so a long loop's state
// stays small to read.
func addCheck(st *State, check Check) {
	if n := len(st.Progress.CompletionChecks); n > 0 {
		prev := &st.Progress.CompletionChecks[n-1]
		prev.Output = tailString(prev.Output, maxOldCheckOutput)
	}
	st.Progress.CompletionChecks = append(st.Progress.CompletionChecks, check)
	last := check
	st.Progress.LastCompletionCheck = &last
}

// hookEvent is a transition to tell the hook once it is recorded.
type hookEvent struct{ name, reason string }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// addCost adds what iteration it spent to m: every iteration's, counted or not (one interrupted
// by a pause, held by a usage limit, in flight at a crash), for the money was spent.
func addCost(m *Metrics, it Iteration) {
	m.TotalTokens += it.InputTokens + it.OutputTokens
	if it.CostUSD != nil {
		m.TotalCostUSD += *it.CostUSD
	}
}

// askToGoOn asks the person at the loop's terminal, for an --interactive loop whose controller
// has one (Runtime.Ask: ralph start or resume --foreground), whether the next iteration runs
// once iteration i has ended with the loop still running. An answer of no pauses the loop
// (pause_reason user: ralph resume goes on) and reports false. Without a terminal, or for a
// loop that ended, nothing is asked.
func (c *controller) askToGoOn(ctx context.Context, i int, res iterResult) (bool, error) {
	if !c.limits.interactive || c.rt.Ask == nil {
		return true, nil
	}
	st, err := c.ws.ReadState(c.id)
	if err != nil || st.Status != StatusRunning || !c.mine(st) || st.NextIteration() > c.limits.maxIterations {
		return true, nil // the next look decides (it ends a loop at its cap)
	}
	if c.rt.Ask(fmt.Sprintf("iteration %d: %s, the completion command did not pass; run iteration %d? [Y/n] ", i, res.it.Outcome, st.NextIteration())) {
		return true, nil
	}
	paused := false
	err = c.ws.Locked(ctx, func(reg *Registry) error {
		st, err := c.ws.ReadState(c.id)
		if err != nil || st.Status != StatusRunning || !c.mine(st) {
			return err
		}
		if err := st.Transition(StatusPaused); err != nil {
			return err
		}
		st.PauseReason, st.PID, st.PIDStart = PauseUser, nil, 0
		paused = true
		fmt.Fprintf(c.log, "%s loop %s: paused at the terminal after iteration %d\n", stamp(time.Now()), c.id, i)
		return c.ws.save(reg, st)
	})
	return !paused, err
}
