package runevents

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLogTellsAndKeeps: each of a Log's named events, as its consumer is told them and as the
// events file keeps them (read back in the same order, numbered from 1); a task's end named by
// its status; the run's end with its wall time; a nil Log does nothing.
func TestLogTellsAndKeeps(t *testing.T) {
	root := t.TempDir()
	id := "2026-12-07-x-0002"
	var mu sync.Mutex
	var told []Event
	l := Open(root, id, Options{Consumer: func(e Event) {
		mu.Lock()
		told = append(told, e)
		mu.Unlock()
	}, Logf: func(format string, args ...any) { t.Errorf("logged: "+format, args...) }})
	at := At{Task: "a", Attempt: 1, Agent: "h1-1", Host: "h1"}
	l.RunStart(3, 2, Counts{Pending: 3})
	l.TaskStart(at, "")
	l.HostOffline("h1", "no answer")
	l.TaskRequeued(at, "taken back")
	l.TaskRetry(at, "agent-exit-4", 1.5)
	l.TaskEnd(at, "completed", "abc", "", 2)
	l.TaskEnd(At{Task: "b", Attempt: 2}, "failed", "", "agent-exit-3", 1)
	l.TaskEnd(At{Task: "c"}, "blocked", "", "conflict", 0)
	l.TaskBlocked("d", "depends on b, which is failed")
	l.RunEnd("failed", false, Counts{Completed: 1, Failed: 1, Blocked: 2, Retries: 1})
	l.Close()

	want := []string{"run-start  running", "task-start a running", "host-offline  ", "task-requeued a queued", "task-retry a queued",
		"task-end a completed", "task-failed b failed", "task-blocked c blocked", "task-blocked d blocked", "run-end  failed"}
	words := func(evs []Event) string {
		var s []string
		for i, e := range evs {
			if e.Seq != i+1 || e.Execution != id || e.Time == "" {
				t.Errorf("event %d = %+v", i, e)
			}
			s = append(s, e.Event+" "+e.Task+" "+e.Status)
		}
		return strings.Join(s, "\n")
	}
	if got := words(told); got != strings.Join(want, "\n") {
		t.Errorf("the consumer was told:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	r, err := OpenReader(root, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kept, err := r.Read()
	if err != nil || words(kept) != strings.Join(want, "\n") {
		t.Errorf("the events file keeps (%v):\n%s", err, words(kept))
	}
	if end := kept[len(kept)-1]; end.WallSeconds <= 0 || end.Counts == nil || end.Counts.Retries != 1 {
		t.Errorf("run-end = %+v", end)
	}
	if r.Running() {
		t.Errorf("the events file is still locked after Close")
	}

	var none *Log
	none.RunStart(1, 1, Counts{})
	none.RunEnd("completed", false, Counts{})
	none.Close()
}

// TestLogWithoutItsFile: a link in place of .swarm/history leaves the run without its events
// file (said to Logf), never writing through the link; the consumer is told all the same.
func TestLogWithoutItsFile(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, ".swarm"), 0o700)
	os.Symlink(elsewhere, filepath.Join(root, ".swarm", "history"))
	var logged []string
	var told int
	l := Open(root, "2026-12-07-x-0003", Options{Consumer: func(Event) { told++ },
		Logf: func(format string, args ...any) { logged = append(logged, format) }})
	l.RunStart(1, 1, Counts{Pending: 1})
	l.Close()
	if told != 1 || len(logged) != 1 || !strings.Contains(logged[0], "not keeping the run's events") {
		t.Errorf("told %d, logged %q", told, logged)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written through the link: %v", entries)
	}
}
