package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/taskgraph"
)

// agentRun is one agent of the run, a slot of its scheduler: it takes task after task.
type agentRun struct {
	r  *runner
	id string
	// adopted is a task an earlier runner's agent of this id had launched and that is still at
	// work (or ended while no runner was there): finished first.
	adopted *claim
	// extra is an agent of an earlier run beyond this run's N: it finishes its task, no more.
	extra bool
	// done is its state file's context (seed 004): what its last attempt did (the commits
	// made, the files changed, a note of the outcome); empty while an attempt runs.
	done store.AgentContext
	// host is the slot of a remote host the agent's attempts run in (Config.Hosts), nil here;
	// slot is its slot of the local executor.
	host *hostSlot
	slot executor.Slot
	// cur is the task Claim gave the agent, run by Run; resumed says it is an adopted one.
	cur     *claim
	resumed bool
}

// hostSlot is one agent's place on a remote host.
type hostSlot struct {
	exec *executor.Remote
	slot executor.Slot
}

// claim is a task an agent holds, and the attempt that runs it (0 until launched).
type claim struct {
	task    store.Task
	attempt int
	// before is the working tree as the attempt found it (breaker.Fingerprint; "" unknown).
	before string
	// deps are the branches of its done dependencies, merged into its worktree (--worktree).
	deps []string
	// head is the commit its working tree was at when the attempt started ("" unknown).
	head string
	// on is the host slot where an earlier runner started its attempt (recover), to be
	// adopted there; nil otherwise.
	on *hostSlot
}

// Outcomes of a task's attempt, as the queue sees them.
const (
	outDone    = "done"
	outFailed  = "failed"
	outStopped = "stopped" // by --hard-budget or an interrupt: back to pending, not counted as a failure
	outGone    = "gone"    // the claim was taken away (skipped, or the queue replaced)
	outLimited = "limited" // a usage limit: held until its reset, pending, no retry counted
	outBlocked = "blocked" // its dependencies' branches conflict in its worktree: not run, not retried
	outOffline = "offline" // the host stopped answering: pending, held until the attempt's deadline there
)

// queue is the queue's part in the scheduling (taskgraph.Claimer): its agents are the slots
// of a taskgraph.Scheduler, which offers each free one to Claim at every wake (a task's end,
// the poll for what other processes change, the end of the calls-per-hour wait) and runs what
// it took. What is the queue's own: the claim inside the store's transaction with the budget
// checked in it, an adopted attempt first, an agent's end (its state file, the progress
// file's entry) when it may take no more tasks.
type queue struct {
	r     *runner
	ctx   context.Context
	mu    sync.Mutex // the scheduler's lock; r.mu is taken inside it, never around it
	sched *taskgraph.Scheduler[*agentRun]
	// adopting counts the agents whose adopted attempt Claim has not given them yet: held
	// already, as the tasks of the agents at work (Scheduler.Running) are.
	adopting int
}

// pollEvery is how often an agent without a task looks at the queue again: another process
// may add or retry tasks.
const pollEvery = 500 * time.Millisecond

func (q *queue) Stopping() bool { return q.ctx.Err() != nil }

// Claim gives agent a its next task: the attempt an earlier run left it first, else a claim.
// An agent whose host went offline, that found the budget reached, or that found no task left
// that may become ready ends (recorded), and takes no more.
func (q *queue) Claim(a *agentRun) taskgraph.Take {
	r, ctx := q.r, q.ctx
	if a.adopted != nil {
		a.cur, a.resumed, a.adopted = a.adopted, true, nil
		q.adopting--
		return taskgraph.Take{Took: true}
	}
	if a.extra || ctx.Err() != nil {
		// An agent of an earlier run beyond this run's N finishes its task, no more; an
		// interrupted run starts nothing (Stopping says so at the next wake).
		return taskgraph.Take{Retire: a.extra}
	}
	if a.host != nil && a.host.exec.Offline() {
		r.logf("%s: host %s is offline: the agent ends", a.id, a.host.exec.Host())
		return a.end(ctx, store.AgentFailed)
	}
	// A budget reached is claim's errBudget: it is checked in the claim's transaction.
	start := time.Now()
	c, left, callWait, err := a.claim(ctx, q.sched.Running()+q.adopting)
	r.spent(&r.res.Timing.Queue, time.Since(start))
	switch {
	case errors.Is(err, errBudget):
		return a.end(ctx, store.AgentBudget)
	case err != nil && ctx.Err() != nil:
		return taskgraph.Take{} // interrupted while waiting for the lock: nothing was claimed
	case err != nil:
		r.failed("%s: %v", a.id, err)
		return a.end(ctx, store.AgentFailed)
	case c == nil && left == 0:
		return a.end(ctx, store.AgentCompleted)
	case c == nil && callWait > 0:
		// --max-calls-per-hour: a task is ready, and waits, pending, for the window.
		// Told once (the log and the hook) until a start is free again; a wait is no failure.
		resume := time.Now().Add(callWait)
		if !r.callsWaiting {
			r.callsWaiting = true
			until := record.FormatTime(resume)
			r.logf("%s: %d attempts started in the last %s (--max-calls-per-hour %d): waiting until %s", a.id,
				r.cfg.MaxCallsPerHour, r.cfg.CallWindow, r.cfg.MaxCallsPerHour, until)
			r.cfg.Hook.Send(hook.Event{Kind: "queue", Event: hook.Limit, Plan: r.plan, Status: "running",
				Reason: "max-calls-per-hour, waiting until " + until})
		}
		return taskgraph.Take{Again: resume}
	case c == nil:
		return taskgraph.Take{Again: time.Now().Add(pollEvery)}
	}
	a.cur, a.resumed = c, false
	return taskgraph.Take{Took: true}
}

// Run runs the task Claim gave agent a (an adopted one: its attempt waited for) and records its
// end; an agent of an earlier run is done then. The run's timing counts the tasks this run
// claimed.
func (q *queue) Run(_ int, a *agentRun) {
	r, c := q.r, a.cur
	out := a.run(q.ctx, c, a.resumed)
	start := time.Now()
	a.finish(q.ctx, c, out)
	if !a.resumed {
		r.spent(&r.res.Timing.Queue, time.Since(start))
		r.mu.Lock()
		r.res.Timing.Tasks++
		r.mu.Unlock()
	}
	a.cur = nil
	q.mu.Lock()
	q.sched.Free(a, a.extra)
	q.mu.Unlock()
}

// errBudget is claim's error once the budget is reached.
var errBudget = errors.New("the budget is reached")

// claim takes the next ready task; without one, it returns how many tasks may still become
// ready (pending or claimed), and how long a ready task waits for the calls per hour when they
// are spent (--max-calls-per-hour; then it claims none). The budget is checked in the same transaction, against the cost
// the progress file holds, which every task's end adds to under the same lock: so the agents at
// work when the budget is reached are exactly those whose claims came before. held is how many
// tasks this run's other agents hold (claimed or adopted, not yet recorded): while none is
// held, a pending task that is not ready never will be. The Scheduler counts it, and offers
// its agents to Claim one at a time: a claim is counted before another agent looks (an agent
// that counted it unheld in between took its dependents for stuck and ended, issue 19).
func (a *agentRun) claim(ctx context.Context, held int) (c *claim, left int, callWait time.Duration, err error) {
	t := now()
	r := a.r
	err = r.cfg.Store.Update(ctx, func(tx *store.Tx) error {
		// The total this run holds (every end adds to it under the same lock), not the
		// progress file's, which the agents can write (entry).
		if r.budgetReached() {
			return errBudget
		}
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		callAt := time.Now()
		wait := r.calls.Take(callAt)
		r.callsWaiting = r.callsWaiting && wait > 0 // a start taken: the next wait is told again
		if wait > 0 && q.AnyReady(callAt) {
			// Ready work, but the calls of the window are spent: no claim; the agent waits.
			callWait, left = wait, 1
			return nil
		}
		if wait == 0 {
			if task, ok := q.Claim(a.id, t); ok {
				// The attempt number it will run as goes in with the claim (attempt.Open
				// numbers an attempt after the bead's last run record), so that a runner dying
				// from here on is followed by one that knows which records are this claim's;
				// run corrects it in the rare case Open numbers it otherwise.
				task.Attempt = 1
				if run, err := record.ReadRun(r.dir.Store.RunPath(plan.Bead(r.plan, task.ID))); err == nil {
					task.Attempt = run.Attempt + 1 // what attempt.Open numbers it: the last run's + 1
				}
				if r.cfg.Worktree {
					task.Branch = branchOf(r.plan, task.ID)
				}
				c = &claim{task: task, attempt: task.Attempt, deps: depBranches(r.plan, q, &task)}
				q.Put(task)
				tx.ChangedQueue()
				tx.Lazy()
				// The progress file names the agent's current task (it named none, or the last).
				return a.entry(tx, t, func(p *store.Progress, e *store.Agent) {
					e.TaskID, p.Phase = &task.ID, q.Phase()
				})
			}
			r.calls.Give(callAt) // nothing claimed
		}
		if len(q.Reblock()) > 0 {
			tx.ChangedQueue()
		}
		counts := q.Counts()
		if limited := q.Held(time.Now()); held > 0 || limited > 0 {
			// Tasks a usage limit holds are ready again at their reset: waited for.
			left = counts[store.Pending] + held
		} else if counts[store.Pending] > 0 {
			// No agent of this run holds a task, so none of these will become ready: their
			// dependencies are claimed by no one at work (a claim a failed write left).
			r.stuckOnce.Do(func() {
				r.logf("%d tasks pending behind claims no agent holds; run again to settle them", counts[store.Pending])
			})
		}
		return nil
	})
	return c, left, callWait, err
}

// outcome is how an attempt ended.
type outcome struct {
	status   string // outDone, outFailed, outStopped, outGone, outLimited, outBlocked, outOffline
	reason   string
	cost     float64
	turns    int // the turns the agent reported (claude's num_turns), 0 when none
	duration float64
	// resetAt: when the usage limit of an outLimited attempt resets; until when an outOffline
	// or outStopped task is held (its agent may still run on its host).
	resetAt time.Time
	// obs is a failed attempt as the no-progress breaker sees it (nil: the breaker is off).
	obs *breaker.Observation
}

var errNotMine = errors.New("the claim is no longer this agent's")

// setAttempt makes attempt n the claim's, in the queue too, when the executor numbered it
// otherwise than the claim did (someone dispatched the bead since, or a host numbers its own).
func (a *agentRun) setAttempt(ctx context.Context, c *claim, n int) error {
	if n == c.attempt {
		return nil
	}
	err := a.r.updateQueue(ctx, func(tx *store.Tx, q *store.Queue) error {
		t, ok := q.Get(c.task.ID)
		if !ok || t.Status != store.Claimed || t.ClaimedBy == nil || *t.ClaimedBy != a.id {
			return errNotMine
		}
		t.Attempt = n
		q.Put(t)
		tx.ChangedQueue()
		return nil
	})
	if err == nil {
		c.attempt = n
	}
	return err
}

// Template is the template name the queue's run records carry, so that analyze-runs groups
// the queue's attempts together.
const Template = "ralph-queue"

// assess is the queue's reading of an attempt's end as its executor reported it (end, with
// the end of its output, how long it ran and when it finished): done or failed, a failure that
// is a usage limit (held until its reset), the no-progress breaker's observation of a failure
// (the working tree in workdir, "" unknown), and the cost the agent reported.
func (r *runner) assess(ctx context.Context, end executor.Outcome, bead string, n int, tail []byte, duration float64, finished time.Time, workdir string) outcome {
	out := outcome{status: outDone, reason: end.Reason, duration: duration}
	if end.Status != record.StatusDone {
		out.status = outFailed
		if limited, reset := r.cfg.Profile.UsageLimit(string(tail), finished); limited {
			// Not the task's failure: it waits for the reset, its retries untouched.
			if reset.IsZero() || reset.Before(finished) {
				reset = finished.Add(r.cfg.LimitWait)
			}
			out.status, out.reason, out.resetAt = outLimited, "usage limit", reset
		} else if r.cfg.NoProgress > 0 {
			o := breaker.Observation{Failed: true, Tail: string(tail[max(0, len(tail)-4096):])}
			if workdir != "" {
				o.Tree, _ = r.fingerprint(ctx, workdir)
			}
			if end.ExitCode != nil {
				o.Exit = int64(*end.ExitCode)
			}
			out.obs = &o
		}
	}
	u := r.cfg.Profile.ParseUsage(tail)
	out.turns = u.NumTurns
	switch {
	case u.HasCost && store.Cost(u.CostUSD):
		out.cost = u.CostUSD
	case u.RejectedCost != nil:
		// What the agent printed is not a cost (NaN, an infinity, a negative amount that
		// would give the budget back): unknown, counted as 0.
		r.logf("%s: attempt %d reported a cost of %v, which is not a cost; counted as unknown ($0)", bead, n, *u.RejectedCost)
	}
	return out
}

// branchOf is task id's branch when it runs in a worktree: agent/<plan>-<task>.
func branchOf(planID, id string) string { return "agent/" + plan.Bead(planID, id) }

// depBranches are the branches of t's dependencies that are done and ran in a worktree, in the
// order t names them: what its worktree merges. A skipped dependency's branch is not merged.
// The branch is the one the dependency's id makes (branchOf), not the name the queue file
// holds: that file is read back from a directory the agents can write in, and a name there
// would reach git.
func depBranches(planID string, q *store.Queue, t *store.Task) []string {
	var out []string
	for _, d := range t.Dependencies {
		if dt, ok := q.Get(d); ok && dt.Status == store.Done && dt.Branch != "" {
			out = append(out, branchOf(planID, d))
		}
	}
	return out
}

// madeWorktree makes the claim's worktree on its branch before its attempt is opened, whatever
// happens to ctx (an interrupt) once claimed: the run's base commit with its done
// dependencies' branches merged in. A worktree its earlier attempt made is kept as that attempt
// left it (a retry goes on from there), unless it was never checked out (a run killed between
// its registration and its checkout): that one is made again. When it cannot be made, the
// outcome says why: blocked by its dependencies' conflict (it never ran; the half-made worktree
// and its branch are removed, so that a retry of the task starts afresh), or failed, the
// reason after prefix.
func (r *runner) madeWorktree(ctx context.Context, c *claim, prefix string) (outcome, bool) {
	start := time.Now()
	defer func() { r.spent(&r.res.Timing.Launch, time.Since(start)) }()
	ctx = context.WithoutCancel(ctx)
	repo := git.Repo{Dir: r.cfg.Repo}
	path, branch := repo.WorktreePath(plan.Bead(r.plan, c.task.ID)), branchOf(r.plan, c.task.ID)
	err := repo.CheckBranch(ctx, branch)
	if fi, lerr := os.Lstat(path); err == nil && lerr == nil && fi.IsDir() && repo.HasBranch(ctx, branch) &&
		(git.Repo{Dir: path}).OnBranch(ctx, branch) && git.CheckedOut(ctx, path) {
		return outcome{}, true
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		// Registered one at a time (gitMu: git worktree add reads every worktree's administrative
		// files, and fails on one being written at the same moment), checked out and merged at once.
		_, err = repo.PrepareWorktree(ctx, path, branch, git.MergeSpec{Base: r.baseSHA, Deps: c.deps, Ident: r.ident, Label: "ralph queue",
			Lock: &r.gitMu, Hooked: r.checkoutHook})
	}
	switch _, conflict := errors.AsType[*git.ConflictError](err); {
	case conflict:
		// Under gitMu too: both read every worktree's administrative files, as an add does.
		r.gitMu.Lock()
		repo.RemoveWorktree(ctx, path, true)
		repo.DeleteBranch(ctx, branch)
		r.gitMu.Unlock()
		return outcome{status: outBlocked, reason: oneLine(err)}, false
	case err != nil:
		return outcome{status: outFailed, reason: prefix + oneLine(err)}, false
	}
	return outcome{}, true
}

// returnToBranch brings the commits of an agent that switched to a branch of its own in the
// claim's worktree back onto the task's branch, the worktree back on it
// (git.Repo.ReturnToBranch): its dependents merge the task's branch, and a retry goes on from
// the worktree only while it is on that branch. The error is why it could not (a branch that
// does not descend from the task's, *git.StrayError): an attempt that ended well fails with
// it. Any other trouble (a worktree gone) is logged, and left to the merges that follow.
func (r *runner) returnToBranch(ctx context.Context, bead string, c *claim) error {
	branch := branchOf(r.plan, c.task.ID)
	from, err := git.Repo{Dir: r.workdir(bead)}.ReturnToBranch(context.WithoutCancel(ctx), branch)
	switch _, stray := errors.AsType[*git.StrayError](err); {
	case stray:
		return err
	case err != nil:
		r.logf("warning: %s: attempt %d: %s", bead, c.attempt, oneLine(err))
	case from != "":
		r.logf("%s: attempt %d: the agent worked on %s; its commits are brought onto %s", bead, c.attempt, from, branch)
	}
	return nil
}

// workdir is where bead's attempts run: the repository, or the task's worktree.
func (r *runner) workdir(bead string) string {
	if r.cfg.Worktree {
		return git.Repo{Dir: r.cfg.Repo}.WorktreePath(bead)
	}
	return r.cfg.Repo
}

// fingerprint is the no-progress breaker's view of the working tree dir, the queue's own files
// and the records left out.
func (r *runner) fingerprint(ctx context.Context, dir string) (string, error) {
	return breaker.Fingerprint(ctx, dir, r.cfg.Store.Dir.Root, r.cfg.StateDir)
}

// headBefore takes, before c's attempt starts in dir, the tree the no-progress breaker compares
// with (c.before, when the breaker is on) and returns HEAD's commit, which the attempt's
// context is counted from ("" outside git or on an unborn branch). The fingerprint begins with
// HEAD and tells when dir is not in git, so with the breaker on git is not asked again: before,
// every task took a git process more for HEAD, two outside git where no answer can come
// (issue 16: the queue's launch per task had grown 1.4x).
func (r *runner) headBefore(ctx context.Context, c *claim, dir string) string {
	if r.cfg.NoProgress > 0 {
		var err error
		c.before, err = r.fingerprint(ctx, dir)
		if err == nil {
			head, _, _ := strings.Cut(c.before, " ")
			return head
		}
		if errors.Is(err, breaker.ErrNotGit) {
			return ""
		}
	}
	return git.Repo{Dir: dir}.Head(ctx)
}

// maxTail is how much of the end of an agent's output is read for its usage: claude's JSON
// result is its last line.
const maxTail = 1 << 20

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// state writes the agent's state file.
func (a *agentRun) state(ctx context.Context, status string, t *store.Task, n int) {
	st := &store.AgentState{AgentID: a.id, PlanID: a.r.plan, Status: status, LastCheckpoint: now(), Context: a.done}
	if t != nil {
		st.TaskID, st.Bead, st.Attempt = &t.ID, plan.Bead(a.r.plan, t.ID), n
		if a.host != nil {
			st.Host = a.host.exec.Host()
		}
	}
	if err := a.r.cfg.Store.WriteAgentState(ctx, st); err != nil {
		a.r.failed("%s: writing its state: %v", a.id, err)
	}
}

// checkpoint writes the agent's state at the end of the claim's attempt, its context filled
// as the seed has it: the commits the attempt made on top of the commit it started from, the
// files it changed (committed or not; the queue's files and the records left out), and a note
// of how it ended.
func (a *agentRun) checkpoint(ctx context.Context, c *claim, out outcome) {
	r := a.r
	dir := r.workdir(plan.Bead(r.plan, c.task.ID))
	commits, files := git.Repo{Dir: dir}.Since(ctx, c.head)
	files = slices.DeleteFunc(files, func(f string) bool {
		abs := filepath.Join(dir, f)
		return within(abs, r.cfg.Store.Dir.Root) || within(abs, r.cfg.StateDir)
	})
	note := fmt.Sprintf("%s attempt %d: %s", c.task.ID, c.attempt, out.status)
	if out.reason != "" {
		note += " (" + out.reason + ")"
	}
	a.done = store.AgentContext{FilesModified: files, CommitsMade: commits, Notes: note}
	a.state(ctx, store.AgentWorking, &c.task, c.attempt)
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// end records the agent's end: completed (its state file removed, as the seed does), failed,
// or stopped by the budget; the agent takes no more tasks (Retire).
func (a *agentRun) end(ctx context.Context, status string) taskgraph.Take {
	a.progress(ctx, func(p *store.Progress, e *store.Agent, t string) {
		e.Status, e.CompletedAt = status, &t
		if status == store.AgentCompleted {
			e.TaskID = nil
		}
		recount(p)
	})
	if status == store.AgentCompleted {
		a.r.cfg.Store.RemoveAgentState(a.id)
	} else {
		a.state(ctx, status, nil, 0)
	}
	if status == store.AgentBudget {
		a.r.logf("%s: stopped: the budget is reached", a.id)
	}
	return taskgraph.Take{Retire: true}
}

// progress changes the agent's entry of the progress file (at time t) in a transaction of its
// own, which an interrupt does not cut short; what it cannot write is counted (failed).
func (a *agentRun) progress(ctx context.Context, change func(p *store.Progress, e *store.Agent, t string)) {
	t := now()
	err := a.r.cfg.Store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		return a.entry(tx, t, func(p *store.Progress, e *store.Agent) { change(p, e, t) })
	})
	if err != nil {
		a.r.failed("%s: %v", a.id, err)
	}
}

// entry changes the agent's entry of the progress file in tx, updated at t. The file's total is
// first made the one this run holds (res.CostUSD: the total at its start, plus every cost it
// recorded since), saying so when someone else changed it: the agents work in the repository,
// and a total they lower would give the budget back. r.mu is free.
func (a *agentRun) entry(tx *store.Tx, t string, change func(p *store.Progress, e *store.Agent)) error {
	p, err := tx.Progress()
	if err != nil {
		return err
	}
	r := a.r
	r.mu.Lock()
	held := r.res.CostUSD
	r.mu.Unlock()
	if p.TotalCostUSD != held {
		r.logf("warning: %s's total_cost_usd was changed behind the runner's back ($%v); kept the run's $%v",
			r.cfg.Store.Dir.Progress(r.plan), p.TotalCostUSD, held)
		p.TotalCostUSD = held
	}
	change(p, agentEntry(p, a.id))
	p.UpdatedAt = t
	tx.ChangedProgress()
	return nil
}

// errHardBudget is the cause of the end of the attempts' context that stopAll ended.
var errHardBudget = errors.New(budgetStop)

// hardStopped says whether --hard-budget ended the attempts' context (an interrupt ended it
// first otherwise).
func (r *runner) hardStopped() bool { return errors.Is(context.Cause(r.attempts), errHardBudget) }
