package runevents

import "github.com/agentfleet/fleet/internal/ralph/hook"

// HookEvent is e as an --on-event hook reads it (ralph's hook.Event, kind "run"; the attempt
// is its iteration, as the queue's tasks have it).
func HookEvent(e Event) hook.Event {
	return hook.Event{Kind: "run", Event: e.Event, Execution: e.Execution, Task: e.Task, Iteration: e.Attempt, Agent: e.Agent,
		Host: e.Host, Status: e.Status, Reason: e.Reason, Commit: e.Commit, Time: e.Time}
}
