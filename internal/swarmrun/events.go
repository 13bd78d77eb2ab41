package swarmrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Event is one transition of a run, as Config.Events is told it and as the run's events file
// (Paths.Events, one JSON object a line) keeps it for swarm run follow and wait.
type Event struct {
	// Seq numbers the events of one run of the execution from 1 (a resumed execution's run
	// starts again at 1, after its run-start).
	Seq  int    `json:"seq"`
	Time string `json:"time"` // RFC 3339, UTC
	// Event is the transition: one of the Event* names.
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
	Tasks  int          `json:"tasks,omitempty"`
	Slots  int          `json:"slots,omitempty"`
	Counts *EventCounts `json:"counts,omitempty"`
	// Halted: --halt stopped the run (run-end).
	Halted bool `json:"halted,omitempty"`
}

// EventCounts counts an execution's tasks.
type EventCounts struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Blocked   int `json:"blocked"`
	Skipped   int `json:"skipped"`
	// Pending is every task that did not end (not run, queued, or at work).
	Pending int `json:"pending"`
}

// The events of a run.
const (
	EventRunStart = "run-start" // the run began (a resume too): tasks, slots, counts so far
	EventRunEnd   = "run-end"   // the run ended: status completed, failed or paused; counts
	// A task's attempt started (adopted: one an earlier run left at work), ended well (the
	// task completed), failed with attempts left (retry) or for good, or the task was blocked
	// (by a dependency failed or blocked, or a conflict merging its dependencies).
	EventTaskStart   = "task-start"
	EventTaskEnd     = "task-end"
	EventTaskRetry   = "task-retry"
	EventTaskFailed  = "task-failed"
	EventTaskBlocked = "task-blocked"
	// A host went offline (once per host), and each task taken back from it to the queue.
	EventHostOffline  = "host-offline"
	EventTaskRequeued = "task-requeued"
	// EventMerge is a branch merged back into the base (swarm run merge): Task, Branch, Commit.
	EventMerge = "merge"
)

// EventBuffer is how many events may wait for a slow Config.Events; beyond, they are dropped
// (and counted), the run never held.
const EventBuffer = 1024

// eventDrain bounds how long the run's end waits for Config.Events to take the events still
// waiting: a consumer that hangs does not hold the run's end longer.
var eventDrain = 5 * time.Second

// Events is the run's events file, .swarm/history/<id>.events.jsonl: appended to by each run
// of the execution, read by swarm run follow and wait.
func (p Paths) Events(id string) string {
	return filepath.Join(p.Dir(), "history", id+".events.jsonl")
}

// eventLog sends a run's events to its events file and to Config.Events. The file is written
// at once (a line appended, as the joblog is); Config.Events is called in order from one
// goroutine of its own, fed through a buffer of EventBuffer, so that a slow consumer never
// holds the scheduler: what does not fit is dropped and counted.
type eventLog struct {
	execution string
	// file is the events file, appended to, held locked while the run runs (readers tell a
	// run at work from one gone by it, locked or not); nil when it could not be opened.
	file    *os.File
	seq     int
	ch      chan Event
	done    chan struct{}
	dropped atomic.Int64
	// abandoned: the run ended and the consumer did not take its events in time; it is
	// called no more.
	abandoned atomic.Bool
}

// openEvents opens the execution's events file below the repository's top, never through a
// link, and locks it; a failure leaves the run without it (logged): the events are the run's
// news, not its record.
func (r *runner) openEvents() *eventLog {
	l := &eventLog{execution: r.st.ExecutionID}
	f, err := openEventsFile(r.paths, r.st.ExecutionID)
	if err != nil {
		r.logf("not keeping the run's events (swarm run follow and wait will not see them): %v", err)
	}
	l.file = f
	if r.cfg.Events != nil {
		l.ch, l.done = make(chan Event, EventBuffer), make(chan struct{})
		go func() {
			defer close(l.done)
			for e := range l.ch {
				if l.abandoned.Load() {
					l.dropped.Add(1)
					continue
				}
				r.cfg.Events(e)
			}
		}()
	}
	return l
}

// openEventsFile opens .swarm/history/<id>.events.jsonl for appending: every directory from the
// repository's top a real one (fsx.OpenDirBeneath), the file itself no link (O_NOFOLLOW) and a
// regular file (a FIFO planted there would hold the open: O_NONBLOCK), locked exclusively.
func openEventsFile(p Paths, id string) (*os.File, error) {
	if err := statedir.CheckName(statedir.KindBead, id); err != nil {
		return nil, fmt.Errorf("%q is no execution id: %v", id, err)
	}
	dir, err := fsx.OpenDirBeneath(p.Root, filepath.Join(".swarm", "history"), true)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	name := id + ".events.jsonl"
	fd, err := syscall.Openat(int(dir.Fd()), name, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p.Events(id), Err: err}
	}
	f := os.NewFile(uintptr(fd), p.Events(id))
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", p.Events(id))
	}
	// Readers take the lock shared for an instant, to ask whether the run is at work: wait
	// out such an instant, not longer.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %v", p.Events(id), err)
		}
	}
}

// emit records e (under mu): numbered, timed, appended to the events file, and handed to
// Config.Events unless its buffer is full.
func (r *runner) emit(e Event) {
	l := r.events
	if l == nil {
		return
	}
	l.seq++
	e.Seq, e.Execution = l.seq, l.execution
	if e.Time == "" {
		e.Time = record.FormatTime(time.Now())
	}
	if l.file != nil {
		b, err := json.Marshal(e)
		if err == nil {
			_, err = l.file.Write(append(b, '\n'))
		}
		if err != nil {
			r.logf("writing the run's events: %v; no more are kept", err)
			l.file.Close()
			l.file = nil
		}
	}
	if l.ch == nil {
		return
	}
	select {
	case l.ch <- e:
	default:
		l.dropped.Add(1)
	}
}

// closeEvents ends the run's events (not under mu): the consumer is given eventDrain to take
// those waiting, the drops are logged, and the events file is closed (its lock let go: the
// run is over for its readers).
func (r *runner) closeEvents() {
	l := r.events
	if l == nil {
		return
	}
	if l.ch != nil {
		close(l.ch)
		select {
		case <-l.done:
		case <-time.After(eventDrain):
			l.abandoned.Store(true)
			r.logf("the run's events consumer did not take its last events within %s; not waited for", eventDrain)
		}
		if n := l.dropped.Load(); n > 0 {
			r.logf("%d events were dropped: their consumer was slower than they came (%d wait at most)", n, EventBuffer)
		}
	}
	if l.file != nil {
		l.file.Close()
	}
}

// eventCounts counts the state's tasks (under mu).
func (r *runner) eventCounts() *EventCounts {
	c := r.st.counts()
	return &EventCounts{Completed: c[Completed], Failed: c[Failed], Blocked: c[Blocked], Skipped: c[Skipped],
		Pending: c[Pending] + c[Queued] + c[Assigned] + c[Running]}
}

// taskEndEvent is the event of task t's end with its status (under mu): completed, failed or
// blocked.
func taskEndEvent(t *Task, slot Slot) Event {
	e := Event{Event: EventTaskFailed, Task: t.ID, Agent: slot.ID, Host: slot.Host, Status: t.Status}
	switch t.Status {
	case Completed:
		e.Event = EventTaskEnd
	case Blocked:
		e.Event = EventTaskBlocked
	}
	if tr := t.Trace; tr != nil {
		e.Attempt, e.DurationSeconds = tr.Attempt, seconds(tr.DurationSeconds)
		if tr.CommitSHA != nil {
			e.Commit = *tr.CommitSHA
		}
	}
	if t.Error != nil {
		e.Reason = t.Error.Message
	}
	return e
}

// seconds is an optional duration's value (0: not known).
func seconds(d *float64) float64 {
	if d == nil {
		return 0
	}
	return *d
}

// logTransition logs a line of a task's transition, unless Config.Events is told them: then
// its consumer says what it wants (swarm run prints them, --quiet not).
func (r *runner) logTransition(format string, args ...any) {
	if r.cfg.Events == nil {
		r.logf(format, args...)
	}
}

// AppendEvent appends e to execution id's events file, as a run's own are written (never
// through a link): for what happens to an execution outside its runs, a merge (EventMerge, by
// swarm run merge). Its seq is 0, a run's own numbering untouched; its time is now when unset.
func AppendEvent(p Paths, id string, e Event) error {
	f, err := openEventsFile(p, id)
	if err != nil {
		return err
	}
	e.Seq, e.Execution = 0, id
	if e.Time == "" {
		e.Time = record.FormatTime(time.Now())
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
