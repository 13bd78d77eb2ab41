package swarmrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/agentfleet/fleet/internal/schema"
)

// stateEncoder writes a running execution's state as the tasks that changed: the state file is
// json.MarshalIndent's bytes of the whole State (seed 001's format, unchanged), but a task is
// encoded and checked against the execution schema only when it changed since its last
// write; the other tasks' bytes are the ones written before. A run wrote its state two or
// three times a task, each time encoding and checking every task: quadratic in the number of
// tasks (at 1,000 tasks most of the run's own CPU time).
//
// The bytes are MarshalIndent's because a task's value at its depth in the file is
// MarshalIndent of the task with the prefix of that depth (json.Indent indents every nested
// value by its depth alone), and the tasks object's keys are sorted, as encoding/json sorts a
// map's keys. The schema check stays whole: the tasks object of the execution schema holds any
// key, each value a Task ($defs/Task, which looks at nothing outside the task), so the
// state is valid when the rest of it is and each task is; the unchanged tasks' bytes were
// checked when they were encoded, and the rest is checked at every write with the changed
// tasks in it.
type stateEncoder struct {
	tasks map[string]*encodedTask
	// encoded counts the tasks encoded by the last encode (tests).
	encoded int
}

// encodedTask is a task's bytes as written (the key and the value, at their depth) and the
// task they were made from (decoded from those bytes: a deep copy that shares nothing with
// the live task).
type encodedTask struct {
	key, value []byte
	was        Task
}

// Indentation of the tasks in the state file: "tasks" is a key of the top object, its values
// one level further.
const (
	taskKeyIndent = "    "
	tasksField    = "\n  \"tasks\": {}"
)

// encode returns the state's bytes as State.Encode makes them (json.MarshalIndent and a
// newline), checked against the execution schema as described above, re-encoding only the
// tasks that changed. On an error nothing of its cache changed.
func (e *stateEncoder) encode(st *State) ([]byte, error) {
	if e.tasks == nil {
		e.tasks = map[string]*encodedTask{}
	}
	// The state without its tasks: one "tasks": {} to splice them into.
	rest := *st
	rest.Tasks = map[string]*Task{}
	skeleton, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return nil, err
	}
	at := bytes.Index(skeleton, []byte(tasksField))
	if at < 0 || bytes.Index(skeleton[at+1:], []byte(tasksField)) >= 0 {
		return nil, fmt.Errorf("encoding the state: no single tasks field")
	}
	ids := make([]string, 0, len(st.Tasks))
	for id := range st.Tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fresh := map[string]*encodedTask{}
	var changed []string
	for _, id := range ids {
		t := st.Tasks[id]
		if c := e.tasks[id]; c != nil && t != nil && reflect.DeepEqual(&c.was, t) {
			continue
		}
		c, err := encodeTask(id, t)
		if err != nil {
			return nil, err
		}
		fresh[id] = c
		changed = append(changed, id)
	}
	task := func(id string) *encodedTask {
		if c := fresh[id]; c != nil {
			return c
		}
		return e.tasks[id]
	}
	// The check: the state with only its changed tasks.
	check := splice(skeleton, at, changed, task)
	sch, err := schema.Embedded("execution")
	if err != nil {
		return nil, err
	}
	if err := sch.Check(check); err != nil {
		return nil, fmt.Errorf("the execution state would not be valid, so it is not written: %w", err)
	}
	for id, c := range fresh {
		e.tasks[id] = c
	}
	if len(e.tasks) > len(ids) {
		for id := range e.tasks {
			if _, ok := st.Tasks[id]; !ok {
				delete(e.tasks, id)
			}
		}
	}
	e.encoded = len(changed)
	return splice(skeleton, at, ids, task), nil
}

// encodeTask is task t's bytes in the state file, under key id.
func encodeTask(id string, t *Task) (*encodedTask, error) {
	key, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	value, err := json.MarshalIndent(t, taskKeyIndent, "  ")
	if err != nil {
		return nil, err
	}
	c := &encodedTask{key: key, value: value}
	if t != nil {
		// The copy compared with at the next write: decoded from the bytes, so that it is
		// exactly what was written, and shares no pointer with the live task.
		if err := json.Unmarshal(value, &c.was); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// splice is skeleton with the tasks ids (sorted) in its empty tasks object at at, and the
// final newline.
func splice(skeleton []byte, at int, ids []string, task func(string) *encodedTask) []byte {
	size := len(skeleton) + 16
	for _, id := range ids {
		c := task(id)
		size += len(taskKeyIndent) + len(c.key) + len(c.value) + 4
	}
	b := make([]byte, 0, size)
	head := at + len(tasksField) - 1 // up to the tasks object's "{"
	b = append(b, skeleton[:head]...)
	if len(ids) == 0 {
		b = append(b, '}')
	} else {
		for i, id := range ids {
			c := task(id)
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, taskKeyIndent...)
			b = append(b, c.key...)
			b = append(b, ": "...)
			b = append(b, c.value...)
		}
		b = append(b, "\n  }"...)
	}
	b = append(b, skeleton[head+1:]...)
	return append(b, '\n')
}
