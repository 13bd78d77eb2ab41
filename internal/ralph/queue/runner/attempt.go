package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/record"
)

// run runs the claim's attempt in the agent's executor (executor.Local, or the executor.Remote
// of its host with Config.Hosts), in the task's worktree (--worktree) or the repository.
// Adopting, the attempt is the one an earlier runner started for the claim (Job.Adopt), where
// it started it (on the host claim.on names, else here): the executor waits for it, or judges
// its end, instead of starting another. The agent is asked the task, with its plan and id for
// context. The model is named only when the config names one: the executor resolves it
// through the profile again, as Config.Model was. An adopted attempt is found on the host its
// agent's state names (claim.on: on that host's slot while it lasts), else here; interrupted,
// it is stopped, as runLocal says.
func (a *agentRun) run(ctx context.Context, c *claim, adopt bool) outcome {
	r := a.r
	bead := plan.Bead(r.plan, c.task.ID)
	model := ""
	if r.cfg.Model.Resolved != "" {
		model = r.cfg.Model.Name
	}
	job := executor.Job{Task: c.task.ID, Bead: bead, Agent: r.cfg.AgentName, Model: model,
		Prompt: fmt.Sprintf("%s\n\n(ralph queue: task %s of plan %s)\n", c.task.Description, c.task.ID, r.plan),
		Dir:    r.workdir(bead), Repo: r.cfg.Repo, Timeout: r.cfg.Timeout, Inactivity: r.cfg.Inactivity, MaxAttempts: r.cfg.MaxRetries,
		Env: []string{"RALPH_PLAN=" + r.plan, "RALPH_TASK=" + c.task.ID, "RALPH_AGENT=" + a.id}}
	if r.cfg.Worktree {
		job.Branch = branchOf(r.plan, c.task.ID)
		job.Env = append(job.Env, "RALPH_BRANCH="+job.Branch)
	}
	if !adopt && a.host == nil {
		return a.runLocal(ctx, c, job)
	}
	if !adopt {
		return a.runRemote(ctx, c, job)
	}
	job.Adopt = c.attempt
	// The progress file names the task the agent is at work on (a claim names it in its own
	// transaction).
	a.progress(ctx, func(_ *store.Progress, e *store.Agent, _ string) { e.TaskID = &c.task.ID })
	if c.on == nil {
		a.state(ctx, store.AgentWorking, &c.task, c.attempt)
		r.logf("%s: still running %s (attempt %d), from the last run", a.id, c.task.ID, c.attempt)
		return a.runLocal(ctx, c, job)
	}
	own := a.host
	defer func() { a.host = own }()
	a.host = c.on
	r.logf("%s: %s (attempt %d) was started on %s by the last run: looking for it there", a.id, c.task.ID, c.attempt, c.on.exec.Host())
	return a.runRemote(ctx, c, job)
}

// runLocal runs job on this machine (executor.Local), and judges its end as the queue does:
// the agent's commits brought back onto the task's branch, --commit-each, the cost and a usage
// limit read from its output. Interrupted (ctx ends first), the attempt is stopped, as swarm
// run's are (taskgraph's meaning of interrupted): its supervisor records its end, and the task
// goes back to pending, no retry counted, what the agent left in its working tree kept for the
// next run's attempt.
func (a *agentRun) runLocal(ctx context.Context, c *claim, job executor.Job) outcome {
	r := a.r
	bead, adopt := job.Bead, job.Adopt > 0
	if r.cfg.Worktree && !adopt {
		// Made before the attempt is opened; an adopted attempt's is the one it works in.
		if out, ok := r.madeWorktree(ctx, c, "--worktree: "); !ok {
			return out
		}
	}
	lctx := context.WithoutCancel(ctx)
	var queued time.Duration // of the launch, the queue's own part
	var launching bool
	var launched time.Time
	job.Prepare = func(n int, argv []string) ([]string, error) {
		// The queue must name this attempt before it starts.
		if err := a.setAttempt(lctx, c, n); err != nil {
			return nil, err
		}
		start := time.Now()
		a.done = store.AgentContext{}
		a.state(lctx, store.AgentWorking, &c.task, n)
		queued = time.Since(start)
		argv, err := r.withHookSettings(argv, a.id, c.task.ID, bead, n)
		if err == nil {
			launching = true
			c.head = r.headBefore(lctx, c, job.Dir)
		}
		return argv, err
	}
	job.Checkpoint = func(string) {
		launched = time.Now()
		r.logf("%s: started %s (attempt %d)", a.id, c.task.ID, c.attempt)
		r.event(hook.Start, c.task.ID, c.attempt, store.Claimed, "", c.task.CostUSD)
	}
	start := time.Now()
	end := r.local.Run(r.attempts, a.slot, job)
	r.spendRun(start, launched, queued)
	if !adopt && !launching {
		// Never launched: the attempt could not be opened or prepared.
		if errors.Is(end.Err, errNotMine) {
			return outcome{status: outGone}
		}
		return outcome{status: outFailed, reason: cause(end)}
	}
	if launching && launched.IsZero() && end.Err != nil && end.Run != nil {
		r.logf("%s: %s: %v", a.id, c.task.ID, end.Err)
	}
	start = time.Now()
	defer func() { r.spent(&r.res.Timing.Queue, time.Since(start)) }()
	var stray error
	if r.cfg.Worktree {
		stray = r.returnToBranch(lctx, bead, c)
	}
	if r.cfg.CommitEach {
		// What the attempt changed in the task's working tree, committed (the queue's files and
		// the records left out) before the breaker looks at the tree, so that a commit is the
		// progress it is, once. A failure is a warning; the run goes on.
		head, err := rails.Commit(lctx, job.Dir, []string{r.cfg.Store.Dir.Root, r.cfg.StateDir}, bead, c.attempt)
		switch {
		case err != nil:
			r.logf("warning: %s: --commit-each: %s", bead, oneLine(err))
		case head != "":
			r.logf("%s: attempt %d committed as %s", bead, c.attempt, head)
		}
	}
	out := r.judged(lctx, end, bead, c.attempt, r.workdir(bead))
	if stray != nil && out.status == outDone {
		out.status, out.reason = outFailed, oneLine(stray)
	}
	if end.Interrupted && out.status == outFailed {
		// Stopped by an interrupt, or by --hard-budget: pending again, no retry counted.
		out.status, out.reason = outStopped, "interrupted: its agent was stopped"
		if r.hardStopped() {
			out.reason = budgetStop
		}
	}
	if !adopt {
		a.checkpoint(lctx, c, out)
	}
	return out
}

// spendRun adds an attempt's time in the executor, from start, to the run's timing: its
// launch until launched (zero: never launched) less the queue's own part, then the wait.
func (r *runner) spendRun(start, launched time.Time, queued time.Duration) {
	launch := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !launched.IsZero() {
		launch = launched.Sub(start)
		r.res.Timing.Wait += time.Since(launched)
	}
	r.res.Timing.Queue += queued
	r.res.Timing.Launch += launch - queued
}

// judged is the queue's reading of an attempt's end as the executor judged it by its run
// record (end.Run; nil when it could not be read): its duration and end as the record keeps
// them (the executor times a launched attempt by its own clock), its output's end from its log.
func (r *runner) judged(ctx context.Context, end executor.Outcome, bead string, n int, workdir string) outcome {
	run := end.Run
	if run == nil {
		return outcome{status: outFailed, reason: cause(end)}
	}
	duration := 0.0
	if run.DurationSeconds != nil {
		duration = float64(*run.DurationSeconds)
	}
	finished := time.Now() // unless the record says when
	if run.FinishedAt != nil {
		if at, ok := record.ParseTime(*run.FinishedAt); ok {
			finished = at
		}
	}
	// The end of its log, a regular file only, never read through a link.
	tail, _ := fsx.ReadTail(r.dir.Layout.LogPath(bead), maxTail)
	return r.assess(ctx, end, bead, n, tail, duration, finished, workdir)
}

// cause is why an attempt could not be launched or judged, as the queue words it: the error
// alone, without the executor's step.
func cause(end executor.Outcome) string {
	if end.Err == nil {
		return end.Reason
	}
	return oneLine(end.Err)
}
