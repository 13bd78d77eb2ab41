package swarmrun

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestFlushGroupsConcurrentWrites: attempts launched while the state is being written (each
// must see its attempt named on disk before its supervisor starts) share the next write
// instead of writing the whole state once each, and each sees its own change written.
func TestFlushGroupsConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	r := &runner{paths: Paths{Root: dir}, kick: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		st: &State{ExecutionID: "2026-01-01-x-abcd", Status: ExecRunning, Tasks: map[string]*Task{}, Agents: map[string]*Agent{}}}
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("t%d", i)
		r.st.Tasks[id] = &Task{ID: id, Branch: id, Priority: "medium", DependsOn: []string{}, Status: Queued}
		r.st.Order = append(r.st.Order, id)
	}
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	// A write under way: the four launches come meanwhile.
	r.writeMu.Lock()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.mu.Lock()
			r.st.Tasks[fmt.Sprintf("t%d", i)].Status = Running
			r.mu.Unlock()
			errs[i] = r.flush()
		}()
	}
	// The signal: all four have asked for their write (gen counts the first write too).
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		asked := r.gen
		r.mu.Unlock()
		if asked == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flushes did not start: gen %d", asked)
		}
		time.Sleep(time.Millisecond)
	}
	r.writeMu.Unlock()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.writes != 2 {
		t.Errorf("the state was written %d times for one change and four launched at once, want 2 (the four in one)", r.writes)
	}
	st, err := ReadState(filepath.Join(dir, ".swarm", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for id, task := range st.Tasks {
		if task.Status != Running {
			t.Errorf("%s is %s on disk after its flush returned, want running", id, task.Status)
		}
	}
}
