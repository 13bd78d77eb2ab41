package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// runRemote runs job on the agent's host (Config.Hosts) through swarm run's executor, and
// reads its outcome as a local one's is read (assess). An attempt to adopt is looked for on the
// host first, and followed there when it runs or has ended; started afresh only when it never
// got there.
func (a *agentRun) runRemote(ctx context.Context, c *claim, job executor.Job) outcome {
	r := a.r
	lctx := context.WithoutCancel(ctx)
	// As a local task's: the base merged with its done dependencies' branches.
	if out, ok := r.madeWorktree(ctx, c, "the task's worktree: "); !ok {
		return out
	}
	if r.cfg.NoProgress > 0 {
		c.before, _ = r.fingerprint(lctx, job.Dir)
	}
	job.Launched = func(n int) {
		// The host numbers its own attempts: the claim names the one started there.
		if err := a.setAttempt(lctx, c, n); err != nil {
			r.logf("%s: %s: naming attempt %d in the queue: %v", a.id, c.task.ID, n, err)
		}
		a.state(lctx, store.AgentWorking, &c.task, n)
		r.logf("%s: started %s (attempt %d) on %s", a.id, c.task.ID, n, a.host.slot.ID)
		r.event(hook.Start, c.task.ID, n, store.Claimed, "", c.task.CostUSD)
	}
	// Each successful read of the records there is the agent's sign of life.
	job.Heartbeat = func(time.Time) { a.state(lctx, store.AgentWorking, &c.task, c.attempt) }
	start := time.Now()
	out := a.host.exec.Run(r.attempts, a.host.slot, job)
	r.spent(&r.res.Timing.Wait, time.Since(start))
	if out.Attempt > 0 && out.Attempt != c.attempt && out.Offline == nil {
		c.attempt = out.Attempt
	}
	switch {
	case out.Interrupted && r.hardStopped():
		return outcome{status: outStopped, reason: budgetStop}
	case out.Interrupted:
		// Its agent is being stopped there (dispatch kill): held until the host's kill grace
		// has passed, so that no other agent of it starts meanwhile.
		return outcome{status: outStopped, reason: fmt.Sprintf("interrupted: its agent on %s was stopped", a.host.exec.Host()),
			resetAt: time.Now().Add(a.host.exec.StopGrace())}
	case out.Offline != nil:
		return outcome{status: outOffline, resetAt: out.Offline.NotBefore,
			reason: fmt.Sprintf("host %s went offline during attempt %d (%s)", out.Offline.Host, out.Attempt, out.Reason)}
	}
	duration := 0.0
	if !out.Started.IsZero() && out.Finished.After(out.Started) {
		duration = out.Finished.Sub(out.Started).Seconds()
	}
	// The output's end as the host's result record keeps it (its log stays there); the
	// working tree here is not the agent's, so the breaker sees no tree.
	return r.assess(lctx, out, job.Bead, c.attempt, []byte(out.Logs), duration, out.Finished, "")
}
