package runner

import (
	"context"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/record"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// finish applies an attempt's outcome in one transaction: the task (done; back to pending with
// retries + 1 and a retry-queue entry; failed once out of attempts, its dependents blocked), the
// cost (the task's, the agent's, the plan's) and the progress. Then the budget is checked: once
// it is reached no agent starts another task, and with --hard-budget the running ones stop.
func (a *agentRun) finish(ctx context.Context, c *claim, out outcome) {
	r := a.r
	t := now()
	var line string
	var ev *hook.Event
	err := r.updateQueue(context.WithoutCancel(ctx), func(tx *store.Tx, q *store.Queue) error {
		rq, err := tx.Retry()
		if err != nil {
			return err
		}
		task, ok := q.Get(c.task.ID)
		// Still the claim this attempt ran for (a skip, or init --force, may have taken it).
		mine := ok && task.Status == store.Claimed && task.ClaimedBy != nil && c.task.ClaimedBy != nil &&
			*task.ClaimedBy == *c.task.ClaimedBy && task.Attempt == c.attempt
		if mine && out.status != outGone {
			line, ev = a.settle(tx, rq, &task, c, out, t)
			q.Put(task)
			if task.Status == store.Failed || task.Status == store.Blocked {
				q.Reblock()
			}
			tx.ChangedQueue()
		}
		// The task failed for good (out of retries, or the breaker opened) when settling its
		// claim left it failed: only settleFailure makes a task failed.
		return a.entry(tx, t, func(p *store.Progress, e *store.Agent) {
			charge(p, e, out, mine && task.Status == store.Failed)
			p.Phase = q.Phase()
			recount(p)
			r.mu.Lock()
			r.res.CostUSD = p.TotalCostUSD
			r.mu.Unlock()
		})
	})
	if err != nil {
		r.failed("%s: recording %s: %v", a.id, c.task.ID, err)
	} else if line != "" {
		r.logf("%s: %s (attempt %d): %s", a.id, c.task.ID, c.attempt, line)
		if ev != nil {
			r.event(ev.Event, c.task.ID, c.attempt, ev.Status, ev.Reason, *ev.CostUSD)
		}
	}
	if r.budgetReached() && r.cfg.HardBudget {
		r.stopAll(errHardBudget)
	}
}

// settle applies out to the task of the claim this attempt ran for, and its retry-queue entries,
// and says what was decided: the line logged, and the task's transition told the hook once
// recorded (nil: none).
func (a *agentRun) settle(tx *store.Tx, rq *store.RetryQueue, task *store.Task, c *claim, out outcome, t string) (line string, ev *hook.Event) {
	task.CostUSD += out.cost
	switch out.status {
	case outDone:
		task.Status, task.CompletedAt, task.Error = store.Done, &t, ""
		if rq.Drop(task.ID) {
			tx.ChangedRetry()
		}
		line = "done"
		ev = &hook.Event{Event: hook.End}
	case outBlocked:
		task.Status, task.ClaimedBy, task.ClaimedAt, task.CompletedAt = store.Blocked, nil, nil, &t
		task.Reason, task.Error = store.ReasonConflict, out.reason
		line = "blocked: " + out.reason + " (not run; 'ralph queue retry' once the branches agree)"
		ev = &hook.Event{Event: hook.Failure, Reason: store.ReasonConflict}
	case outStopped, outOffline, outLimited:
		// Not the task's failure: pending again, no retry counted, held until a usage limit's
		// reset, or while its agent may still run on its host (an offline host's task runs
		// elsewhere once its attempt there cannot run any more: its deadline there has passed).
		held := out.status == outLimited || out.resetAt.After(time.Now())
		task.Status, task.ClaimedBy, task.ClaimedAt, task.Error = store.Pending, nil, nil, out.reason
		if held {
			task.HeldUntil = record.FormatTime(out.resetAt)
		}
		switch {
		case out.status == outLimited:
			task.Error = "usage limit, held until " + task.HeldUntil
			line = task.Error + " (no retry counted)"
			ev = &hook.Event{Event: hook.Limit, Reason: task.Error}
		case out.status == outOffline && held:
			task.Error += "; held until " + task.HeldUntil + ", the attempt's deadline there"
			line = out.reason + "; pending, held until " + task.HeldUntil + " (the attempt's deadline there; no retry counted)"
		case out.status == outOffline:
			line = out.reason + "; pending again (no retry counted)"
		case out.reason == budgetStop:
			line = "stopped by the budget, pending again"
		default:
			line = out.reason + "; pending again"
		}
	default:
		line, ev = a.settleFailure(tx, rq, task, c, out, t)
	}
	if ev != nil {
		ev.Status, ev.CostUSD = task.Status, &task.CostUSD
	}
	return line, ev
}

// settleFailure applies a failed attempt: the task is retried, or fails for good when it is
// out of retries or the no-progress breaker opened.
func (a *agentRun) settleFailure(tx *store.Tx, rq *store.RetryQueue, task *store.Task, c *claim, out outcome, t string) (line string, ev *hook.Event) {
	max := a.r.cfg.MaxRetries
	// Seed 004's retries counts the retry attempts (0 on the first try): a
	// failure that is retried adds one; the last failure adds none.
	attempts := task.Retries + 1
	task.Error = out.reason
	tx.ChangedRetry()
	// The failure is fed to the task's no-progress breaker (--no-progress), which is off
	// without an observation or the flag.
	open, why := false, ""
	if out.obs != nil && a.r.cfg.NoProgress > 0 {
		b := breaker.State{Tree: c.before}
		if task.Breaker != nil {
			b = *task.Breaker
		}
		open, why = b.Observe(*out.obs, a.r.cfg.NoProgress)
		task.Breaker = &b
	}
	switch {
	case open && attempts < max:
		task.Reason = breaker.Reason
		task.Error = "no progress: " + why + "; last: " + out.reason
		line = "failed (" + out.reason + "), no progress: " + why + "; not retried"
		ev = &hook.Event{Event: hook.Breaker, Reason: breaker.Reason}
	case attempts >= max:
		line = "failed (" + out.reason + "), out of retries"
		ev = &hook.Event{Event: hook.Failure, Reason: out.reason}
	default:
		task.Retries++
		task.Status, task.ClaimedBy, task.ClaimedAt = store.Pending, nil, nil
		rq.Retries = append(rq.Retries, store.Retry{TaskID: task.ID, AgentID: a.id, Attempt: task.Retries,
			Error: out.reason, QueuedAt: t, MaxRetries: max})
		return "failed (" + out.reason + "), queued for a retry", &hook.Event{Event: hook.Failure, Reason: out.reason}
	}
	// Failed for good: its retries are done with.
	task.Status, task.CompletedAt = store.Failed, &t
	rq.Drop(task.ID)
	return line, ev
}

// charge adds the attempt to the progress file: the plan's cost, and the agent's (its entry e)
// cost, turns, time and counts; the agent is at work on no task until its next claim.
func charge(p *store.Progress, e *store.Agent, out outcome, failedForGood bool) {
	p.TotalCostUSD += out.cost
	e.CostUSD += out.cost
	e.NumTurns += out.turns
	e.DurationSeconds += out.duration
	if failedForGood {
		e.TasksFailed++ // an agent run of the seed's, failed after its retries
	}
	if out.status != outBlocked {
		e.Tasks++ // an attempt ran
	}
	e.TaskID = nil // at work on no task until its next claim
}

// budgetStop is the reason of an attempt --hard-budget stopped.
const budgetStop = "stopped: the budget was reached (--hard-budget)"
