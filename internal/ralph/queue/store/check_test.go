package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/state/schemas"
)

// Schema-on-write, for each of the queue's four files: a document that does not satisfy its
// schema is refused, the file as it was, and the transaction writes none of its files.
func TestWritesRefuseInvalid(t *testing.T) {
	dir := In(t.TempDir())
	s := initQueue(t, dir, "p", newTasks(3, nil))
	ctx := context.Background()
	// A valid retry queue and progress file to begin with.
	err := s.Update(ctx, func(tx *Tx) error {
		tx.SetRetry(&RetryQueue{PlanID: "p", Retries: []Retry{{TaskID: "t0", AgentID: "agent-1", Attempt: 1, Error: "e", QueuedAt: "now", MaxRetries: 3}}})
		tx.SetProgress(&Progress{PlanID: "p", Phase: PhaseImplementation, Agents: []Agent{}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files := []string{dir.TaskQueue("p"), dir.RetryQueue("p"), dir.Progress("p")}
	before := map[string][]byte{}
	for _, f := range files {
		before[f], _ = os.ReadFile(f)
	}
	unchanged := func(what string) {
		t.Helper()
		for _, f := range files {
			if b, _ := os.ReadFile(f); !bytes.Equal(b, before[f]) {
				t.Errorf("%s: %s changed:\n%s\nwas\n%s", what, f, b, before[f])
			}
		}
	}
	for _, c := range []struct {
		name, want string
		fn         func(tx *Tx) error
	}{
		{"a task's status", `/tasks/1/status: expected one of`, func(tx *Tx) error {
			q, err := tx.Queue()
			if err != nil {
				return err
			}
			task, _ := q.Get("t1")
			task.Status = "exploded"
			q.Put(task)
			tx.ChangedQueue()
			tx.SetProgress(&Progress{PlanID: "p", Phase: PhaseImplementation, AgentsTotal: 2, Agents: []Agent{}})
			return nil
		}},
		{"a claim by no agent", `/tasks/0/claimed_by: expected a string matching`, func(tx *Tx) error {
			q, err := tx.Queue()
			if err != nil {
				return err
			}
			q.Claim("robot", "now")
			tx.ChangedQueue()
			tx.Lazy()
			return nil
		}},
		{"the retry queue", `/retries/0/attempt: expected a number >= 1`, func(tx *Tx) error {
			tx.SetRetry(&RetryQueue{PlanID: "p", Retries: []Retry{{TaskID: "t0", AgentID: "agent-1", Attempt: 0, QueuedAt: "now"}}})
			tx.ChangedQueue() // not written either
			return nil
		}},
		{"the progress file", `/phase: expected one of`, func(tx *Tx) error {
			tx.SetProgress(&Progress{PlanID: "p", Phase: "daydreaming", Agents: []Agent{}})
			tx.SetRetry(&RetryQueue{PlanID: "p", Retries: []Retry{}})
			return nil
		}},
	} {
		err := s.Update(ctx, c.fn)
		var ie *schema.InvalidError
		if !errors.Is(err, schema.ErrInvalid) || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not writing") {
			t.Errorf("%s: Update = %v, want a refusal holding %q", c.name, err, c.want)
		}
		unchanged(c.name)
	}
	// After a refusal, the queue is read again from its file: the refused change is gone.
	if got, _, err := claim(s, "agent-7"); err != nil || got.ID != "t0" {
		t.Errorf("a claim after the refusals = %+v, %v; want t0", got, err)
	}

	// The agent state, under its own lock.
	good := &AgentState{AgentID: "agent-1", PlanID: "p", Status: AgentWorking, LastCheckpoint: "now"}
	if err := s.WriteAgentState(ctx, good); err != nil {
		t.Fatal(err)
	}
	was, _ := os.ReadFile(dir.AgentState("agent-1"))
	bad := *good
	bad.Status = "asleep"
	if err := s.WriteAgentState(ctx, &bad); !errors.Is(err, schema.ErrInvalid) || !strings.Contains(err.Error(), "/status") {
		t.Errorf("WriteAgentState(status asleep) = %v, want a refusal naming /status", err)
	}
	if now, _ := os.ReadFile(dir.AgentState("agent-1")); !bytes.Equal(now, was) {
		t.Errorf("a refused agent state changed the file:\n%s\nwas\n%s", now, was)
	}
}

// The task queue is checked as its changed tasks only because the schema allows it; the
// verdict is the whole document's.
func TestQueueCheckedByTask(t *testing.T) {
	doc, err := schemas.Read(KindTaskQueue)
	if err != nil {
		t.Fatal(err)
	}
	if splitQueueSchema(doc) == nil {
		t.Fatal("the embedded task-queue schema says more of tasks than what each must be: a check of the changed tasks alone is not the whole document's (appendChecked)")
	}
	for _, change := range []struct{ from, to string }{
		{`"type": "array",`, `"type": "array", "minItems": 1,`},
		{`"additionalProperties": true,`, `"additionalProperties": false,`},
		{`"properties": {`, `"not": {"required": ["x"]}, "properties": {`},
	} {
		if !strings.Contains(string(doc), change.from) {
			t.Fatalf("the schema has no %s", change.from)
		}
		if items := splitQueueSchema([]byte(strings.Replace(string(doc), change.from, change.to, 1))); items != nil {
			t.Errorf("splitQueueSchema with %s = a task schema, want none", change.to)
		}
	}
	whole, err := schema.Embedded(KindTaskQueue)
	if err != nil {
		t.Fatal(err)
	}
	a := "agent-1"
	for _, tasks := range [][]Task{
		nil,
		newTasks(3, nil),
		{{ID: "x", Status: Claimed, ClaimedBy: &a, Dependencies: []string{}}},
		{{ID: "x", Status: "exploded", Dependencies: []string{}}},
		{{ID: "x", Status: Pending, Retries: -1, Dependencies: []string{}}},
		{{ID: "x", Status: Done, Dependencies: []string{}, CostUSD: -2}},
	} {
		q := NewQueue("p", "now", tasks)
		got, _, gerr := q.appendChecked(nil)
		want := q.Encode()
		if werr := whole.Check(want); (gerr == nil) != (werr == nil) || (gerr == nil && !bytes.Equal(got, want)) {
			t.Errorf("appendChecked(%+v) = %v; the whole document's check: %v", tasks, gerr, werr)
		}
	}
}

// TestQueueCheckNamesTheTask: a refused task among several changed ones is named by its place
// in the whole document, not in the document of the changed tasks that was checked.
func TestQueueCheckNamesTheTask(t *testing.T) {
	q := NewQueue("p", "now", newTasks(5, nil))
	if _, _, err := q.appendChecked(nil); err != nil {
		t.Fatal(err)
	}
	for id, status := range map[string]string{"t1": Done, "t3": "exploded"} {
		task, _ := q.Get(id)
		task.Status = status
		q.Put(task)
	}
	var ie *schema.InvalidError
	if _, _, err := q.appendChecked(nil); !errors.As(err, &ie) || len(ie.Problems) == 0 || !strings.HasPrefix(ie.Problems[0].Pointer, "/tasks/3/status") {
		t.Fatalf("appendChecked with t3 exploded = %v, want its problem at /tasks/3/status", err)
	}
}

// BenchmarkQueueEncode is what a claim spends encoding a queue of 10,000 tasks after one task
// changed, without the check (plain) and with it (checked: the changed task and the envelope):
// the check's cost is the difference.
func BenchmarkQueueEncode(b *testing.B) {
	for _, checked := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "checked"}[checked]
		b.Run(name, func(b *testing.B) {
			q := NewQueue("p", "2026-11-23T19:00:00Z", newTasks(10000, nil))
			buf, _, err := q.appendChecked(nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				task, _ := q.Get("t5000")
				task.Retries = i
				q.Put(task)
				if checked {
					if buf, _, err = q.appendChecked(buf[:0]); err != nil {
						b.Fatal(err)
					}
				} else {
					buf = q.AppendEncode(buf[:0])
				}
			}
		})
	}
	// The whole document's check, as RALPH_QUEUE_VALIDATE=1 did it on every write.
	b.Run("whole", func(b *testing.B) {
		q := NewQueue("p", "2026-11-23T19:00:00Z", newTasks(10000, nil))
		doc := q.Encode()
		b.SetBytes(int64(len(doc)))
		for i := 0; i < b.N; i++ {
			if err := Check(KindTaskQueue, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// splitQueueSchema returns the schema of one task (tasks/items) when the task-queue schema doc
// says nothing else of tasks and nothing at its top that could look into them (only the
// annotations, type, required, properties and additionalProperties: true, and for tasks only
// type "array", items and annotations), and nil otherwise: when it does not, the document with
// only its changed tasks (appendChecked) could be valid where the whole one is not.
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
