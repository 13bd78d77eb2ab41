package runevents

import "github.com/agentfleet/fleet/internal/ralph/hook"

// HookEvent is e as an --on-event hook reads it (ralph's hook.Event, kind "run"; the attempt
// is its iteration, as the queue's tasks have it).
func HookEvent(e Event) hook.Event {
	h := hook.Event{Kind: "run", Event: e.Event, Execution: e.Execution, Task: e.Task, Branch: e.Branch, Iteration: e.Attempt, Agent: e.Agent,
		Host: e.Host, Status: e.Status, Reason: e.Reason, Commit: e.Commit, Time: e.Time,
		Tasks: e.Tasks, Slots: e.Slots, WallSeconds: e.WallSeconds}
	if c := e.Counts; c != nil {
		h.Counts = &hook.Counts{Completed: c.Completed, Failed: c.Failed, Blocked: c.Blocked, Skipped: c.Skipped,
			Pending: c.Pending, Retries: c.Retries}
	}
	return h
}
