package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
)

// Schema-on-write: every document the store writes is checked against its embedded schema
// first, and a transaction writes none of its files when one of them is refused.
//
// The task queue is checked as the tasks that changed. A claim changes one task of a queue of
// 10,000 (2 MB); checking the whole document on every claim took 9 ms, twice the claim itself.
// What is checked is the document with only the tasks whose encoding is new (each task's is
// checked once, when it is made): the whole document's verdict exactly, since the schema says
// nothing of tasks but "an array whose items satisfy this" (TestQueueCheckedByTask holds the
// embedded schema to that), as swarm run's state is checked as its changed tasks
// (swarmrun.stateEncoder).

// Check validates doc against kind's embedded schema: nil, or a *schema.InvalidError (errors.Is
// schema.ErrInvalid).
func Check(kind string, doc []byte) error {
	s, err := schema.Embedded(kind)
	if err != nil {
		return err
	}
	return s.Check(doc)
}

// appendChecked is AppendEncode, after checking the queue against the task-queue schema: the
// document with only the tasks whose encoding is new, fresh (the tasks changed since the
// queue's last check). A task that does not satisfy it is a *schema.InvalidError whose pointers
// are the whole document's (/tasks/<i>/...).
func (q *Queue) appendChecked(b []byte) (_ []byte, fresh []int, err error) {
	b = q.AppendEncode(b) // makes the encodings of changed tasks
	if len(b) > fsx.MaxStateFile {
		return nil, nil, fmt.Errorf("the task queue would be %d MB, over the %d MB a queue file is read at; split the plan", len(b)>>20, fsx.MaxStateFile>>20)
	}
	for i := range q.enc {
		if !q.enc[i].checked {
			fresh = append(fresh, i)
		}
	}
	if err := Check(KindTaskQueue, q.appendDoc(nil, len(fresh), func(k int) []byte { return q.enc[fresh[k]].b })); err != nil {
		return nil, nil, atTasks(err, fresh)
	}
	for _, i := range fresh {
		q.enc[i].checked = true
	}
	return b, fresh, nil
}

// atTasks makes the problems of the check of the changed tasks (tasks, in order) the whole
// document's: /tasks/k is /tasks/tasks[k].
func atTasks(err error, tasks []int) error {
	if ie, ok := err.(*schema.InvalidError); ok { // made by this check: its problems are changed in place
		for i, p := range ie.Problems {
			if rest, ok := strings.CutPrefix(p.Pointer, "/tasks/"); ok {
				num, after, _ := strings.Cut(rest, "/")
				if k, err := strconv.Atoi(num); err == nil && k >= 0 && k < len(tasks) {
					ie.Problems[i].Pointer = "/tasks/" + strconv.Itoa(tasks[k]) + strings.TrimSuffix("/"+after, "/")
				}
			}
		}
	}
	return err
}
