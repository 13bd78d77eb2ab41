package swarmrun

import (
	"context"
	"errors"
	"io/fs"

	"github.com/agentfleet/fleet/internal/runevents"
)

// The run's events are package runevents': the scheduler tells its Log (runner.events) each
// transition, under mu. What is here is what the events need of the state.

// eventDrain bounds how long the run's end waits for Config.Events to take the events still
// waiting (runevents.Options.Drain).
var eventDrain = runevents.DefaultDrain

// eventCounts counts the state's tasks, and their retries (under mu).
func (r *runner) eventCounts() runevents.Counts {
	c := r.st.counts()
	retries := 0
	for _, t := range r.st.Tasks {
		retries += valueOr(t.Trace, Trace{}).RetryCount
	}
	return runevents.Counts{Completed: c[Completed], Failed: c[Failed], Blocked: c[Blocked], Skipped: c[Skipped],
		Pending: c[Pending] + c[Queued] + c[Assigned] + c[Running], Retries: retries}
}

// taskEnded tells the events of task t's end with its status (under mu): completed, failed or
// blocked.
func (r *runner) taskEnded(t *Task, slot Slot) {
	tr := valueOr(t.Trace, Trace{})
	at := runevents.At{Task: t.ID, Agent: slot.ID, Host: slot.Host, Attempt: tr.Attempt}
	r.events.TaskEnd(at, t.Status, valueOr(tr.CommitSHA, ""), valueOr(t.Error, TaskError{}).Message, valueOr(tr.DurationSeconds, 0))
}

// valueOr is an optional value of the state, or none when it is not known.
func valueOr[T any](p *T, none T) T {
	if p == nil {
		return none
	}
	return *p
}

// logTransition logs a line of a task's transition, unless Config.Events is told them: then
// its consumer says what it wants (swarm run prints them, --quiet not).
func (r *runner) logTransition(format string, args ...any) {
	if r.cfg.Events == nil {
		r.logf(format, args...)
	}
}

// Watch calls fn with each event of execution id (runevents.Follow), those of its runs so far
// first, then each as it is appended while a run of it is at work, and returns when none is:
// the execution's state then (Find). An execution without an events file (run before they
// were kept) is only looked up.
func Watch(ctx context.Context, p Paths, id string, fn func(runevents.Event)) (*State, error) {
	if id == "" {
		cur, err := Find(p, "")
		if err != nil {
			return nil, err
		}
		id = cur.ExecutionID
	}
	err := runevents.Follow(ctx, p.Root, id, fn)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, runevents.ErrBadID) {
		return nil, err
	}
	// A bad id: Find says so as it says it of any.
	return Find(p, id)
}
