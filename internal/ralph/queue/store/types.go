// Package store keeps the task queue's files in <repo>/.claude/ralph/, in the formats of the
// Claude ralph runner (seed 004): task-queue-<plan>.json, retry-queue-<plan>.json,
// progress-<plan>.json and agent-state-<agent>.json. Every change is made under one lock (the
// seed's task-queue.lock) in a transaction (Tx) that writes each file it changed once,
// atomically (fsx.WriteFileAtomic: temp file, fsync, rename), so a claim is one lock and one
// write, and two agents can never claim one task.
package store

import "github.com/agentfleet/fleet/internal/ralph/breaker"

// Task statuses. The seed has pending, claimed, done and failed; blocked (a dependency failed,
// so it cannot run) and skipped (a user said so: it counts as done for its dependents) are
// ours, and the schema accepts them.
const (
	Pending = "pending"
	Claimed = "claimed"
	Done    = "done"
	Failed  = "failed"
	Blocked = "blocked"
	Skipped = "skipped"
)

// TaskQueue is task-queue-<plan>.json.
type TaskQueue struct {
	PlanID    string `json:"plan_id"`
	CreatedAt string `json:"created_at"`
	Tasks     []Task `json:"tasks"`
}

// Task is one task of the queue, as the seed has it, with fields of ours (omitted when empty):
// the attempt number of the dispatch that runs (or ran) its current claim, the error of its
// last failure, the cost of its attempts so far, the reason it failed when the no-progress
// breaker failed it, the breaker's count over its failed attempts, and until when a usage
// limit holds it.
type Task struct {
	ID           string   `json:"id"`
	Description  string   `json:"description"`
	Status       string   `json:"status"`
	ClaimedBy    *string  `json:"claimed_by"`
	Retries      int      `json:"retries"`
	Dependencies []string `json:"dependencies"`
	CreatedAt    string   `json:"created_at"`
	ClaimedAt    *string  `json:"claimed_at"`
	CompletedAt  *string  `json:"completed_at"`
	Attempt      int      `json:"attempt,omitempty"`
	Error        string   `json:"error,omitempty"`
	CostUSD      float64  `json:"cost_usd,omitempty"`
	// Reason is breaker.Reason ("no-progress") for a task the no-progress breaker failed, and
	// ReasonConflict for one blocked by its dependencies' branches conflicting.
	Reason string `json:"reason,omitempty"`
	// Branch is the task's branch when it runs in a worktree of its own (--worktree).
	Branch string `json:"branch,omitempty"`
	// Breaker is the no-progress breaker's count over the task's failed attempts.
	Breaker *breaker.State `json:"breaker,omitempty"`
	// HeldUntil (RFC 3339, UTC): a usage limit holds the pending task until then; no agent
	// claims it before.
	HeldUntil string `json:"held_until,omitempty"`
}

// ReasonConflict is the reason of a task blocked because its dependencies' branches conflict
// when merged into its worktree: it stays blocked (its dependents too) until it is retried or
// skipped.
const ReasonConflict = "merge-conflict"

// RetryQueue is retry-queue-<plan>.json: the failures waiting for their retry.
type RetryQueue struct {
	Retries []Retry `json:"retries"`
	PlanID  string  `json:"plan_id"`
}

// Retry is one failed attempt of a task that will be tried again.
type Retry struct {
	TaskID     string `json:"task_id"`
	AgentID    string `json:"agent_id"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error"`
	QueuedAt   string `json:"queued_at"`
	MaxRetries int    `json:"max_retries"`
}

// Phases of a plan's execution (seed 004's progress.phase), as the queue reads them from its
// tasks (Queue.Phase): implementation while a task has yet to be tried, verify_fix while
// every task left is a retry of a failed one, review once no task is left to run.
const (
	PhaseImplementation = "implementation"
	PhaseVerifyFix      = "verify_fix"
	PhaseReview         = "review"
)

// Progress is progress-<plan>.json.
type Progress struct {
	PlanID          string   `json:"plan_id"`
	Phase           string   `json:"phase"`
	AgentsTotal     int      `json:"agents_total"`
	AgentsCompleted int      `json:"agents_completed"`
	AgentsFailed    int      `json:"agents_failed"`
	AgentsActive    int      `json:"agents_active"`
	TotalCostUSD    float64  `json:"total_cost_usd"`
	BudgetLimitUSD  *float64 `json:"budget_limit_usd"`
	// BaseBranch (ours): the branch the tasks' worktrees start from (--worktree).
	BaseBranch  string      `json:"base_branch,omitempty"`
	StartedAt   string      `json:"started_at"`
	UpdatedAt   string      `json:"updated_at"`
	Performance Performance `json:"performance"`
	Agents      []Agent     `json:"agents"`
}

// Performance is averaged over the tasks the agents finished.
type Performance struct {
	AvgCostPerAgent    float64 `json:"avg_cost_per_agent"`
	AvgTurnsPerAgent   float64 `json:"avg_turns_per_agent"`
	AvgDurationSeconds float64 `json:"avg_duration_seconds"`
	TotalTurns         int     `json:"total_turns"`
}

// Agent statuses (progress and agent state).
const (
	AgentInitializing = "initializing"
	AgentWorking      = "working"
	AgentActive       = "active"
	AgentCompleted    = "completed"
	AgentFailed       = "failed"
	AgentBudget       = "budget"
)

// Agent is one agent of progress-<plan>.json: one of the run's N parallel agents, which claims
// task after task. Its cost and duration add up over its tasks; Tasks (ours) counts them.
type Agent struct {
	ID              string  `json:"id"`
	Status          string  `json:"status"`
	TaskID          *string `json:"task_id"`
	CostUSD         float64 `json:"cost_usd"`
	NumTurns        int     `json:"num_turns"`
	DurationSeconds float64 `json:"duration_seconds"`
	StartedAt       string  `json:"started_at"`
	CompletedAt     *string `json:"completed_at"`
	Tasks           int     `json:"tasks,omitempty"`
	// TasksFailed (ours) counts the tasks the agent failed for good (out of retries, or
	// failed by the no-progress breaker): each is a failed agent of the seed's agents_failed.
	TasksFailed int `json:"tasks_failed,omitempty"`
}

// AgentState is agent-state-<agent>.json, kept for crash recovery. Bead and Attempt (ours) name
// the dispatch the agent runs.
type AgentState struct {
	AgentID        string       `json:"agent_id"`
	PlanID         string       `json:"plan_id"`
	TaskID         *string      `json:"task_id"`
	Status         string       `json:"status"`
	LastCheckpoint string       `json:"last_checkpoint"`
	Context        AgentContext `json:"context"`
	Bead           string       `json:"bead,omitempty"`
	Attempt        int          `json:"attempt,omitempty"`
	// Host is the host (hosts.yaml's name) the attempt runs on, with --hosts: a runner
	// restarted after a crash looks for the attempt there.
	Host string `json:"host,omitempty"`
}

// AgentContext is what the agent has done so far.
type AgentContext struct {
	FilesModified []string `json:"files_modified"`
	CommitsMade   []string `json:"commits_made"`
	Notes         string   `json:"notes"`
}
