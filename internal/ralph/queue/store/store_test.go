package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTasks(n int, deps func(i int) []string) []Task {
	now := "2026-11-23T19:00:00Z"
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%d", i), Description: fmt.Sprintf("task number %d", i), Status: Pending,
			Dependencies: []string{}, CreatedAt: now}
		if deps != nil {
			tasks[i].Dependencies = deps(i)
		}
	}
	return tasks
}

func initQueue(t testing.TB, dir Dir, plan string, tasks []Task) *Store {
	s := New(dir, plan)
	err := s.Update(context.Background(), func(tx *Tx) error {
		q := NewQueue(plan, "2026-11-23T19:00:00Z", nil)
		for _, task := range tasks {
			q.Put(task)
		}
		tx.SetQueue(q)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claim(s *Store, agent string) (Task, bool, error) {
	var got Task
	var ok bool
	err := s.Update(context.Background(), func(tx *Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		if got, ok = q.Claim(agent, time.Now().UTC().Format(time.RFC3339)); ok {
			tx.ChangedQueue()
			tx.Lazy()
		}
		return nil
	})
	return got, ok, err
}

func finish(s *Store, id, status string) error {
	return s.Update(context.Background(), func(tx *Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		t, _ := q.Get(id)
		t.Status = status
		q.Put(t)
		q.Reblock()
		tx.ChangedQueue()
		return nil
	})
}

func TestEncodeIsValidAndRoundTrips(t *testing.T) {
	tasks := newTasks(3, nil)
	tasks[1].Description = "quotes \" and \\ and <html> and é and \x01"
	tasks[2].Dependencies = []string{"t0", "t1"}
	a := "agent-1"
	tasks[2].Status, tasks[2].ClaimedBy, tasks[2].ClaimedAt, tasks[2].Attempt = Claimed, &a, &a, 2
	tasks[0].CostUSD, tasks[0].Error = 0.125, "agent-exit-1"
	q := NewQueue("p", "2026-11-23T19:00:00Z", tasks)
	doc := q.Encode()
	if err := Check(KindTaskQueue, doc); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	back, err := DecodeQueue(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(back.Encode()); got != string(doc) {
		t.Errorf("Encode(Decode(doc)) =\n%s\nwant\n%s", got, doc)
	}
	if n := strings.Count(string(doc), "\n"); n != 3+3+3 {
		t.Errorf("the queue takes %d lines, want one a task:\n%s", n, doc)
	}
}

func TestClaimFollowsDependencies(t *testing.T) {
	s := initQueue(t, In(t.TempDir()), "p", newTasks(3, func(i int) []string {
		if i == 0 {
			return []string{}
		}
		return []string{fmt.Sprintf("t%d", i-1)}
	}))
	got, ok, err := claim(s, "agent-1")
	if err != nil || !ok || got.ID != "t0" {
		t.Fatalf("claim = %v %v %v, want t0", got.ID, ok, err)
	}
	if _, ok, _ := claim(s, "agent-2"); ok {
		t.Fatalf("claimed a task whose dependency is not done")
	}
	if err := finish(s, "t0", Done); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := claim(s, "agent-2"); !ok || got.ID != "t1" || *got.ClaimedBy != "agent-2" {
		t.Fatalf("claim after t0 done = %+v %v, want t1", got, ok)
	}
	if err := finish(s, "t1", Failed); err != nil {
		t.Fatal(err)
	}
	q, _ := s.View()
	if t2, _ := q.Get("t2"); t2.Status != Blocked {
		t.Errorf("t2 = %s after t1 failed, want blocked", t2.Status)
	}
	if err := finish(s, "t1", Skipped); err != nil {
		t.Fatal(err)
	}
	q, _ = s.View()
	if t2, _ := q.Get("t2"); t2.Status != Pending {
		t.Errorf("t2 = %s after t1 skipped, want pending", t2.Status)
	}
}

func TestReblockOnlyDependents(t *testing.T) {
	// t0 <- t1 <- t2; t3 independent; t4 depends on t3 and t2.
	deps := map[int][]string{1: {"t0"}, 2: {"t1"}, 4: {"t3", "t2"}}
	tasks := newTasks(6, func(i int) []string { return append([]string{}, deps[i]...) })
	tasks[0].Status = Failed
	tasks[3].Status = Done
	q := NewQueue("p", "x", tasks)
	changed := q.Reblock()
	want := map[string]string{"t0": Failed, "t1": Blocked, "t2": Blocked, "t3": Done, "t4": Blocked, "t5": Pending}
	for id, st := range want {
		if got, _ := q.Get(id); got.Status != st {
			t.Errorf("%s = %s, want %s", id, got.Status, st)
		}
	}
	if len(changed) != 3 {
		t.Errorf("Reblock changed %v", changed)
	}
}

// TestConcurrentClaims: claimers with stores of their own (as separate processes have) take
// every task exactly once.
func TestConcurrentClaims(t *testing.T) {
	dir := In(t.TempDir())
	const n, claimers = 300, 12
	initQueue(t, dir, "p", newTasks(n, nil))
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for c := 1; c <= claimers; c++ {
		wg.Add(1)
		go func(agent string) {
			defer wg.Done()
			s := New(dir, "p")
			for {
				got, ok, err := claim(s, agent)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := owner[got.ID]; dup {
					errs <- fmt.Errorf("%s claimed by %s and %s", got.ID, prev, agent)
				}
				owner[got.ID] = agent
				mu.Unlock()
			}
		}(fmt.Sprintf("agent-%d", c))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(owner) != n {
		t.Errorf("%d tasks claimed, want %d", len(owner), n)
	}
	q, _ := New(dir, "p").View()
	for _, task := range q.Tasks() {
		if task.Status != Claimed || task.ClaimedBy == nil || *task.ClaimedBy != owner[task.ID] {
			t.Errorf("%s in the file: %s by %v, the claimer was %s", task.ID, task.Status, task.ClaimedBy, owner[task.ID])
		}
	}
}

// TestConcurrentClaimProcesses: the same across processes (this test binary, run as a claimer).
func TestConcurrentClaimProcesses(t *testing.T) {
	if dir := os.Getenv("QUEUE_CLAIMER_DIR"); dir != "" {
		return // run as a claimer: TestClaimer does the work
	}
	tmp := t.TempDir()
	dir := In(tmp)
	const n, procs = 200, 4
	initQueue(t, dir, "p", newTasks(n, nil))
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := 1; p <= procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestClaimer$", "-test.count=1")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "QUEUE_CLAIMER_DIR="+tmp, "QUEUE_CLAIMER_AGENT=agent-"+strconv.Itoa(p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claimer %d: %v\n%s", i+1, err, outs[i])
		}
	}
	q, err := New(dir, "p").View()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, out := range outs {
		for _, line := range strings.Fields(out.String()) {
			if id, agent, ok := strings.Cut(line, "="); ok {
				if prev, dup := seen[id]; dup {
					t.Errorf("%s claimed by %s and %s", id, prev, agent)
				}
				seen[id] = agent
			}
		}
	}
	for _, task := range q.Tasks() {
		if task.Status != Claimed || seen[task.ID] != *task.ClaimedBy {
			t.Errorf("%s: %s by %v, claimer said %q", task.ID, task.Status, task.ClaimedBy, seen[task.ID])
		}
	}
	if len(seen) != n {
		t.Errorf("%d claims, want %d", len(seen), n)
	}
}

// TestClaimer is the claimer process of TestConcurrentClaimProcesses.
func TestClaimer(t *testing.T) {
	dir, agent := os.Getenv("QUEUE_CLAIMER_DIR"), os.Getenv("QUEUE_CLAIMER_AGENT")
	if dir == "" {
		t.Skip("run by TestConcurrentClaimProcesses")
	}
	s := New(In(dir), "p")
	for {
		got, ok, err := claim(s, agent)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		fmt.Printf("%s=%s\n", got.ID, agent)
	}
}

func TestStoreRefusesLinks(t *testing.T) {
	tmp := t.TempDir()
	dir := In(tmp)
	s := initQueue(t, dir, "p", newTasks(2, nil))
	target := filepath.Join(tmp, "elsewhere.json")
	os.WriteFile(target, []byte("{}"), 0o600)
	os.Remove(dir.TaskQueue("p"))
	os.Symlink(target, dir.TaskQueue("p"))
	if _, _, err := claim(New(dir, "p"), "agent-1"); err == nil {
		t.Errorf("a claim read the queue through a link")
	}
	if b, _ := os.ReadFile(target); string(b) != "{}" {
		t.Errorf("the link's target was written: %s", b)
	}
	_ = s
}

func TestBrokenQueueIsAnError(t *testing.T) {
	dir := In(t.TempDir())
	initQueue(t, dir, "p", newTasks(2, nil))
	os.WriteFile(dir.TaskQueue("p"), []byte(`{"tasks": [`), 0o600)
	_, _, err := claim(New(dir, "p"), "agent-1")
	if err == nil || !strings.Contains(err.Error(), "repair it") {
		t.Errorf("claim on a broken queue = %v", err)
	}
	if b, _ := os.ReadFile(dir.TaskQueue("p")); string(b) != `{"tasks": [` {
		t.Errorf("the broken queue was rewritten")
	}
}

// BenchmarkClaim: one claim (lock, the queue as it is in memory, the first ready task, one
// atomic write) in a queue of 10,000 tasks with dependencies. Target: under 5 ms.
func BenchmarkClaim(b *testing.B) {
	dir := In(b.TempDir())
	const n = 10000
	tasks := newTasks(n, func(i int) []string {
		if i < 3 {
			return []string{}
		}
		return []string{fmt.Sprintf("t%d", i/2), fmt.Sprintf("t%d", i-3)}
	})
	s := initQueue(b, dir, "p", tasks)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, ok, err := claim(s, "agent-1")
		if err != nil || !ok {
			b.Fatalf("claim %d: %v %v", i, ok, err)
		}
		b.StopTimer()
		if err := finish(s, got.ID, Done); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/claim")
}

// BenchmarkClaimCold is a claim after another process changed the file: read and decoded.
func BenchmarkClaimCold(b *testing.B) {
	dir := In(b.TempDir())
	initQueue(b, dir, "p", newTasks(10000, nil))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := New(dir, "p")
		if _, ok, err := claim(s, "agent-1"); err != nil || !ok {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/claim")
}

// TestUpdateSyncsItsDirectoryOnce: a transaction that writes the task queue, the retry queue
// and the progress file fsyncs their directory once, after the last rename (each file's write
// fsynced it: three directory fsyncs a task's end), and every file is there, whole, when Update
// returns.
func TestUpdateSyncsItsDirectoryOnce(t *testing.T) {
	dir := Dir{Root: t.TempDir()}
	s := initQueue(t, dir, "p", newTasks(3, nil))
	before := s.dirSyncs
	err := s.Update(context.Background(), func(tx *Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		task, _ := q.Get("t0")
		task.Status = Done
		q.Put(task)
		tx.ChangedQueue()
		tx.SetRetry(&RetryQueue{PlanID: "p", Retries: []Retry{{TaskID: "t1", AgentID: "agent-1", Attempt: 1, Error: "e", QueuedAt: "now", MaxRetries: 3}}})
		tx.SetProgress(&Progress{PlanID: "p", Phase: PhaseImplementation, Agents: []Agent{}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.dirSyncs - before; n != 1 {
		t.Errorf("one transaction writing three files fsynced their directory %d times, want once", n)
	}
	for _, path := range []string{dir.TaskQueue("p"), dir.RetryQueue("p"), dir.Progress("p")} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s after the transaction: %v", path, err)
		}
	}
	if q, err := s.View(); err != nil {
		t.Fatal(err)
	} else if task, _ := q.Get("t0"); task.Status != Done {
		t.Errorf("t0 is %s on disk, want done", task.Status)
	}
}
