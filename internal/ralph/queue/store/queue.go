package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/fleet/internal/taskgraph"
)

// Queue is a task queue in memory: the file's document, an index by task id, and each task's
// encoding kept until the task changes, so that writing a queue of 10,000 tasks after a claim
// encodes one task and copies the others, and checks one task against the schema (check.go).
type Queue struct {
	PlanID    string
	CreatedAt string
	tasks     []Task
	index     map[string]int
	enc       []encoded
	// ready is the ready set over the tasks' graph (taskgraph), made when first asked and kept
	// in step by every change of a task's status; nil when it must be made again (a task added,
	// its dependencies changed). A claim takes its next task from it instead of scanning the
	// queue, and Reblock blocks over its graph.
	ready *taskgraph.Set
}

// encoded is a task's encoding (nil until it is made), and whether it was checked against the
// task schema; a change of the task resets both.
type encoded struct {
	b       []byte
	checked bool
}

// NewQueue makes a queue of tasks.
func NewQueue(plan, createdAt string, tasks []Task) *Queue {
	q := &Queue{PlanID: plan, CreatedAt: createdAt, tasks: tasks, index: make(map[string]int, len(tasks)),
		enc: make([]encoded, len(tasks))}
	for i, t := range tasks {
		q.index[t.ID] = i
	}
	return q
}

// Len is the number of tasks.
func (q *Queue) Len() int { return len(q.tasks) }

// Tasks returns a copy of the tasks, in queue order.
func (q *Queue) Tasks() []Task { return append([]Task(nil), q.tasks...) }

// Get returns the task id (a copy: change it with Put).
func (q *Queue) Get(id string) (Task, bool) {
	i, ok := q.index[id]
	if !ok {
		return Task{}, false
	}
	return q.tasks[i], true
}

// Put replaces the task of t's id, or appends t as a new task.
func (q *Queue) Put(t Task) {
	i, ok := q.index[t.ID]
	if !ok || !slices.Equal(q.tasks[i].Dependencies, t.Dependencies) {
		q.ready = nil // made again when asked
	}
	if !ok {
		i = len(q.tasks)
		q.index[t.ID] = i
		q.tasks = append(q.tasks, Task{})
		q.enc = append(q.enc, encoded{})
	}
	q.tasks[i] = t
	q.changed(i)
}

// changed drops the encoding of task i, which changed, and keeps the ready set in step with it.
func (q *Queue) changed(i int) {
	q.enc[i] = encoded{}
	if q.ready != nil {
		q.place(i)
	}
}

// place puts task i in the ready set where its status says: a pending task waits for its
// dependencies (and for the end of a usage limit that holds it); done and skipped tasks are
// done; the claimed, failed and blocked ones are out of it (Taken): they are not claimed, and
// their dependents never become ready through them (Reblock blocks those in the file).
func (q *Queue) place(i int) {
	t := &q.tasks[i]
	switch until := heldUntil(t); {
	case t.Status == Done || t.Status == Skipped:
		q.ready.Done(i)
	case t.Status != Pending:
		q.ready.Take(i)
	case !until.IsZero():
		q.ready.Hold(i, until)
	default:
		q.ready.Requeue(i)
	}
}

// heldUntil is the end of the usage limit that holds task t: zero unless t is pending with a
// held_until.
func heldUntil(t *Task) (until time.Time) {
	if t.Status == Pending && t.HeldUntil != "" {
		until, _ = time.Parse(time.RFC3339Nano, t.HeldUntil)
	}
	return until
}

// readySet is the ready set, made when there is none over the tasks' graph, in queue order,
// all of one rank (the queue has no priorities), each task placed from out of the set (Taken)
// as a change places it.
func (q *Queue) readySet() *taskgraph.Set {
	if q.ready == nil {
		nodes := make([]taskgraph.Node, len(q.tasks))
		for i := range q.tasks {
			nodes[i] = taskgraph.Node{ID: q.tasks[i].ID, Deps: q.tasks[i].Dependencies}
		}
		q.ready, _ = taskgraph.NewSet(taskgraph.New(nodes), func(int) taskgraph.State { return taskgraph.Taken })
		for i := range q.tasks {
			q.place(i)
		}
	}
	return q.ready
}

// Claim gives agent the first ready task (queue order) that no usage limit holds, claimed now
// (RFC 3339), and returns it; false when no task is ready. The ready set gives it in O(log n).
func (q *Queue) Claim(agent, now string) (Task, bool) {
	at, _ := time.Parse(time.RFC3339Nano, now)
	i, ok := q.nextReady(at)
	if !ok {
		return Task{}, false
	}
	t := &q.tasks[i]
	t.Status, t.ClaimedBy, t.ClaimedAt, t.CompletedAt, t.Attempt = Claimed, &agent, &now, nil, 0
	t.HeldUntil = ""
	q.changed(i)
	return *t, true
}

// nextReady is the first ready task in queue order that no usage limit holds at at, left in
// the ready set.
func (q *Queue) nextReady(at time.Time) (int, bool) {
	s := q.readySet()
	s.Release(at)
	for {
		i, ok := s.Peek()
		if !ok {
			return 0, false
		}
		// Released by a later clock than at (AnyReady's): held again until its time.
		if until := heldUntil(&q.tasks[i]); at.Before(until) {
			s.Hold(i, until)
			continue
		}
		s.TakeFresh() // the queue marks nothing when a task becomes ready
		return i, true
	}
}

// AnyReady says whether Claim would give a task at now, without claiming it.
func (q *Queue) AnyReady(now time.Time) bool {
	_, ok := q.nextReady(now)
	return ok
}

// Held is how many pending tasks a usage limit holds at now: they will be ready again. A scan
// of the tasks: it is asked when nothing was claimed, after Reblock and Counts scanned them.
func (q *Queue) Held(now time.Time) int {
	n := 0
	for i := range q.tasks {
		if now.Before(heldUntil(&q.tasks[i])) {
			n++
		}
	}
	return n
}

// Phase is the plan's phase (seed 004's progress.phase) as its tasks tell it: review once no
// task is pending or claimed (what is left is to review the results), verify_fix while every
// task pending or claimed is a retry of a failed one (fixing what failed), else
// implementation. It reads the tasks in place: a claim of a 10,000-task queue asks it.
func (q *Queue) Phase() string {
	phase := PhaseReview
	for i := range q.tasks {
		t := &q.tasks[i]
		if t.Status != Pending && t.Status != Claimed {
			continue
		}
		if t.Retries == 0 {
			return PhaseImplementation
		}
		phase = PhaseVerifyFix
	}
	return phase
}

// Counts is how many tasks are in each status.
func (q *Queue) Counts() map[string]int {
	c := map[string]int{Pending: 0, Claimed: 0, Done: 0, Failed: 0, Blocked: 0, Skipped: 0}
	for i := range q.tasks {
		c[q.tasks[i].Status]++
	}
	return c
}

// Reblock makes blocked exactly the pending tasks that cannot run because a dependency failed
// (or is blocked itself), and pending again the blocked ones that can now (after a retry or a
// skip). Done, failed, skipped and claimed tasks are left as they are, and so is a task blocked
// by a merge conflict (ReasonConflict), which blocks its dependents as a failed one does. It
// returns the ids it changed.
func (q *Queue) Reblock() []string {
	// A task is doomed when failed, or depending on a doomed task: failed or blocked in a ready
	// set of the tasks made now. A claimed task is not changed, but blocks its dependents as a
	// pending one would.
	set, _ := taskgraph.NewSet(q.readySet().Graph(), func(i int) taskgraph.State {
		switch t := &q.tasks[i]; {
		case t.Status == Failed || (t.Status == Blocked && t.Reason == ReasonConflict):
			return taskgraph.Failed
		case t.Status == Done || t.Status == Skipped:
			return taskgraph.Done // it ran (or need not): what it depended on no longer matters
		}
		return taskgraph.Waiting
	})
	var changed []string
	for i := range q.tasks {
		t, st := &q.tasks[i], set.State(i)
		doomed := st == taskgraph.Failed || st == taskgraph.Blocked
		switch {
		case t.Status == Pending && doomed:
			t.Status = Blocked
		case t.Status == Blocked && !doomed:
			t.Status = Pending
		default:
			continue
		}
		q.changed(i)
		changed = append(changed, t.ID)
	}
	return changed
}

// Encode writes the queue as a JSON document: the plan's fields first, then one task a line.
func (q *Queue) Encode() []byte { return q.AppendEncode(nil) }

// AppendEncode is Encode appending to b, so that a writer can reuse one buffer: a queue of
// 10,000 tasks is 2 MB, and allocating that on every claim costs more than copying it.
func (q *Queue) AppendEncode(b []byte) []byte {
	size := 128
	for i := range q.tasks {
		if q.enc[i].b == nil {
			q.enc[i].b = encodeTask(q.tasks[i])
		}
		size += len(q.enc[i].b) + 6
	}
	return q.appendDoc(slices.Grow(b, size), len(q.enc), func(i int) []byte { return q.enc[i].b })
}

// appendDoc appends the document of the plan's fields and the n tasks whose encodings task
// gives.
func (q *Queue) appendDoc(b []byte, n int, task func(int) []byte) []byte {
	plan, _ := json.Marshal(q.PlanID)
	created, _ := json.Marshal(q.CreatedAt)
	b = fmt.Appendf(b, "{\n  \"plan_id\": %s,\n  \"created_at\": %s,\n  \"tasks\": [", plan, created)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = append(b, task(i)...)
	}
	if n > 0 {
		b = append(b, "\n  "...)
	}
	return append(b, "]\n}\n"...)
}

// DecodeQueue reads a task queue document.
func DecodeQueue(doc []byte) (*Queue, error) {
	var f TaskQueue
	if err := decodeJSON(doc, &f); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(f.Tasks))
	for i := range f.Tasks {
		t := &f.Tasks[i]
		if t.ID == "" || seen[t.ID] {
			return nil, fmt.Errorf("task %d has an empty or repeated id %q", i+1, t.ID)
		}
		seen[t.ID] = true
		if t.Dependencies == nil {
			t.Dependencies = []string{}
		}
	}
	return NewQueue(f.PlanID, f.CreatedAt, f.Tasks), nil
}

// encodeTask encodes a task on one line, in the seed's key order (Task's fields): its cost only
// when it is one (JSON cannot hold NaN or an infinity, see Cost), its dependencies a list even
// when it has none.
func encodeTask(t Task) []byte {
	if !Cost(t.CostUSD) {
		t.CostUSD = 0
	}
	if t.Dependencies == nil {
		t.Dependencies = []string{}
	}
	b, _ := json.Marshal(&t) // strings, integers and finite floats only
	return b
}
