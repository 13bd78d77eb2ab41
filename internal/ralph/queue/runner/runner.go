// Package runner works through a plan's task queue with N agents at once. Each agent (agent-1 …
// agent-N) claims the next task whose dependencies are done (one lock, one atomic write: see
// package store), runs it as a dispatched attempt of bead <plan>-<task> through swarm run's local
// executor (executor.Local, on package attempt: run and result records, the supervisor
// detached, so it outlives the runner; the queue's own steps are the Job's hooks, attempt.go),
// waits for it, reads its cost from its output (agent.Profile.ParseUsage) and marks the task
// done, or failed: back to pending with retries + 1 through the retry queue until max_retries,
// then failed, its dependents blocked. The budget is checked before each agent starts a task.
// The agents are the slots of a taskgraph.Scheduler, this package its second policy (queue, a
// taskgraph.Claimer, in agent.go): the Scheduler offers each free agent a claim at every wake
// and runs what it took; the policy claims, and ends an agent that may take no more.
//
// A runner that died leaves claims behind; the next Run finds them: a claim whose supervisor is
// alive is waited for as if it had been started by this run, one whose attempt ended is judged
// by its records, one never launched goes back to pending.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/taskgraph"
)

// Config is what a run needs.
type Config struct {
	Store *store.Store
	// Agents is how many agents work at once.
	Agents int
	// Profile is the agent type every task runs with; AgentName and Model as the records keep
	// them (Model.Resolved goes on the command line). Model is Profile.Model's choice: the
	// executors resolve its name through the profile again (a host's through its own config).
	Profile   *agent.Profile
	AgentName string
	Model     agent.Model
	// Budget, when set, is the most the run may spend in USD: no agent starts a task once the
	// total cost reached it. HardBudget also stops the agents running when it is reached.
	Budget     *float64
	HardBudget bool
	// MaxRetries is how many attempts a task gets (the first included) before it is failed.
	MaxRetries int
	// Repo is the repository the agents work in; Worktree gives each task a git worktree of its
	// own, on branch agent/<bead>, made from BaseBranch (the repository's branch when empty) with
	// the branches of the task's done dependencies merged in.
	Repo       string
	Worktree   bool
	BaseBranch string
	// StateDir is where the run and result records go (absolute).
	StateDir string
	// Self is the command line of the supervisor verb (this binary's "queue __supervise
	// --state-dir DIR"); attempt.Launch adds the handoff and the bead.
	Self []string
	// Checkpoint, when set, is the command line of the checkpoint verb (this binary's "queue
	// __checkpoint", CheckpointVerb): each attempt of a claude agent here gets a settings file
	// whose PreToolUse and PostToolUse hooks run it, stamping the agent's state file at each
	// tool use (not on hosts, whose dispatch runs the agent).
	Checkpoint []string
	// Env is the agents' environment, to which each attempt adds its own variables.
	Env []string
	// Timeout, KillGrace and MinFreeMB are each attempt's (dispatch's DISPATCH_* settings, or
	// --iteration-timeout); Inactivity stops an attempt whose agent printed nothing for that
	// long (--inactivity-timeout; 0: never). Either ends the attempt as a failure (status
	// timeout), retried as any other.
	Inactivity time.Duration
	Timeout    time.Duration
	KillGrace  time.Duration
	MinFreeMB  int64
	// Log receives one line per event (claims, ends, retries, the budget).
	Log io.Writer
	// NoProgress is the no-progress breaker's N (0: off): a task whose failed attempts left
	// its working tree as it was, or failed the same way, N in a row, is failed (reason
	// no-progress) without its other retries.
	NoProgress int
	// MaxCallsPerHour, when above 0, is how many attempts the run starts in any CallWindow
	// (an hour when 0): an agent that would start one more waits until the oldest leaves the
	// window (a wait, never a failure).
	MaxCallsPerHour int
	CallWindow      time.Duration
	// CommitEach commits what each attempt changed in its task's working tree (the queue's
	// and dispatch's state left out), trailers Ralph-Loop <plan>-<task> and Ralph-Iteration
	// <attempt> (internal/ralph/checkpoint), before the breaker looks at the tree.
	CommitEach bool
	// LimitWait is how long a usage limit whose message names no reset holds its task
	// (default DefaultLimitWait).
	LimitWait time.Duration
	// Hook, when set, is told each task's transitions (start, end, limit, breaker, failure)
	// and the run's start and end; Run closes it (waits for it) before it returns.
	Hook *hook.Hook
	// Hosts, when set, run the tasks on other machines over OpenSSH (ralph queue run --hosts),
	// each attempt through swarm run's per-host executor, executor.Remote: the task's branch
	// agent/<bead>, made here from HEAD in its worktree, is pushed to the host's clone, the
	// host's dispatch runs the agent, its records come back into StateDir and its branch into
	// the worktree (Hosts implies Worktree). Agent i works in the i-th of the hosts' slots (NAME-1 … NAME-max_agents,
	// host by host): Agents is at most their number. A host that stops answering is offline:
	// its agents end, and their tasks go back to pending, held until the attempt's deadline
	// there (Timeout and KillGrace, as the host's dispatch was given them) has passed.
	Hosts []*executor.Remote
}

// DefaultLimitWait is how long a usage limit holds a task when its message names no reset, as
// the loops wait.
const DefaultLimitWait = 30 * time.Minute

// Result is how a run ended.
type Result struct {
	Counts        map[string]int // tasks by status at the end
	CostUSD       float64        // the plan's total cost so far
	BudgetReached bool
	// Interrupted: the context ended; the attempts at work were stopped, their tasks pending
	// again (no retry counted) for the next run.
	Interrupted bool
	// Errors counts what the run could not record (a claim, a task's end, an agent's end: a
	// full disk, a queue file it cannot write); LastError is the last one's message.
	Errors    int
	LastError string
	// Timing is where the run's time went, summed over its tasks.
	Timing Timing
	// Archived is where the task queue was archived, when every task is done or skipped.
	Archived string
}

// Timing splits the time spent on tasks: the queue's own work (claims, the agents' states,
// judging the end, recording it) and dispatch's (attempt.Open and Launch: records, registry,
// the supervisor started and handed its spec), apart from the wait for the attempt's end (the
// agent's run, and its supervisor recording it).
type Timing struct {
	Tasks               int64
	Queue, Launch, Wait time.Duration
}

// runner is one run's shared state.
type runner struct {
	cfg  Config
	plan string
	dir  attempt.Dir

	mu sync.Mutex
	// res is the run's result as it goes (under mu): CostUSD the plan's total this run holds,
	// BudgetReached once the budget (Config.Budget, as internal/ralph/rails applies it to every
	// loop) was found reached, Errors and LastError what could not be recorded, Timing where
	// the time went. The tasks are counted at the end.
	res Result
	// base is the branch the worktrees start from, baseSHA its commit when the run started,
	// ident what the merge commits are prefixed with (git.Repo.Identity) (--worktree).
	base, baseSHA string
	ident         []string
	// checkoutHook: the repository has a post-checkout hook, so each worktree is made by one
	// git worktree add under gitMu, which runs it as git always did (git.MergeSpec.Hooked).
	checkoutHook bool

	// local runs the attempts on this machine (without Config.Hosts).
	local *executor.Local
	// attempts is the context the attempts run in, the run's: --hard-budget ends it (stopAll,
	// cause errHardBudget), which stops the attempts at work and any that starts after (their
	// executors stop the agents, their supervisors record the ends; the tasks go back to pending).
	attempts context.Context
	stopAll  context.CancelCauseFunc
	// slots are the host slots of Config.Hosts in order: agent-N works in the Nth.
	slots []hostSlot
	// gitMu registers and removes the tasks' worktrees here one at a time (--worktree, Hosts):
	// git worktree add fails on one being made at the same moment. The checkouts and the
	// merges run outside it (git.MergeSpec).
	gitMu sync.Mutex
	// calls are the start times of the attempts this run started within the last CallWindow
	// (--max-calls-per-hour); callsWaiting says the limit's wait was told. Both are the
	// claims' alone, under the scheduler's lock (queue.mu: Claim is called with it held).
	calls        rails.Calls
	callsWaiting bool
	// stuckOnce tells once of the tasks pending behind claims no agent holds.
	stuckOnce sync.Once
}

// failed logs what could not be recorded and counts it: the run then cannot end well.
func (r *runner) failed(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("%s", msg)
	r.mu.Lock()
	r.res.Errors++
	r.res.LastError = msg
	r.mu.Unlock()
}

// spent adds d to one of the timing's sums.
func (r *runner) spent(sum *time.Duration, d time.Duration) {
	r.mu.Lock()
	*sum += d
	r.mu.Unlock()
}

// Run works through the queue until no task can run any more (all done, failed, blocked or
// skipped), the budget is reached, or ctx ends. The caller holds the directory's runner lock.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := newRunner(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.attempts, r.stopAll = context.WithCancelCause(ctx)
	defer r.stopAll(nil)
	adopted, err := r.recover(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	defer cfg.Hook.Close()
	cfg.Hook.Send(hook.Event{Kind: "queue", Event: hook.Start, Plan: r.plan, Status: "running"})
	// The agents are scheduled until none may take a task any more, or ctx ends; each adopted
	// claim is an agent's (agents), not yet given it.
	q := &queue{r: r, ctx: ctx, adopting: len(adopted)}
	q.sched = taskgraph.NewScheduler[*agentRun](nil, r.agents(ctx, adopted))
	q.sched.ClaimLoop(ctx, &q.mu, q)
	// The slots' supervisors, idle now, are let go (an attempt still at work, interrupted, is
	// recorded by its supervisor before it exits).
	r.local.Close()
	// The run's result: its cost and errors, read without r.mu (nothing else touches it once
	// the scheduler waited for every agent), and the tasks counted under the guard (a queue an
	// agent rewrote after the last task is put back first).
	res := r.res
	res.Interrupted = ctx.Err() != nil
	err = r.updateQueue(context.WithoutCancel(ctx), func(_ *store.Tx, q *store.Queue) error {
		res.Counts = q.Counts()
		return nil
	})
	if err == nil && !res.Interrupted {
		r.end(ctx, &res)
	}
	return &res, err
}

// newRunner checks cfg and fills in what it leaves at zero, makes the run's runner, with the
// hosts' slots in order, sets the store's guard, and finds the worktrees' base (--worktree).
func newRunner(ctx context.Context, cfg Config) (*runner, error) {
	if cfg.Agents < 1 {
		return nil, errors.New("at least one agent is needed")
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 1)
	if cfg.LimitWait <= 0 {
		cfg.LimitWait = DefaultLimitWait
	}
	if cfg.CallWindow <= 0 {
		cfg.CallWindow = time.Hour
	}
	// A host's task works on its branch, fetched back into its worktree here.
	cfg.Worktree = cfg.Worktree || len(cfg.Hosts) > 0
	r := &runner{cfg: cfg, plan: cfg.Store.Plan, dir: attempt.NewDir(cfg.StateDir),
		// This machine as the run's executor: each attempt one of dispatch's, with the queue's
		// records, its agent and model as Config chose them.
		local: &executor.Local{N: cfg.Agents, StateDir: cfg.StateDir, Self: cfg.Self,
			Agents: &agent.Config{Agents: map[string]*agent.Profile{cfg.AgentName: cfg.Profile}},
			Env:    cfg.Env, KillGrace: cfg.KillGrace, MinFreeMB: cfg.MinFreeMB, Template: Template},
		calls: rails.Calls{Max: cfg.MaxCallsPerHour, Window: cfg.CallWindow}}
	for _, h := range cfg.Hosts {
		for _, s := range h.Slots() {
			r.slots = append(r.slots, hostSlot{h, s})
		}
	}
	if len(cfg.Hosts) > 0 && cfg.Agents > len(r.slots) {
		return nil, fmt.Errorf("%d agents, but the hosts run %d at once (their max_agents)", cfg.Agents, len(r.slots))
	}
	// The agents work in the repository that holds the queue's files: the task states this
	// run holds are checked against what another process writes there (store.Guard).
	cfg.Store.Guard = true
	cfg.Store.Warn = func(msg string) { r.logf("warning: %s", msg) }
	if cfg.Worktree {
		if err := r.resolveBase(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// agents are the run's agents, agent-1 to agent-N each in its slot, then an agent for each
// adopted claim of an agent this run does not have.
func (r *runner) agents(ctx context.Context, adopted map[string]*claim) []*agentRun {
	local := r.local.Slots()
	agents := make([]*agentRun, 0, r.cfg.Agents+len(adopted))
	for i := 1; i <= r.cfg.Agents; i++ {
		id := AgentID(i)
		a := &agentRun{r: r, id: id, adopted: adopted[id], slot: local[i-1]}
		if len(r.slots) > 0 {
			a.host = &r.slots[i-1]
		}
		if a.adopted == nil {
			// Seed 004: the agent's state file is created when the agent starts, initializing
			// until its first attempt works. An adopted claim's file is left as the last run
			// wrote it: it names the attempt (and its host) to recover.
			a.state(ctx, store.AgentInitializing, nil, 0)
		}
		agents = append(agents, a)
		delete(adopted, id)
	}
	for id, c := range adopted {
		// An agent of an earlier run that had more agents: it finishes its task, no more.
		agents = append(agents, &agentRun{r: r, id: id, adopted: c, extra: true, slot: executor.Slot{ID: id}})
	}
	return agents
}

// end closes a run that was not interrupted: the queue is archived when every task is done,
// and the hook told how the run ended.
func (r *runner) end(ctx context.Context, res *Result) {
	status, reason := "completed", ""
	switch {
	case res.BudgetReached:
		status, reason = "stopped", "budget"
	case res.Counts[store.Failed]+res.Counts[store.Blocked]+res.Counts[store.Pending]+res.Counts[store.Claimed] > 0:
		status = "failed"
	default:
		// Every task done (or skipped): the queue is archived, as the seed's lifecycle has it.
		if path, err := r.cfg.Store.ArchiveQueue(context.WithoutCancel(ctx), time.Now()); err != nil {
			r.failed("%v", err)
			res.Errors, res.LastError = res.Errors+1, oneLine(err)
		} else {
			res.Archived = path
			r.logf("plan %s completed: its task queue is archived in %s", r.plan, path)
		}
	}
	r.cfg.Hook.Send(hook.Event{Kind: "queue", Event: hook.End, Plan: r.plan, Status: status, Reason: reason, CostUSD: new(res.CostUSD)})
}

// resolveBase finds the branch the worktrees start from, and its commit now: every task's
// worktree of this run starts from that commit.
func (r *runner) resolveBase(ctx context.Context) error {
	repo := git.Repo{Dir: r.cfg.Repo}
	if !repo.IsRepo(ctx) {
		return fmt.Errorf("--worktree: %s is not a git repository; run the queue in one, or without --worktree", r.cfg.Repo)
	}
	r.base = r.cfg.BaseBranch
	if r.base == "" {
		b, err := repo.Branch(ctx)
		if err != nil {
			return fmt.Errorf("--worktree: %w", err)
		}
		if b == "HEAD" {
			return fmt.Errorf("--worktree: %s is on no branch (a detached HEAD); check out the branch the tasks start from", r.cfg.Repo)
		}
		r.base = b
	}
	// The branch in full: git reads a bare name as a tag of that name first.
	sha, err := repo.Commit(ctx, "refs/heads/"+r.base)
	if err != nil {
		return fmt.Errorf("--worktree: the base branch %q is no branch with a commit (give a local branch's name): %w", r.base, err)
	}
	r.baseSHA, r.ident = sha, repo.Identity(ctx, "ralph queue", "ralph-queue@localhost")
	r.checkoutHook = repo.HasHook(ctx, "post-checkout")
	return nil
}

// event tells the hook of a task's transition.
func (r *runner) event(name, task string, attempt int, status, reason string, cost float64) {
	r.cfg.Hook.Send(hook.Event{Kind: "queue", Event: name, Plan: r.plan, Task: task, Iteration: attempt, Status: status,
		Reason: reason, CostUSD: &cost, Log: r.dir.Layout.LogPath(plan.Bead(r.plan, task))})
}

// AgentID is the id of the run's agent i (1-based): agent-i, as the seed names agents.
func AgentID(i int) string { return fmt.Sprintf("agent-%d", i) }

// logf writes one line to the run's log.
func (r *runner) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		r.mu.Lock()
		fmt.Fprintf(r.cfg.Log, format+"\n", args...)
		r.mu.Unlock()
	}
}

// budgetReached says whether no agent may start a task any more.
func (r *runner) budgetReached() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Once reached, it stays reached.
	r.res.BudgetReached = r.res.BudgetReached || (&rails.Rails{BudgetUSD: r.cfg.Budget}).Reached(r.res.CostUSD)
	return r.res.BudgetReached
}

// now is the time as the queue's files write it.
func now() string { return record.FormatTime(time.Now()) }

// start writes the run's start into the progress file: the agents, the budget; the total cost
// so far is the plan's, kept across runs, and the budget counts it.
func (r *runner) start(ctx context.Context) error {
	t := now()
	return r.updateQueue(ctx, func(tx *store.Tx, q *store.Queue) error {
		p, err := tx.Progress()
		if err != nil {
			return err
		}
		p.StartedAt = cmp.Or(p.StartedAt, t)
		p.PlanID, p.UpdatedAt = r.plan, t
		p.AgentsTotal = r.cfg.Agents
		p.BudgetLimitUSD = r.cfg.Budget
		p.BaseBranch = cmp.Or(r.base, p.BaseBranch)
		p.Phase = q.Phase()
		for i := 1; i <= r.cfg.Agents; i++ {
			a := agentEntry(p, AgentID(i))
			a.Status, a.StartedAt, a.CompletedAt = store.AgentActive, t, nil
		}
		recount(p)
		if !store.Cost(p.TotalCostUSD) {
			r.logf("warning: %s's total_cost_usd (%v) is not a cost; counted from $0", r.cfg.Store.Dir.Progress(r.plan), p.TotalCostUSD)
			p.TotalCostUSD = 0
		}
		r.res.CostUSD = p.TotalCostUSD
		tx.ChangedProgress()
		return nil
	})
}

// updateQueue runs fn in a transaction of the store, the task queue read.
func (r *runner) updateQueue(ctx context.Context, fn func(tx *store.Tx, q *store.Queue) error) error {
	return r.cfg.Store.Update(ctx, func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		return fn(tx, q)
	})
}

// agentEntry returns the progress entry of agent id, adding it when there is none.
func agentEntry(p *store.Progress, id string) *store.Agent {
	for i := range p.Agents {
		if p.Agents[i].ID == id {
			return &p.Agents[i]
		}
	}
	p.Agents = append(p.Agents, store.Agent{ID: id, Status: store.AgentActive, StartedAt: now()})
	return &p.Agents[len(p.Agents)-1]
}

// recount derives the progress file's counters and averages from its agents.
func recount(p *store.Progress) {
	p.AgentsActive, p.AgentsCompleted, p.AgentsFailed = 0, 0, 0
	var tasks, turns int
	var cost, secs float64
	for _, a := range p.Agents {
		switch a.Status {
		case store.AgentActive:
			p.AgentsActive++
		case store.AgentCompleted:
			p.AgentsCompleted++
		case store.AgentFailed:
			p.AgentsFailed++
		}
		// Seed 004's agent is one agent run at a task: one that failed for good is a failed
		// agent, though the queue's agent goes on to its next task.
		p.AgentsFailed += a.TasksFailed
		tasks += a.Tasks
		cost += a.CostUSD
		secs += a.DurationSeconds
		turns += a.NumTurns
	}
	p.Performance = store.Performance{TotalTurns: turns}
	if tasks > 0 {
		// An "agent" of the seed's averages is one agent run: here, one attempt at a task.
		p.Performance.AvgCostPerAgent = cost / float64(tasks)
		p.Performance.AvgDurationSeconds = secs / float64(tasks)
		p.Performance.AvgTurnsPerAgent = float64(turns) / float64(tasks)
	}
}
