// Package runevents is what a swarm run tells of itself as it works: its events (run start
// and end, each task's start, end, retry, failure, block and re-queue, a host gone offline, a
// merge), kept one JSON object a line in the execution's events file
// (.swarm/history/<id>.events.jsonl) and handed in order to a consumer of the run's (swarm
// run's progress lines and its --on-event hook); and the reading of that file back, as it
// grows, for swarm run follow and wait.
//
// The scheduler (package swarmrun) calls a Log's methods at each transition, under its own
// lock: a Log writes the line at once and never waits for its consumer (a buffer, what does
// not fit dropped and counted). The file is locked while the run runs, which is how a reader
// tells a run at work from one gone.
package runevents

import "path/filepath"

// Event is one transition of a run, as the consumer is told it and as the events file keeps
// it. The fields' order is the file's: do not reorder them.
type Event struct {
	// Seq numbers the events of one run of the execution from 1 (a resumed execution's run
	// starts again at 1, after its run-start); an event appended outside a run (Append) has 0.
	Seq  int    `json:"seq"`
	Time string `json:"time"` // RFC 3339, UTC
	// Event is the transition: one of the names below.
	Event     string `json:"event"`
	Execution string `json:"execution_id"`
	// Task, Attempt, Agent (the slot) and Host say where a task's event happened; Host alone
	// names the host of host-offline.
	Task    string `json:"task,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Host    string `json:"host,omitempty"`
	// Status is the task's (or, for run-start and run-end, the execution's) status after it;
	// Reason says why (a failure's, a block's, an offline host's).
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Commit is a completed task's commit (task-end) or a merge's; Branch a merge's.
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
	// DurationSeconds is how long the attempt took (task-end, task-failed, task-retry).
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	// Tasks and Slots are the execution's tasks and this run's slots (run-start); Counts the
	// tasks by where they stand (run-start: what earlier runs completed; run-end: the end).
	Tasks  int     `json:"tasks,omitempty"`
	Slots  int     `json:"slots,omitempty"`
	Counts *Counts `json:"counts,omitempty"`
	// Halted: --halt stopped the run (run-end).
	Halted bool `json:"halted,omitempty"`
	// WallSeconds is how long this run took, from its start to its end (run-end).
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

// Counts counts an execution's tasks.
type Counts struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Blocked   int `json:"blocked"`
	Skipped   int `json:"skipped"`
	// Pending is every task that did not end (not run, queued, or at work).
	Pending int `json:"pending"`
	// Retries counts the attempts that failed with attempts left, over the execution's runs.
	Retries int `json:"retries"`
}

// The events of a run.
const (
	RunStart = "run-start" // the run began (a resume too): tasks, slots, counts so far
	RunEnd   = "run-end"   // the run ended: status completed, failed or paused; counts
	// A task's attempt started (adopted: one an earlier run left at work), ended well (the
	// task completed), failed with attempts left (retry) or for good, or the task was blocked
	// (by a dependency failed or blocked, or a conflict merging its dependencies).
	TaskStart   = "task-start"
	TaskEnd     = "task-end"
	TaskRetry   = "task-retry"
	TaskFailed  = "task-failed"
	TaskBlocked = "task-blocked"
	// A host went offline (once per host), and each task taken back from it to the queue.
	HostOffline  = "host-offline"
	TaskRequeued = "task-requeued"
	// Merge is a branch merged back into the base (swarm run merge): Task, Branch, Commit.
	Merge = "merge"
)

// Path is execution id's events file in the repository whose top is root.
func Path(root, id string) string {
	return filepath.Join(root, historyDir, id+".events.jsonl")
}

// historyDir is where the events files are, below the repository's top.
const historyDir = ".swarm/history"
