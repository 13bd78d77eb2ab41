package runevents

import "time"

// The statuses the events name: a task's after its event (the states' own words), and the
// execution's while its run runs.
const (
	statusRunning   = "running"
	statusQueued    = "queued"
	statusCompleted = "completed"
	statusBlocked   = "blocked"
)

// At is where a task's event happened: the task, its attempt, the slot and the slot's host.
type At struct {
	Task    string
	Attempt int
	Agent   string
	Host    string
}

// event is a task's event at at.
func (at At) event(name, status, reason string) Event {
	return Event{Event: name, Task: at.Task, Attempt: at.Attempt, Agent: at.Agent, Host: at.Host, Status: status, Reason: reason}
}

// RunStart: the run began (a resume too), with the execution's tasks, this run's slots, and
// what earlier runs ended (c).
func (l *Log) RunStart(tasks, slots int, c Counts) {
	l.Emit(Event{Event: RunStart, Status: statusRunning, Tasks: tasks, Slots: slots, Counts: &c})
}

// RunEnd: the run ended, the execution's status final (halted: --halt stopped it), its tasks
// counted, with how long the run took since Open (to the millisecond).
func (l *Log) RunEnd(status string, halted bool, c Counts) {
	if l == nil {
		return
	}
	wall := time.Since(l.started).Round(time.Millisecond).Seconds()
	l.Emit(Event{Event: RunEnd, Status: status, Halted: halted, Counts: &c, WallSeconds: wall})
}

// TaskStart: an attempt started (reason: why it is not a new one, an adopted attempt).
func (l *Log) TaskStart(at At, reason string) {
	l.Emit(at.event(TaskStart, statusRunning, reason))
}

// TaskRetry: an attempt failed (reason) after seconds, with attempts left: the task is queued.
func (l *Log) TaskRetry(at At, reason string, seconds float64) {
	e := at.event(TaskRetry, statusQueued, reason)
	e.DurationSeconds = seconds
	l.Emit(e)
}

// TaskEnd: the task ended with status (its attempt's commit, why when not completed, how long
// the attempt took): task-end when completed, task-blocked when blocked, task-failed else.
func (l *Log) TaskEnd(at At, status, commit, reason string, seconds float64) {
	name := TaskFailed
	switch status {
	case statusCompleted:
		name = TaskEnd
	case statusBlocked:
		name = TaskBlocked
	}
	e := at.event(name, status, reason)
	e.Commit, e.DurationSeconds = commit, seconds
	l.Emit(e)
}

// TaskBlocked: a task that never ran is blocked (reason: the dependency failed or blocked).
func (l *Log) TaskBlocked(task, reason string) {
	l.Emit(At{Task: task}.event(TaskBlocked, statusBlocked, reason))
}

// HostOffline: host went offline (reason); said once per host.
func (l *Log) HostOffline(host, reason string) {
	l.Emit(Event{Event: HostOffline, Host: host, Reason: reason})
}

// TaskRequeued: a task's attempt was taken back from a host gone offline: the task is queued.
func (l *Log) TaskRequeued(at At, reason string) {
	l.Emit(at.event(TaskRequeued, statusQueued, reason))
}
