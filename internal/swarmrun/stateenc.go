package swarmrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentfleet/fleet/internal/schema"
)

// stateEncoder writes a running execution's state as the tasks that changed: the state file is
// json.MarshalIndent's bytes of the whole State (seed 001's format, unchanged), but a task is
// encoded and checked against the execution schema only when it is new or was marked changed
// (mark) since its last write; the other tasks' bytes are the ones written before. A run wrote
// its state two or three times a task, each time encoding and checking every task: quadratic in
// the number of tasks (at 1,000 tasks most of the run's own CPU time). The runner marks a task
// where it changes it, under the lock the encoder runs under: finding the changed tasks by
// comparing each with a copy of its last write cost O(tasks) a write again (5% of the runner's
// CPU at 200 tasks). The package's tests compare every write with the whole state's encoding
// (verifyWrites), so a change left unmarked fails them.
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
	// tasks are the tasks' entries as last written (encodeTask).
	tasks map[string][]byte
	// changed are the tasks marked changed since the last write that succeeded.
	changed map[string]bool
	// encoded counts the tasks encoded by the last encode (tests).
	encoded int
}

// verifyWrites makes every encode check its bytes against the whole state's, and panic when
// they differ (tests).
var verifyWrites bool

// mark says task id changed since the state was last written (under the lock of the state).
func (e *stateEncoder) mark(id string) {
	if e.changed == nil {
		e.changed = map[string]bool{}
	}
	e.changed[id] = true
}

// Indentation of the tasks in the state file: "tasks" is a key of the top object, its values
// one level further.
const (
	taskKeyIndent = "    "
	tasksField    = "\n  \"tasks\": {}"
)

// encode returns the state's bytes as json.MarshalIndent makes them (and a
// newline), checked against the execution schema as described above, re-encoding only the
// tasks that are new or marked changed. On an error nothing of its cache changed, and the
// tasks marked stay marked.
func (e *stateEncoder) encode(st *State) ([]byte, error) {
	// The state without its tasks: one "tasks": {} to splice them into.
	rest := *st
	rest.Tasks = map[string]*Task{}
	skeleton, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return nil, err
	}
	at := bytes.Index(skeleton, []byte(tasksField))
	if at < 0 || bytes.Contains(skeleton[at+1:], []byte(tasksField)) {
		return nil, fmt.Errorf("encoding the state: no single tasks field")
	}
	ids := slices.Sorted(maps.Keys(st.Tasks))
	// next is the cache once this write succeeds: the tasks of st, the unchanged ones' bytes
	// from the cache (a task no longer in st leaves it).
	next := make(map[string][]byte, len(ids))
	var changed []string
	for _, id := range ids {
		c := e.tasks[id]
		if c == nil || e.changed[id] {
			if c, err = encodeTask(id, st.Tasks[id]); err != nil {
				return nil, err
			}
			changed = append(changed, id)
		}
		next[id] = c
	}
	// The check: the state with only its changed tasks.
	check := splice(skeleton, at, changed, next)
	sch, err := schema.Embedded("execution")
	if err != nil {
		return nil, err
	}
	if err := sch.Check(check); err != nil {
		return nil, fmt.Errorf("the execution state would not be valid, so it is not written: %w", err)
	}
	b := splice(skeleton, at, ids, next)
	if verifyWrites {
		// A panic: a failed write is only logged, and the test must not go on.
		if whole, err := json.MarshalIndent(st, "", "  "); err != nil || !bytes.Equal(append(whole, '\n'), b) {
			panic(fmt.Sprintf("the state encoded as its changed tasks is not the whole state's encoding: a task changed unmarked (%v)", err))
		}
	}
	e.tasks = next
	clear(e.changed)
	e.encoded = len(changed)
	return b, nil
}

// encodeTask is task t's entry in the state file's tasks object, under key id: a line break,
// then the key and the value at their depth.
func encodeTask(id string, t *Task) ([]byte, error) {
	key, _ := json.Marshal(id) // a string: nothing to fail
	value, err := json.MarshalIndent(t, taskKeyIndent, "  ")
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "\n%s%s: %s", taskKeyIndent, key, value), nil
}

// splice is skeleton with the tasks ids (sorted) of tasks in its empty tasks object at at, and
// the final newline.
func splice(skeleton []byte, at int, ids []string, tasks map[string][]byte) []byte {
	size := len(skeleton) + 16
	for _, id := range ids {
		size += len(tasks[id]) + 1
	}
	b := make([]byte, 0, size)
	head := at + len(tasksField) - 1 // up to the tasks object's "{"
	b = append(b, skeleton[:head]...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, tasks[id]...)
	}
	if len(ids) > 0 {
		b = append(b, "\n  "...) // the closing "}" at the depth of "tasks"
	}
	b = append(b, skeleton[head:]...)
	return append(b, '\n')
}
