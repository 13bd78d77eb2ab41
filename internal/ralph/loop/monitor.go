package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// The monitor's rule: control always wins. Every change it makes to the loop's state is a
// locked read-modify-write of only the fields it means to change (store.update), so a pause,
// stop or kill written meanwhile is never overwritten; and it decides to start an iteration under
// that same lock, in the same update that counts it (START), so once a pause/stop/kill has
// returned no iteration starts. A stop or kill also waits for the monitor to be gone before it
// stops the worker, so no worker the monitor was starting outlives it.

// maxFailures in a row stop the loop, as in the Python swarm; the wait after a failure is
// backoffFor(n) units of Options.Backoff.
const maxFailures = 5

func backoffFor(n int) int64 {
	b := int64(1) << min(n-1, 9)
	return min(b, 300)
}

// promptReadyWait is how long an iteration waits for the agent to be ready before it types the
// prompt anyway (the Python swarm's 30 s).
const promptReadyWait = 30 * time.Second

// iteration is the one being watched.
type iteration struct {
	n       int
	w       *worker.Worker
	started time.Time
	offset  int64 // where the agent's words begin in its output log
	// stopped: the monitor stopped this worker itself (timeout, compaction, context, done).
	stopped bool
	// costed: its agent's cost is counted (account).
	costed bool
}

// monitor runs the loop until it ends, is paused (after the current iteration), stopped, or the
// monitor is told to go (SIGINT, SIGHUP).
func (l *app) monitor(ctx context.Context) error {
	unlock, err := l.st.takeMonitorLock(ctx)
	if err != nil {
		return err
	}
	// The lock goes before the hook's last events are waited for (each bounded): a stop
	// waits for the lock, and a hook that hangs must not hold it up.
	defer func() {
		unlock()
		if l.held != nil {
			l.held.hook.Close()
		}
	}()
	// Signals are caught before the pid is recorded: from then on a stop may send one.
	wake := make(chan struct{}, 1)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, signalLook)
	defer signal.Stop(sigs)
	pid := os.Getpid()
	st, err := l.claim(ctx, pid)
	if err != nil {
		return err
	}
	l.hold(st)
	if !st.StartEventSent {
		l.sendStart(ctx)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go l.obey(sigs, wake, cancel)

	runErr := l.run(ctx, wake)
	l.leave(pid)
	if st, err := l.st.load(); err == nil {
		l.endEvent(st)
	}
	return runErr
}

// claim records pid as the loop's monitor, unless the loop is not running (then the error
// says what to do).
func (l *app) claim(ctx context.Context, pid int) (*State, error) {
	var refuse error
	st, err := l.st.update(ctx, func(st *State) error {
		switch st.Status {
		case StatusPaused:
			refuse = fmt.Errorf("ralph loop for '%s' is paused (use '%s resume %s' first)", l.st.name, l.tool, l.st.name)
		case StatusRunning:
		default:
			refuse = fmt.Errorf("ralph loop for '%s' has status '%s'", l.st.name, st.Status)
		}
		if refuse != nil {
			return fsx.ErrUnchanged
		}
		st.MonitorPID = &pid
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refuse != nil {
		return nil, refuse
	}
	return st, nil
}

// sendStart sends the loop's start event, once in its life: the state notes it was sent, so a
// monitor started again does not send it twice.
func (l *app) sendStart(ctx context.Context) {
	if st, err := l.st.update(ctx, func(st *State) error {
		if st.StartEventSent {
			return fsx.ErrUnchanged
		}
		st.StartEventSent = true
		return nil
	}); err == nil && st.StartEventSent {
		l.event(hook.Start, st.CurrentIteration, st.Status, "")
	}
}

// obey acts on the signals the monitor catches: SIGTERM pauses the loop (after the current
// iteration), SIGINT and SIGHUP and a stop (signalLook) cancel the monitor; each wakes it.
func (l *app) obey(sigs chan os.Signal, wake chan struct{}, cancel context.CancelFunc) {
	for sig := range sigs {
		switch sig {
		case syscall.SIGTERM:
			l.sayf("received SIGTERM, pausing loop (current agent will complete)")
			l.st.update(context.Background(), func(st *State) error {
				if st.Status != StatusRunning {
					return fsx.ErrUnchanged
				}
				st.Status = StatusPaused
				l.st.logEvent("PAUSE", "loop paused reason=sigterm")
				return nil
			})
		case syscall.SIGINT, syscall.SIGHUP:
			cancel()
		case signalLook:
			// Stopped, killed or cleaned: whatever the monitor is doing (starting a worker,
			// waiting for it to be ready, a backoff) ends now; the stopper waits for it.
			if st, err := l.st.load(); err != nil || st.Status == StatusStopped || st.Status == StatusFailed {
				cancel()
			}
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// leave is the monitor's last step: its pid goes from the state, and a loop left running with
// its worker alive is recorded as monitor_disconnected (the Python swarm's check).
func (l *app) leave(pid int) {
	ctx := context.Background()
	w, _ := l.home.Worker(l.st.name)
	alive := w != nil && l.home.Live(ctx, w).Running
	disconnected := false
	l.st.update(ctx, func(st *State) error {
		if st.MonitorPID != nil && *st.MonitorPID == pid {
			st.MonitorPID = nil
		}
		if st.Status == StatusRunning && st.ExitReason == nil && alive {
			st.Status, st.ExitReason = StatusStopped, strp(ReasonDisconnected)
			l.st.logEvent("DISCONNECT", "monitor disconnected (worker still running)")
			disconnected = true
		}
		return nil
	})
	if disconnected {
		l.sayf("monitor disconnected (worker still running)")
	}
}

// sayf prints a "[ralph] NAME: ..." line, as the Python monitor did.
func (l *app) sayf(format string, args ...any) {
	fmt.Fprintf(l.stdout, "[ralph] %s: %s\n", l.st.name, fmt.Sprintf(format, args...))
}

// errStop ends the loop quietly: its state already says why.
var errStop = errors.New("loop ended")

func (l *app) run(ctx context.Context, wake chan struct{}) error {
	rerun := false
	for ctx.Err() == nil {
		st, err := l.st.load()
		if err != nil {
			if errors.Is(err, errNoState) {
				return nil // cleaned away
			}
			return err
		}
		var it *iteration
		w, _ := l.home.Worker(l.st.name)
		if w != nil && st.isCurrent(w) && st.EndedIter < st.CurrentIteration && !rerun {
			// The current iteration's worker (started by spawn, or by a monitor before this
			// one): watch it, or record the end it had while no one watched.
			it = &iteration{n: st.CurrentIteration, w: w, offset: st.PromptOffset, started: time.Now()}
			if t, ok := parseISO(st.LastIterationStarted); ok {
				it.started = t
			}
		} else {
			it, err = l.startIteration(ctx, wake, rerun)
			if errors.Is(err, errStop) {
				return nil
			}
			if err != nil {
				return err
			}
			if it == nil {
				continue // a failed start, counted and waited for
			}
		}
		res := l.watch(ctx, wake, it)
		rerun = false
		switch next, err := l.finish(ctx, wake, it, res); {
		case errors.Is(err, errStop):
			return nil
		case err != nil:
			return err
		case next == nextRerun:
			rerun = true
		}
		if st, err := l.st.load(); err == nil && st.Status == StatusPaused {
			l.sayf("paused, exiting loop")
			return nil
		} else if err == nil && st.Status != StatusRunning {
			return nil
		}
	}
	return nil
}

// isCurrent reports whether w is the worker of the loop's current iteration: its
// ralph_iteration says so, or (a monitor killed between the spawn and that note) it has none and
// was started after the iteration was.
func (st *State) isCurrent(w *worker.Worker) bool {
	if st.CurrentIteration <= 0 {
		return false
	}
	if n := iterationOf(w); n != 0 {
		return n == st.CurrentIteration
	}
	ws, ok1 := parseISO(w.Started)
	is, ok2 := parseISO(st.LastIterationStarted)
	return ok1 && ok2 && !ws.Before(is)
}

// iterationOf is the loop iteration a worker was started for (its ralph_iteration metadata).
func iterationOf(w *worker.Worker) int {
	var n int
	if !w.Meta("ralph_iteration", &n) {
		return 0
	}
	return n
}

// startIteration counts and starts the next iteration (or, with rerun, the current one again
// after a usage limit). The decision is taken under the state's lock: only a running loop
// starts one, and a loop at its maximum ends here, after its last iteration ended.
func (l *app) startIteration(ctx context.Context, wake chan struct{}, rerun bool) (*iteration, error) {
	st, err := l.st.load()
	if err != nil {
		return nil, err
	}
	prompt, err := readPrompt(st.PromptFile)
	if err != nil {
		fmt.Fprintf(l.stderr, "%s: error: %v\n", l.prog, err)
		l.st.update(ctx, func(st *State) error {
			if st.Status != StatusRunning {
				return fsx.ErrUnchanged
			}
			st.Status = StatusFailed
			return nil
		})
		return nil, errStop
	}
	if err := l.waitLimit(ctx, wake); err != nil {
		return nil, err
	}
	if err := l.waitCalls(ctx, wake, rerun); err != nil {
		return nil, err
	}
	st, n, err := l.countIteration(ctx, rerun)
	if err != nil {
		return nil, err
	}
	l.sayf("starting iteration %d/%d", n, st.MaxIterations)
	it, err := l.launch(ctx, st, n, prompt)
	if err == nil {
		return it, nil
	}
	if ctx.Err() != nil {
		return nil, errStop
	}
	// A start that failed: counted as a failure, with the backoff; 5 in a row end the loop.
	fmt.Fprintf(l.stderr, "%s: error: failed to spawn worker: %v\n", l.prog, err)
	l.st.logEvent("ERROR", "iteration %d: failed to spawn worker: %s", n, oneLine(err.Error()))
	return nil, l.failed(ctx, wake, n, 1, true)
}

// countIteration counts the iteration to start (the next, or with rerun the current one again)
// in one locked update of the state, and returns the state and its number; errStop, said why,
// when the loop is not running or ends here (at its maximum, or over its budget).
func (l *app) countIteration(ctx context.Context, rerun bool) (*State, int, error) {
	var n int
	var why string
	st, err := l.st.update(ctx, func(st *State) error {
		n, why = 0, ""
		switch {
		case st.Status != StatusRunning:
			why = st.Status
			return fsx.ErrUnchanged
		case !rerun && st.CurrentIteration >= st.MaxIterations:
			why = ReasonMax
			st.Status, st.ExitReason = StatusStopped, strp(ReasonMax)
			l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", st.CurrentIteration, ReasonMax)
			return nil
		case l.held.overBudget():
			why = ReasonBudget
			l.keepRails(st)
			st.Status, st.ExitReason = StatusStopped, strp(ReasonBudget)
			l.st.logEvent("WARN", "iteration %d: the budget is reached: $%s of $%s", st.CurrentIteration,
				rails.Money(l.held.cost), rails.Money(*l.held.budget()))
			l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", st.CurrentIteration, ReasonBudget)
			return nil
		}
		if !rerun {
			st.CurrentIteration++
		}
		n = st.CurrentIteration
		now := time.Now()
		l.keepRails(st)
		l.noteCall(st, now)
		st.LastIterationStarted = localISO(now)
		st.ContextNudgeSent = false
		st.PromptOffset = 0
		l.st.logEvent("START", "iteration %d/%d", n, st.MaxIterations)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	switch why {
	case "":
		return st, n, nil
	case StatusPaused:
		l.sayf("paused, exiting loop")
	case ReasonMax:
		l.sayf("loop complete after %d iterations", st.CurrentIteration)
	case ReasonBudget:
		l.sayf("budget reached ($%s of $%s), stopping loop", rails.Money(l.held.cost), rails.Money(*l.held.budget()))
	}
	return nil, 0, errStop
}

// failed counts a failed iteration (a start that failed, or an agent that exited non-zero)
// and waits the backoff; errStop when it was the fifth in a row.
func (l *app) failed(ctx context.Context, wake chan struct{}, n int, code int64, spawn bool) error {
	var fails int
	st, err := l.st.update(ctx, func(st *State) error {
		st.ConsecutiveFailures++
		st.TotalFailures++
		fails = st.ConsecutiveFailures
		if fails >= maxFailures && (st.Status == StatusRunning || st.Status == StatusPaused) {
			st.Status, st.ExitReason = StatusFailed, strp(ReasonFailed)
			l.st.logEvent("FAIL", "iteration %d exit=%d attempt=%d/%d backoff=0s", n, code, fails, maxFailures)
			return nil
		}
		l.st.logEvent("FAIL", "iteration %d exit=%d attempt=%d/%d backoff=%ds", n, code, fails, maxFailures, backoffFor(fails))
		return nil
	})
	if err != nil {
		return err
	}
	if fails >= maxFailures {
		if st.Status == StatusFailed {
			l.sayf("%d consecutive failures, stopping loop", maxFailures)
		}
		return errStop
	}
	b := backoffFor(fails)
	if spawn {
		l.sayf("spawn failed, retrying in %ds (attempt %d/%d)", b, fails, maxFailures)
	} else {
		l.sayf("iteration %d failed (exit: %d), retrying in %ds (attempt %d/%d)", n, code, b, fails, maxFailures)
	}
	l.sleep(ctx, wake, time.Duration(b)*l.opts.Backoff)
	return nil
}

// sleep waits d, or less when the loop's state changes to anything but running.
func (l *app) sleep(ctx context.Context, wake chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-wake:
			if st, err := l.st.load(); err != nil || st.Status != StatusRunning {
				return
			}
		}
	}
}

// readPrompt reads the prompt file (regular, at most 1 MiB: a prompt, typed into a terminal).
func readPrompt(path string) (string, error) {
	b, err := fsx.ReadFileLimit(path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("prompt file not found: %s", path)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read prompt file: %s (%v)", path, err)
	}
	return string(b), nil
}

// iterationMeta is the metadata of iteration n's worker: a loop's worker, and which iteration.
func iterationMeta(n int) worker.Object {
	return worker.Object{}.SetValue("ralph", true).SetValue("ralph_iteration", n)
}

// spec is the worker of iteration n, as the loop's state keeps it: in tmux, always (as the
// Python swarm's loops), in the loop's worktree or directory.
func (st *State) spec(n int) (swarm.Spec, error) {
	ws := st.Worker
	sp := swarm.Spec{Name: st.WorkerName, Cmd: ws.Cmd, Dir: ws.Cwd, Tags: ws.Tags, Profile: ws.Profile, Metadata: iterationMeta(n),
		Tmux: &swarm.TmuxSpec{Session: ws.Session, Socket: ws.Socket}}
	if ws.Worktree != nil {
		sp.Dir = ""
		sp.InWorktree = &worker.Worktree{Path: ws.Worktree.Path, Branch: ws.Worktree.Branch, BaseRepo: ws.Worktree.BaseRepo}
	}
	var err error
	if sp.Env, err = swarm.ParseEnv(ws.Env); err != nil {
		return sp, err
	}
	if ws.Heartbeat != "" {
		sp.Heartbeat, err = swarm.ParseHeartbeat(ws.Heartbeat, ws.HeartbeatExpire, ws.HeartbeatMessage)
	}
	return sp, err
}

// spawnWorker starts a worker of the loop; a heartbeat interval under swarm.ShortHeartbeat is
// warned about (interval as it was typed) as swarm spawn does.
func (l *app) spawnWorker(ctx context.Context, sp swarm.Spec, interval string) (*worker.Worker, error) {
	w, err := l.home.Spawn(ctx, sp)
	if err != nil {
		return nil, err
	}
	if sp.Heartbeat != nil && sp.Heartbeat.Interval < swarm.ShortHeartbeat && l.stderr != nil {
		fmt.Fprintf(l.stderr, "swarm: warning: very short heartbeat interval (%s), consider using at least 1m\n", interval)
	}
	return w, nil
}

// launch starts iteration n's worker: the last one's entry goes, a new worker is spawned with
// the loop's command, and once it is ready the prompt is typed.
func (l *app) launch(ctx context.Context, st *State, n int, prompt string) (*iteration, error) {
	if st.Worker == nil {
		return nil, fmt.Errorf("the loop's state has no worker_spec (it was not started by this ralph): respawn it with '%s spawn --replace'", l.tool)
	}
	if w, _ := l.home.Worker(l.st.name); w != nil {
		if l.home.Live(ctx, w).Running {
			l.home.Stop(ctx, w)
		}
		l.home.Release(ctx, w, 5*time.Second)
		if err := l.home.Remove(ctx, w); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	sp, err := st.spec(n)
	if err != nil {
		return nil, err
	}
	w, err := l.spawnWorker(ctx, sp, st.Worker.Heartbeat)
	if err != nil {
		return nil, err
	}
	it := &iteration{n: n, w: w, started: started}
	l.beginRecord(ctx, st, it, prompt)
	offset, baseline, err := l.typePrompt(ctx, st, w, prompt, promptReadyWait)
	if err != nil {
		// The agent is there but could not be typed into: stop it and count a failure.
		bg := context.WithoutCancel(ctx)
		l.home.Stop(bg, w)
		var out *worker.Outcome
		if x, _ := l.home.Worker(w.Name); x != nil && x.Started == w.Started {
			out, _ = x.Ended()
		}
		if out != nil && strings.HasPrefix(out.Reason, "agent-exit-") {
			// It exited on its own while the prompt was typed: it read the prompt's first
			// line and finished. It ran; its end is judged as any iteration's (its done
			// pattern, its exit code), from the start of its output.
			return it, nil
		}
		l.endRecord(bg, st, it, result{kind: resExited, out: out}, "failed")
		// Its end is this failed start, counted once by the caller: the next pass must not
		// take the stopped worker for the iteration's, watch it and count its exit again.
		l.st.update(bg, func(s *State) error {
			if s.EndedIter >= n {
				return fsx.ErrUnchanged
			}
			s.EndedIter = n
			return nil
		})
		return nil, err
	}
	it.offset = offset
	l.st.update(ctx, func(s *State) error {
		if s.CurrentIteration != n {
			return fsx.ErrUnchanged
		}
		s.PromptOffset, s.PromptBaselineContent = offset, baseline
		return nil
	})
	return it, nil
}

// next says what the loop does after an iteration ended.
type next int

const (
	nextIteration next = iota
	nextRerun          // the same iteration again (a usage limit ended it)
)

// finish records how the iteration ended and decides what follows.
func (l *app) finish(ctx context.Context, wake chan struct{}, it *iteration, res result) (next, error) {
	n := it.n
	switch res.kind {
	case resControl, resCancelled:
		l.stopped(ctx, it)
		return nextIteration, errStop
	case resBudget:
		l.finishBudget(ctx, it, res)
		return nextIteration, errStop
	case resDone:
		l.finishDone(ctx, it, res)
		return nextIteration, errStop
	case resInactive:
		l.sayf("inactivity timeout (%ds), restarting", res.timeout)
		return nextIteration, l.cutShort(ctx, it, res, "timeout", func() {
			l.st.logEvent("TIMEOUT", "iteration %d inactivity_timeout=%ds", n, res.timeout)
		})
	case resCompaction, resContext:
		what := "compaction detected"
		if res.kind == resContext {
			what = "context threshold exceeded"
			l.sayf("context threshold exceeded (%d%%), killing iteration %d", res.pct, n)
		} else {
			l.sayf("compaction detected, killing iteration %d", n)
		}
		// Not a failure, and not the loop's exit reason: the loop goes on (the Python swarm set
		// exit_reason on a running loop, which hid a later disconnect).
		return nextIteration, l.cutShort(ctx, it, res, "failed", func() {
			l.st.logEvent("FATAL", "iteration %d -- %s, killing", n, what)
		})
	case resLimited:
		l.finishLimited(ctx, it, res)
		return nextRerun, nil
	}
	return nextIteration, l.finishExited(ctx, wake, it, res)
}

// finishBudget ends the loop whose budget its iteration reached (--hard-budget): the
// iteration is stopped and recorded as failed.
func (l *app) finishBudget(ctx context.Context, it *iteration, res result) {
	l.sayf("budget reached during iteration %d (--hard-budget), stopping it", it.n)
	it.stopped = true
	l.home.Stop(ctx, it.w)
	if w, _ := l.home.Worker(it.w.Name); w != nil && w.Started == it.w.Started {
		res.out, _ = w.Ended()
	}
	l.afterIteration(ctx, it)
	l.endLoop(ctx, it, res, res.exitCode(), int64(time.Since(it.started).Seconds()), ReasonBudget, "failed")
}

// finishDone ends the loop whose iteration matched the done pattern, stopping the agent if it
// still runs.
func (l *app) finishDone(ctx context.Context, it *iteration, res result) {
	if res.exited {
		l.sayf("done pattern matched (agent exited), stopping loop")
	} else {
		l.sayf("done pattern matched, stopping loop")
	}
	if !res.exited {
		// Found while the agent runs: it is stopped, and its end recorded like any other.
		it.stopped = true
		l.home.Stop(ctx, it.w)
		// The signal ralph sent is not how the agent did: the iteration that said it is
		// done succeeded (exit=0, not the SIGTERM's 143).
		out := &worker.Outcome{ExitCode: new(int64)}
		if w, _ := l.home.Worker(it.w.Name); w != nil && w.Started == it.w.Started {
			if o, ok := w.Ended(); ok {
				out.Finished, out.Reason = o.Finished, o.Reason
			}
		}
		res.out = out
	}
	l.afterIteration(ctx, it)
	code := res.exitCode()
	dur := int64(time.Since(it.started).Seconds())
	l.endLoop(ctx, it, res, code, dur, ReasonDone, "done")
}

// cutShort ends an iteration the monitor stops while the loop goes on (inactivity,
// compaction, context): its worker is stopped, its end logged by logEnd (under the state's
// lock) and recorded with outcome. errStop when the no-progress breaker ends the loop.
func (l *app) cutShort(ctx context.Context, it *iteration, res result, outcome string, logEnd func()) error {
	it.stopped = true
	l.home.Stop(ctx, it.w)
	l.afterIteration(ctx, it)
	st, _ := l.st.update(ctx, func(st *State) error {
		st.EndedIter = max(st.EndedIter, it.n)
		logEnd()
		return nil
	})
	l.endRecord(ctx, st, it, res, outcome)
	if l.noProgress(ctx, it, nil, false) {
		return errStop
	}
	return nil
}

// finishLimited records an iteration whose agent exited on a usage limit: the same iteration
// runs again once it resets, and no failure is counted.
func (l *app) finishLimited(ctx context.Context, it *iteration, res result) {
	n, until := it.n, res.resetAt
	l.afterIteration(ctx, it)
	st, _ := l.st.update(ctx, func(st *State) error {
		st.LimitedUntil, st.LimitReason = utcISO(until), LimitUsage
		st.EndedIter = max(st.EndedIter, n)
		return nil
	})
	if st != nil {
		l.event(hook.Limit, n, st.Status, LimitUsage)
	}
	l.st.logEvent("WARN", "iteration %d: usage limit reached, waiting until %s", n, until.Local().Format("2006-01-02T15:04:05"))
	l.sayf("usage limit reached, waiting until %s", until.Local().Format("15:04:05"))
	l.endRecord(ctx, st, it, res, "failed")
}

// finishExited records an iteration whose agent exited on its own: a success, or a failure
// counted with its backoff; a worker killed from outside the loop ends the loop.
func (l *app) finishExited(ctx context.Context, wake chan struct{}, it *iteration, res result) error {
	n := it.n
	l.afterIteration(ctx, it)
	code := res.exitCode()
	dur := int64(time.Since(it.started).Seconds())
	if res.out != nil && res.out.Reason == "killed" && !it.stopped {
		// Stopped from outside the loop (swarm kill through its supervisor): the loop ends,
		// killed, rather than start the next iteration (the Python swarm's bug).
		l.endLoop(ctx, it, res, code, dur, ReasonKilled, "failed")
		return errStop
	}
	l.sayf("iteration %d completed (exit: %s, duration: %s)", n, exitWord(code), formatDuration(dur))
	st, err := l.st.update(ctx, func(st *State) error {
		l.endFields(st, it, code)
		l.st.logEvent("END", "iteration %d exit=%s duration=%s", n, exitWord(code), formatDuration(dur))
		if code != nil && *code == 0 {
			st.ConsecutiveFailures = 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	status := "done"
	if code == nil || *code != 0 {
		status = "failed"
	}
	l.endRecord(ctx, st, it, res, status)
	if l.noProgress(ctx, it, code, status == "failed") {
		return errStop
	}
	if code == nil || *code != 0 {
		c := int64(1)
		if code != nil {
			c = *code
		}
		return l.failed(ctx, wake, n, c, false)
	}
	return nil
}

// noProgress counts iteration it (its exit code, failed or not) into the loop's no-progress
// breaker, in a locked update of the state; when the breaker opens, the loop ends (failed,
// no-progress) and noProgress reports true. The tree is fingerprinted outside the lock, the
// swarm directory left out (the agent's output log may be in the tree).
func (l *app) noProgress(ctx context.Context, it *iteration, code *int64, failed bool) bool {
	st, err := l.st.load()
	if err != nil || st.NoProgressN() <= 0 || st.Worker == nil {
		return false
	}
	o := breaker.Observation{Failed: failed}
	o.Tree, _ = breaker.Fingerprint(ctx, st.workDir(), l.dir.Root)
	if code != nil {
		o.Exit = *code
	}
	if failed {
		tail := logEnd(l.home.LogPath(l.st.name))
		o.Tail = string(tail[max(0, len(tail)-4096):])
	}
	var open bool
	var why string
	l.st.update(ctx, func(st *State) error {
		open = false
		if st.Status != StatusRunning && st.Status != StatusPaused {
			return fsx.ErrUnchanged
		}
		var b breaker.State
		if st.Breaker != nil {
			b = *st.Breaker
		}
		open, why = b.Observe(o, st.NoProgressN())
		st.Breaker = &b
		if open {
			if failed {
				st.ConsecutiveFailures++
				st.TotalFailures++
			}
			st.Status, st.ExitReason = StatusFailed, strp(ReasonNoProgress)
			l.st.logEvent("WARN", "iteration %d: no progress: %s", it.n, why)
			l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", it.n, ReasonNoProgress)
		}
		return nil
	})
	if open {
		l.sayf("no progress (%s), stopping loop", why)
	}
	return open
}

// stopped ends the iteration of a loop that was stopped, killed or failed while it ran: the
// monitor stops its worker itself (before the stopper, which waits for the monitor to be gone)
// and closes its run record. A monitor told to go (SIGINT) with the loop still running leaves
// both to the next monitor.
func (l *app) stopped(ctx context.Context, it *iteration) {
	st, err := l.st.load()
	if err != nil || (st.Status != StatusStopped && st.Status != StatusFailed) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	it.stopped = true
	l.home.Stop(ctx, it.w)
	var out *worker.Outcome
	if w, _ := l.home.Worker(it.w.Name); w != nil && w.Started == it.w.Started {
		out, _ = w.Ended()
	}
	l.account(ctx, it)
	l.endRecord(ctx, st, it, result{kind: resExited, out: out}, "failed")
}

// afterIteration counts the cost iteration it's agent reported and, with --commit-each,
// commits what it left in the working tree (before the no-progress breaker looks at it).
func (l *app) afterIteration(ctx context.Context, it *iteration) {
	// The worker's end is recorded a moment before its supervisor exits and tmux closes its
	// window: the iteration ends with them, so that nothing of it runs on once the loop's
	// state says it ended (the next launch waited for them; the last iteration's were left).
	l.home.Release(ctx, it.w, 5*time.Second)
	l.account(ctx, it)
	l.commitIteration(ctx, it.n)
}

// endLoop records the END of iteration it (exit code, duration dur) and, for a loop still
// running or paused, its end for reason (a DONE line), then the iteration's run record with
// outcome.
func (l *app) endLoop(ctx context.Context, it *iteration, res result, code *int64, dur int64, reason, outcome string) {
	n := it.n
	st, _ := l.st.update(ctx, func(st *State) error {
		l.endFields(st, it, code)
		l.st.logEvent("END", "iteration %d exit=%s duration=%s", n, exitWord(code), formatDuration(dur))
		if st.Status == StatusRunning || st.Status == StatusPaused {
			st.Status, st.ExitReason = StatusStopped, strp(reason)
			l.st.logEvent("DONE", "loop complete after %d iterations reason=%s", n, reason)
		}
		return nil
	})
	l.endRecord(ctx, st, it, res, outcome)
}

// endFields are what every iteration's end records: when, how long, the exit code.
func (l *app) endFields(st *State, it *iteration, code *int64) {
	st.LastIterationEnded = localISO(time.Now())
	st.IterationDurations = append(st.IterationDurations, int64(time.Since(it.started).Seconds()))
	st.EndedIter = max(st.EndedIter, it.n)
	st.LastExitCode = code
	if code != nil && *code == 0 {
		st.ConsecutiveFailures = 0
	}
}

func exitWord(code *int64) string {
	if code == nil {
		return "?"
	}
	return fmt.Sprint(*code)
}

// waitLimit holds the loop while a usage limit it met has not reset.
func (l *app) waitLimit(ctx context.Context, wake chan struct{}) error {
	st, err := l.st.load()
	if err != nil || st.LimitedUntil == "" {
		return err
	}
	if until, ok := parseISO(st.LimitedUntil); ok && time.Until(until) > 0 {
		l.sleep(ctx, wake, time.Until(until))
	}
	if ctx.Err() != nil {
		return errStop
	}
	_, err = l.st.update(ctx, func(st *State) error {
		if st.LimitedUntil == "" {
			return fsx.ErrUnchanged
		}
		if until, ok := parseISO(st.LimitedUntil); ok && time.Until(until) > 0 {
			return fsx.ErrUnchanged // woken by a state change, not the time
		}
		st.LimitedUntil, st.LimitReason = "", ""
		return nil
	})
	return err
}

// lines is text split into lines without the final empty one.
func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// oneLine keeps a message on one line of the iteration log.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
