package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// TestCompletedQueueArchived: once every task is done the task queue is archived, as seed 004's
// lifecycle has it ("archived after plan completion"), valid against its schema and the same as
// the queue, which stays; a run that ends with a task failed archives nothing (issue 19).
func TestCompletedQueueArchived(t *testing.T) {
	w := newWorld(t, "t1: a", "t2: b (after t1)")
	res := w.run(context.Background(), w.config(1, 1, newLogWatch()))
	if res.Counts[store.Done] != 2 || res.Archived == "" {
		t.Fatalf("Run = %+v, want 2 done and the queue archived", res)
	}
	if dir := filepath.Dir(res.Archived); dir != w.store.Dir.Archive() {
		t.Errorf("archived in %s, want %s", dir, w.store.Dir.Archive())
	}
	doc, err := os.ReadFile(res.Archived)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(store.KindTaskQueue, doc); err != nil {
		t.Errorf("the archive: %v", err)
	}
	live, _ := os.ReadFile(w.store.Dir.TaskQueue("p"))
	if string(live) != string(doc) {
		t.Errorf("the archive differs from the queue:\n%s\n%s", doc, live)
	}

	f := newWorld(t, "t1: fail")
	if res := f.run(context.Background(), f.config(1, 1, newLogWatch())); res.Archived != "" {
		t.Errorf("a run with a failed task archived its queue in %s", res.Archived)
	}
	if _, err := os.Lstat(f.store.Dir.Archive()); err == nil {
		t.Errorf("%s made for a plan not completed", f.store.Dir.Archive())
	}
}
