package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// TestReady: a pending task is ready (Claim takes it) when every dependency is done or
// skipped; nothing else is ever ready.
func TestReady(t *testing.T) {
	statuses := []string{Pending, Claimed, Done, Failed, Blocked, Skipped}
	for _, own := range statuses {
		for _, dep := range append(statuses, "missing") {
			tasks := []Task{{ID: "t", Status: own, Dependencies: []string{"d"}}}
			if dep != "missing" {
				tasks = append(tasks, Task{ID: "d", Status: dep, Dependencies: []string{}})
			}
			q := NewQueue("p", "x", tasks)
			want := own == Pending && (dep == Done || dep == Skipped)
			// t comes first in the queue: Claim takes it when it is ready (else d, or none).
			if got, _ := q.Claim("agent-1", "2026-01-01T00:00:00Z"); (got.ID == "t") != want {
				t.Errorf("a %s task with its dependency %s: claimed %q, want t ready %v", own, dep, got.ID, want)
			}
		}
	}
	free := NewQueue("p", "x", []Task{{ID: "t", Status: Pending, Dependencies: []string{}}})
	if got, _ := free.Claim("agent-1", "2026-01-01T00:00:00Z"); got.ID != "t" {
		t.Errorf("a pending task without dependencies is not claimed")
	}
}

// TestClaimSkipsWhatIsNotReady: Queue.Claim takes the first ready task in queue order and
// refuses every task in any other state; a claimed task is never claimed again.
func TestClaimSkipsWhatIsNotReady(t *testing.T) {
	tests := []struct {
		name   string
		status []string // t0, t1, t2's statuses; t2 depends on t0
		want   string   // the task claimed, "" none
	}{
		{"first pending", []string{Pending, Pending, Pending}, "t0"},
		{"claimed skipped", []string{Claimed, Pending, Pending}, "t1"},
		{"all claimed", []string{Claimed, Claimed, Claimed}, ""},
		{"done and failed skipped", []string{Done, Failed, Pending}, "t2"},
		{"dependency claimed", []string{Claimed, Done, Pending}, ""},
		{"dependency skipped", []string{Skipped, Blocked, Pending}, "t2"},
		{"dependency failed", []string{Failed, Done, Pending}, ""},
		{"blocked is not pending", []string{Done, Done, Blocked}, ""},
	}
	for _, tt := range tests {
		tasks := newTasks(3, func(i int) []string {
			if i == 2 {
				return []string{"t0"}
			}
			return []string{}
		})
		for i, s := range tt.status {
			tasks[i].Status = s
		}
		q := NewQueue("p", "x", tasks)
		got, ok := q.Claim("agent-9", "2026-11-23T19:00:00Z")
		if !ok && tt.want != "" || ok && got.ID != tt.want {
			t.Errorf("%s: Claim = %q, %v, want %q", tt.name, got.ID, ok, tt.want)
			continue
		}
		if !ok {
			continue
		}
		if back, _ := q.Get(got.ID); back.Status != Claimed || back.ClaimedBy == nil || *back.ClaimedBy != "agent-9" || back.ClaimedAt == nil {
			t.Errorf("%s: the claimed task in the queue is %+v", tt.name, back)
		}
		if again, ok := q.Claim("agent-8", "2026-11-23T19:00:01Z"); ok && again.ID == got.ID {
			t.Errorf("%s: %s claimed twice", tt.name, got.ID)
		}
	}
}

// TestSecondClaimRefused: two stores of one directory (two processes, as far as the store can
// tell): once one has claimed the only task, the other's claim finds nothing, and the file keeps
// the first claimer.
func TestSecondClaimRefused(t *testing.T) {
	dir := In(t.TempDir())
	initQueue(t, dir, "p", newTasks(1, nil))
	a, b := New(dir, "p"), New(dir, "p")
	if got, ok, err := claim(a, "agent-1"); err != nil || !ok || got.ID != "t0" {
		t.Fatalf("first claim = %q, %v, %v; want t0", got.ID, ok, err)
	}
	if got, ok, err := claim(b, "agent-2"); err != nil || ok {
		t.Fatalf("second claim = %q, %v, %v; want none", got.ID, ok, err)
	}
	q, err := New(dir, "p").View()
	if err != nil {
		t.Fatal(err)
	}
	if task, _ := q.Get("t0"); task.Status != Claimed || *task.ClaimedBy != "agent-1" {
		t.Errorf("t0 on disk: %s by %v, want claimed by agent-1", task.Status, task.ClaimedBy)
	}
}

// fileID is the identity of the file at path: a rename over it gives it a new one.
func fileID(t *testing.T, path string) [2]uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return [2]uint64{st.Ino, uint64(fi.ModTime().UnixNano())}
}

// TestClaimIsOneAtomicWrite: a claim replaces the task queue once, by a rename (a new file, no
// temporary file left), and touches no other file of the plan; a reader that takes no lock
// never sees a queue half written, however many claims go on meanwhile.
func TestClaimIsOneAtomicWrite(t *testing.T) {
	dir := In(t.TempDir())
	s := initQueue(t, dir, "p", newTasks(400, nil))
	// The plan's other files exist, as after a run: a claim must leave them alone.
	err := s.Update(context.Background(), func(tx *Tx) error {
		if _, err := tx.Retry(); err != nil {
			return err
		}
		if _, err := tx.Progress(); err != nil {
			return err
		}
		tx.ChangedRetry()
		tx.ChangedProgress()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	queueID, retryID, progressID := fileID(t, dir.TaskQueue("p")), fileID(t, dir.RetryQueue("p")), fileID(t, dir.Progress("p"))
	before, _ := os.ReadDir(dir.Root)

	got, ok, err := claim(s, "agent-1")
	if err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	if fileID(t, dir.TaskQueue("p")) == queueID {
		t.Errorf("the claim did not replace the task queue by a new file")
	}
	if fileID(t, dir.RetryQueue("p")) != retryID || fileID(t, dir.Progress("p")) != progressID {
		t.Errorf("the claim wrote the retry queue or the progress file")
	}
	after, _ := os.ReadDir(dir.Root)
	names := func(es []os.DirEntry) []string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	if !slices.Equal(names(before), names(after)) {
		t.Errorf("the directory held %v before the claim and %v after (a temporary file left?)", names(before), names(after))
	}
	doc, _ := os.ReadFile(dir.TaskQueue("p"))
	if err := Check(KindTaskQueue, doc); err != nil {
		t.Errorf("the queue after a claim: %v", err)
	}
	q, err := DecodeQueue(bytes.TrimSpace(doc))
	if err != nil {
		t.Fatal(err)
	}
	if task, _ := q.Get(got.ID); task.Status != Claimed || *task.ClaimedBy != "agent-1" {
		t.Errorf("%s on disk after its claim: %s by %v", got.ID, task.Status, task.ClaimedBy)
	}

	// Readers beside claimers: every read is a whole queue.
	var wg sync.WaitGroup
	done := make(chan struct{})
	bad := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			doc, err := os.ReadFile(dir.TaskQueue("p"))
			if err != nil {
				continue // between unlink and rename there is none only for a link: never here
			}
			if q, err := DecodeQueue(bytes.TrimSpace(doc)); err != nil || q.Len() != 400 {
				select {
				case bad <- string(doc[:min(len(doc), 200)]):
				default:
				}
				return
			}
		}
	}()
	for i := 0; i < 100; i++ {
		if _, _, err := claim(s, "agent-2"); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	select {
	case doc := <-bad:
		t.Errorf("a reader saw a queue half written: %q…", doc)
	default:
	}
	if left, _ := filepath.Glob(filepath.Join(dir.Root, ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestReblock: the pending tasks behind a failed one are blocked, however far, and only they;
// a retried (pending again) or skipped failure sets them pending again; a done task is never
// blocked by its dependency's failure.
func TestReblock(t *testing.T) {
	// t0 <- t1 <- t2 <- t3; t4 <- t5; t6 depends on t1 and t4.
	deps := map[string][]string{"t1": {"t0"}, "t2": {"t1"}, "t3": {"t2"}, "t5": {"t4"}, "t6": {"t1", "t4"}}
	tests := []struct {
		name  string
		given map[string]string // statuses other than pending
		want  map[string]string // statuses after Reblock (others pending)
	}{
		{"nothing failed", map[string]string{"t0": Done}, map[string]string{"t0": Done}},
		{"a chain", map[string]string{"t0": Failed},
			map[string]string{"t0": Failed, "t1": Blocked, "t2": Blocked, "t3": Blocked, "t6": Blocked}},
		{"in the middle", map[string]string{"t0": Done, "t2": Failed},
			map[string]string{"t0": Done, "t2": Failed, "t3": Blocked}},
		{"another branch", map[string]string{"t4": Failed},
			map[string]string{"t4": Failed, "t5": Blocked, "t6": Blocked}},
		{"done before the failure", map[string]string{"t0": Failed, "t1": Done},
			map[string]string{"t0": Failed, "t1": Done}},
		{"claimed is left", map[string]string{"t0": Failed, "t1": Claimed},
			map[string]string{"t0": Failed, "t1": Claimed, "t2": Blocked, "t3": Blocked, "t6": Blocked}},
		{"retried", map[string]string{"t1": Blocked, "t2": Blocked, "t3": Blocked, "t6": Blocked},
			map[string]string{}},
		{"skipped", map[string]string{"t0": Skipped, "t1": Blocked, "t2": Blocked},
			map[string]string{"t0": Skipped}},
		{"still failed elsewhere", map[string]string{"t4": Failed, "t5": Blocked, "t6": Blocked, "t0": Done},
			map[string]string{"t4": Failed, "t5": Blocked, "t6": Blocked, "t0": Done}},
	}
	for _, tt := range tests {
		tasks := newTasks(7, func(i int) []string { return append([]string{}, deps["t"+string(rune('0'+i))]...) })
		for i := range tasks {
			if s, ok := tt.given[tasks[i].ID]; ok {
				tasks[i].Status = s
			}
		}
		q := NewQueue("p", "x", tasks)
		q.Reblock()
		for _, task := range q.Tasks() {
			want, ok := tt.want[task.ID]
			if !ok {
				want = Pending
			}
			if task.Status != want {
				t.Errorf("%s: Reblock left %s %s, want %s", tt.name, task.ID, task.Status, want)
			}
		}
	}
}
