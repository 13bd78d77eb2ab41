package swarmrun

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/state/schemas"
)

// encState is a state of n tasks with every kind of field a running execution has set: null
// and set pointers, a trace, an error with files, a re-queue, text that encoding/json escapes.
func encState(n int) *State {
	st := &State{ExecutionID: "2026-01-01-enc-abcd", ManifestName: "enc <&> \"é\"", ManifestPath: "/m/work.yaml", Repo: "/r",
		BaseBranch: "main", StartedAt: "2026-01-01T00:00:00Z", Status: ExecRunning, Tasks: map[string]*Task{},
		Agents:       map[string]*Agent{"local-1": {ID: "local-1", Host: "h", Status: AgentIdle, TasksCompleted: []string{"t0"}}},
		BranchesMade: []string{}, RunnerPID: 42}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%d", i)
		st.Tasks[id] = &Task{ID: id, Prompt: "do\nit <now> & \"then\"\t\u2028", Branch: "b" + id, Priority: "medium", DependsOn: []string{}, Status: Pending}
		st.Order = append(st.Order, id)
	}
	return st
}

// wantBytes is the state as it was always written: json.MarshalIndent and a newline.
func wantBytes(t *testing.T, st *State) []byte {
	t.Helper()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestStateEncoderWritesTheSameBytes: the state written as the tasks that changed is byte for
// byte json.MarshalIndent's of the whole state (seed 001's file, its tests pin it), after
// every kind of change: a task's status, its trace set and changed, an error, a re-queue, a
// task added or gone, the agents, no task at all.
func TestStateEncoderWritesTheSameBytes(t *testing.T) {
	st := encState(12)
	var e stateEncoder
	step := func(what string, change func()) {
		t.Helper()
		change()
		got, err := e.encode(st)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := wantBytes(t, st); string(got) != string(want) {
			t.Fatalf("%s: the bytes differ from json.MarshalIndent's:\n%s\nwant:\n%s", what, got, want)
		}
	}
	step("first write", func() {})
	step("a status", func() { st.Tasks["t3"].Status = Queued; e.mark("t3") })
	step("a trace", func() {
		st.Tasks["t3"].Status = Running
		st.Tasks["t3"].Trace = &Trace{AgentID: "local-1", AgentHost: strp("h"), AssignedAt: strp(now()), Bead: "x-t3", Attempt: 1,
			Worktree: "/r/.swarm/worktrees/.slot-local-1", BaseSHA: strings.Repeat("a", 40)}
		e.mark("t3")
	})
	step("the trace changed in place", func() {
		d, code := 1.5, 0
		st.Tasks["t3"].Trace.DurationSeconds, st.Tasks["t3"].Trace.ExitCode = &d, &code
		st.Tasks["t3"].Trace.CommitSHA = strp(strings.Repeat("b", 40))
		st.Tasks["t3"].Status = Completed
		e.mark("t3")
	})
	step("an error with files", func() {
		st.Tasks["t10"].Status = Blocked
		st.Tasks["t10"].Error = &TaskError{Type: ErrConflict, Message: "merging b conflicts in <a>", Files: []string{"a", "b"}, Timestamp: now()}
		e.mark("t10")
	})
	step("a re-queue", func() {
		st.Tasks["t5"].Trace = &Trace{AgentID: "h1-1", Requeued: []Requeue{{AgentID: "h1-1", AgentHost: "h1", At: now(), NotBefore: now(), Reason: "gone"}}}
		e.mark("t5")
	})
	step("a dependency list changed in place", func() {
		st.Tasks["t7"].DependsOn = append(st.Tasks["t7"].DependsOn, "t3")
		e.mark("t7")
	})
	step("a task added", func() {
		st.Tasks["t1a"] = &Task{ID: "t1a", Branch: "x", Priority: "high", DependsOn: []string{}, Status: Pending}
	})
	step("a task gone", func() { delete(st.Tasks, "t4") })
	step("the agents and the rest", func() {
		st.Agents["local-1"].Status, st.Agents["local-1"].CurrentTask = AgentBusy, strp("t3")
		st.BranchesMade = append(st.BranchesMade, "bt3")
		st.ActiveSeconds = 12.25
	})
	step("nothing changed", func() {})
	step("no task", func() { st.Tasks = map[string]*Task{} })
}

// TestStateWriteEncodesOnlyChangedTasks: a write after one task changed encodes that task
// alone (it encoded every task: each write cost the whole state, quadratic in the tasks).
func TestStateWriteEncodesOnlyChangedTasks(t *testing.T) {
	st := encState(200)
	var e stateEncoder
	if _, err := e.encode(st); err != nil {
		t.Fatal(err)
	}
	if e.encoded != 200 {
		t.Fatalf("the first write encoded %d tasks, want all 200", e.encoded)
	}
	st.Tasks["t17"].Status = Queued
	e.mark("t17")
	st.Agents["local-1"].Status = AgentBusy
	if _, err := e.encode(st); err != nil {
		t.Fatal(err)
	}
	if e.encoded != 1 {
		t.Errorf("a write after one task changed encoded %d tasks, want 1", e.encoded)
	}
}

// TestStateEncoderChecksChangedTasks: a changed task that breaks the execution schema is
// refused, as a whole state that does not satisfy it always was, and nothing of it is kept:
// the next write checks it again.
func TestStateEncoderChecksChangedTasks(t *testing.T) {
	st := encState(5)
	var e stateEncoder
	if _, err := e.encode(st); err != nil {
		t.Fatal(err)
	}
	st.Tasks["t2"].Status = "sleeping"
	e.mark("t2")
	for i := 0; i < 2; i++ {
		if _, err := e.encode(st); err == nil || !strings.Contains(err.Error(), "would not be valid") {
			t.Fatalf("write %d of a task with status sleeping: %v, want it refused", i+1, err)
		}
	}
	st.Tasks["t2"].Status = Pending
	e.mark("t2")
	st.ExecutionID = "not an id"
	if _, err := e.encode(st); err == nil {
		t.Fatalf("a state with a bad execution id and no task changed was written")
	}
}

// TestStateEncoderCatchesAnUnmarkedChange: with verifyWrites (set for every test of the
// package, so that each run's every write is checked), a task changed but not marked is a
// panic, not a state file holding its old bytes.
func TestStateEncoderCatchesAnUnmarkedChange(t *testing.T) {
	st := encState(3)
	var e stateEncoder
	if _, err := e.encode(st); err != nil {
		t.Fatal(err)
	}
	st.Tasks["t1"].Status = Queued
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "changed unmarked") {
				t.Fatalf("a write after an unmarked change: %v, want a panic", p)
			}
		}()
		e.encode(st)
	}()
	e.mark("t1")
	if _, err := e.encode(st); err != nil {
		t.Fatal(err)
	}
}

// TestStateCheckedByTask: the state is checked as its changed tasks (stateEncoder) only
// because the execution schema allows it: it says nothing of tasks but "an object whose values
// are each a Task", and nothing at its top that could look into them.
func TestStateCheckedByTask(t *testing.T) {
	doc, err := schemas.Read("execution")
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatal(err)
	}
	for k, v := range top {
		switch k {
		case "$schema", "$id", "title", "description", "type", "required", "properties", "$defs":
		case "additionalProperties":
			if string(v) != "true" {
				t.Errorf("the execution schema's additionalProperties is %s: a check of the changed tasks alone may not be the whole state's", v)
			}
		default:
			t.Errorf("the execution schema has %q at its top: a check of the changed tasks alone may not be the whole state's", k)
		}
	}
	var props struct {
		Tasks map[string]any `json:"tasks"`
	}
	json.Unmarshal(top["properties"], &props)
	want := map[string]any{"description": props.Tasks["description"], "type": "object", "additionalProperties": map[string]any{"$ref": "#/$defs/Task"}}
	if fmt.Sprint(props.Tasks) != fmt.Sprint(want) {
		t.Errorf("the execution schema's tasks are %v, want only %v: a check of the changed tasks alone may not be the whole state's", props.Tasks, want)
	}
}
