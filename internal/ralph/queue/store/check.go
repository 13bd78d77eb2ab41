package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/state/schemas"
)

// Schema-on-write: every document the store writes is checked against its embedded schema
// first, and a transaction writes none of its files when one of them is refused.
//
// The task queue is checked a task at a time. A claim changes one task of a queue of 10,000
// (2 MB); checking the whole document on every claim took 9 ms, twice the claim itself. Each
// task's encoding is checked once, against the schema of a task (the task-queue schema's
// tasks/items), when it is made; the envelope (plan_id, created_at, an empty tasks array)
// against the whole schema. That is the whole document's verdict exactly when the schema says
// nothing of tasks but "an array whose items satisfy this" (splitQueueSchema checks it does),
// else the whole document is checked.

// queueSchemas are the task queue's schemas.
type queueSchemas struct {
	whole *schema.Schema
	task  *schema.Schema // nil: the schema cannot be split, the whole document is checked
}

// taskQueueSchemas compiles the task queue's schemas once per process.
var taskQueueSchemas = sync.OnceValues(func() (*queueSchemas, error) {
	whole, err := schema.Embedded(KindTaskQueue)
	if err != nil {
		return nil, err
	}
	qs := &queueSchemas{whole: whole}
	doc, err := schemas.Read(KindTaskQueue)
	if err != nil {
		return nil, err
	}
	if items := splitQueueSchema(doc); items != nil {
		if qs.task, err = schema.Compile(KindTaskQueue, "embedded:"+schemas.FileName(KindTaskQueue)+"#/properties/tasks/items", items); err != nil {
			qs.task = nil // checked whole: slower, never wrong
		}
	}
	return qs, nil
})

// splitQueueSchema returns the schema of one task (tasks/items) when the task-queue schema doc
// says nothing else of tasks and nothing at its top that could look into them (only the
// annotations, type, required, properties and additionalProperties: true, and for tasks only
// type "array", items and annotations), and nil otherwise.
func splitQueueSchema(doc []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return nil
	}
	for k, v := range top {
		switch k {
		case "$schema", "$id", "title", "description", "type", "required", "properties":
		case "additionalProperties":
			if string(v) != "true" {
				return nil
			}
		default:
			return nil
		}
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(top["properties"], &props) != nil {
		return nil
	}
	var tasks map[string]json.RawMessage
	if json.Unmarshal(props["tasks"], &tasks) != nil {
		return nil
	}
	for k, v := range tasks {
		switch k {
		case "description", "items":
		case "type":
			if string(v) != `"array"` {
				return nil
			}
		default:
			return nil
		}
	}
	return tasks["items"]
}

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
// tasks whose encoding is new, one by one, and the envelope. A task that does not satisfy it
// is a *schema.InvalidError whose pointers are the document's (/tasks/<i>/...).
func (q *Queue) appendChecked(b []byte) ([]byte, error) {
	qs, err := taskQueueSchemas()
	if err != nil {
		return nil, err
	}
	b = q.AppendEncode(b) // makes the encodings of changed tasks
	if len(b) > fsx.MaxStateFile {
		return nil, fmt.Errorf("the task queue would be %d MB, over the %d MB a queue file is read at; split the plan", len(b)>>20, fsx.MaxStateFile>>20)
	}
	if qs.task == nil {
		return b, qs.whole.Check(b)
	}
	if err := qs.whole.Check(NewQueue(q.PlanID, q.CreatedAt, nil).Encode()); err != nil {
		return nil, err
	}
	for i := range q.enc {
		e := &q.enc[i]
		if e.checked {
			continue
		}
		if err := qs.task.Check(e.b); err != nil {
			return nil, atTask(err, i)
		}
		e.checked = true
	}
	return b, nil
}

// atTask makes the problems of task i's check the document's: their pointers under /tasks/i.
func atTask(err error, i int) error {
	ie, ok := err.(*schema.InvalidError)
	if !ok {
		return err
	}
	out := &schema.InvalidError{Kind: ie.Kind, Err: ie.Err}
	prefix := "/tasks/" + strconv.Itoa(i)
	for _, p := range ie.Problems {
		out.Problems = append(out.Problems, schema.Problem{Pointer: prefix + p.Pointer, Message: p.Message})
	}
	if ie.Err != nil {
		out.Err = fmt.Errorf("%s: %w", prefix, ie.Err)
	}
	return out
}
