package queue

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// newQueue queues a plan's markdown in a new repository and returns its directory.
func newQueue(t *testing.T, doc string) store.Dir {
	t.Helper()
	dir := store.In(t.TempDir())
	file := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks, err := ReadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Check(file, "p", tasks, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(context.Background(), dir, "p", tasks, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// setStatus sets task id's status (and a retry-queue entry for it) as a run would have.
func setStatus(t *testing.T, dir store.Dir, id, status string) {
	t.Helper()
	agent := "agent-1"
	err := store.New(dir, "p").Update(context.Background(), func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		task, _ := q.Get(id)
		task.Status, task.Retries = status, 2
		if status == store.Claimed {
			task.ClaimedBy, task.ClaimedAt = &agent, &task.CreatedAt
		}
		q.Put(task)
		q.Reblock()
		tx.ChangedQueue()
		rq, err := tx.Retry()
		if err != nil {
			return err
		}
		rq.Retries = append(rq.Retries, store.Retry{TaskID: id, AgentID: agent, Attempt: 2, Error: "agent-exit-3",
			QueuedAt: task.CreatedAt, MaxRetries: 3})
		tx.ChangedRetry()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRetryAndSkip: which task statuses retry and skip take, what they make of the task and
// of its dependents, and the words of a refusal.
func TestRetryAndSkip(t *testing.T) {
	type verb func(context.Context, store.Dir, string, string) (*Edited, error)
	tests := []struct {
		verb    string
		status  string
		refusal string // "" when it is done
		after   string // t1's status after
		dep     string // t2's (which depends on t1) after
	}{
		{"retry", store.Failed, "", store.Pending, store.Pending},
		{"retry", store.Skipped, "", store.Pending, store.Pending},
		{"retry", store.Pending, "task t1 is pending; only a failed (or skipped) task is retried", "", ""},
		{"retry", store.Done, "task t1 is done; only a failed (or skipped) task is retried", "", ""},
		{"retry", store.Claimed, "task t1 is being worked on by agent-1; wait for its end", "", ""},
		{"skip", store.Pending, "", store.Skipped, store.Pending},
		{"skip", store.Failed, "", store.Skipped, store.Pending},
		{"skip", store.Blocked, "", store.Skipped, store.Pending},
		{"skip", store.Done, "task t1 is done already", "", ""},
		{"skip", store.Skipped, "task t1 is skipped already", "", ""},
		{"skip", store.Claimed, "task t1 is being worked on by agent-1; wait for its end, then skip it", "", ""},
	}
	verbs := map[string]verb{"retry": Retry, "skip": Skip}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.status, func(t *testing.T) {
			dir := newQueue(t, "- [ ] t0: first\n- [ ] t1: the one (after t0)\n- [ ] t2: after it (after t1)\n")
			if tt.status == store.Blocked {
				setStatus(t, dir, "t0", store.Failed) // t1 and t2 blocked
			} else {
				setStatus(t, dir, "t1", tt.status)
			}
			before, _ := os.ReadFile(dir.TaskQueue("p"))
			out, err := verbs[tt.verb](context.Background(), dir, "p", "t1")
			if tt.refusal != "" {
				if err == nil || err.Error() != tt.refusal {
					t.Errorf("%s of a %s task = %v, want %q", tt.verb, tt.status, err, tt.refusal)
				}
				if after, _ := os.ReadFile(dir.TaskQueue("p")); !bytes.Equal(after, before) {
					t.Errorf("a refused %s changed the queue", tt.verb)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s of a %s task: %v", tt.verb, tt.status, err)
			}
			q, _ := store.New(dir, "p").View()
			t1, _ := q.Get("t1")
			t2, _ := q.Get("t2")
			if t1.Status != tt.after || t2.Status != tt.dep {
				t.Errorf("after %s: t1 %s, t2 %s; want %s, %s (%+v)", tt.verb, t1.Status, t2.Status, tt.after, tt.dep, out)
			}
			if tt.verb == "retry" && (t1.Retries != 0 || t1.ClaimedBy != nil || t1.CompletedAt != nil || t1.Error != "") {
				t.Errorf("a retried task keeps its past: %+v", t1)
			}
			if tt.verb == "skip" && t1.CompletedAt == nil {
				t.Errorf("a skipped task has no completed_at")
			}
			rq, _ := store.New(dir, "p").ViewRetry()
			for _, e := range rq.Retries {
				if e.TaskID == "t1" {
					t.Errorf("t1's retry-queue entry is left after %s", tt.verb)
				}
			}
		})
	}
	dir := newQueue(t, "- [ ] t0: first\n")
	if _, err := Retry(context.Background(), dir, "p", "t9"); err == nil || err.Error() != `plan p has no task "t9"` {
		t.Errorf("Retry of no task = %v", err)
	}
}

// TestInit: a plan that has a queue is refused unless forced, which starts the queue, its retry
// queue and its progress over; nothing is initialised while a runner holds the directory.
func TestInit(t *testing.T) {
	ctx := context.Background()
	dir := newQueue(t, "- [x] t0: done before\n- [ ] t1: to do\n")
	tasks := []plan.Task{{ID: "a", Description: "new"}}
	if _, err := Init(ctx, dir, "p", tasks, false); err == nil || !strings.Contains(err.Error(), "plan p already has a queue (2 tasks, 1 done)") {
		t.Errorf("Init over a queue = %v", err)
	}
	setStatus(t, dir, "t1", store.Failed)
	if done, err := Init(ctx, dir, "p", tasks, true); err != nil || done != 0 {
		t.Fatalf("Init --force = %d, %v", done, err)
	}
	q, _ := store.New(dir, "p").View()
	rq, _ := store.New(dir, "p").ViewRetry()
	if q.Len() != 1 || len(rq.Retries) != 0 {
		t.Errorf("after --force: %d tasks, %d retries; want 1 and 0", q.Len(), len(rq.Retries))
	}
	unlock, err := dir.LockRunner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Init(ctx, dir, "p", tasks, true); !errors.Is(err, store.ErrRunnerActive) {
		t.Errorf("Init while a runner works = %v, want ErrRunnerActive", err)
	}
	if st, err := StatusOf(ctx, dir, "p"); err != nil || !st.RunnerActive {
		t.Errorf("StatusOf while a runner works = %+v, %v; want runner_active", st, err)
	}
}

// TestAdd: added tasks are checked against the queue (ids, dependencies, cycles) and nothing
// is added when one is wrong; a task behind a failed one is blocked at once.
func TestAdd(t *testing.T) {
	ctx := context.Background()
	dir := newQueue(t, "- [ ] t0: first\n- [ ] t1: second (after t0)\n")
	setStatus(t, dir, "t0", store.Failed)
	tests := []struct {
		tasks []plan.Task
		err   string
	}{
		{[]plan.Task{{ID: "t1", Description: "again"}}, `task id "t1" is already in the queue`},
		{[]plan.Task{{ID: "t5", Description: "x", Dependencies: []string{"t99"}}}, `depends on "t99", which is not in the plan`},
		{[]plan.Task{{ID: "bad id", Description: "x"}}, `task id "bad id" has characters`},
		{[]plan.Task{{ID: "t7", Description: "x", Dependencies: []string{"t8"}}, {ID: "t8", Description: "y", Dependencies: []string{"t7"}}}, "dependency cycle"},
	}
	for _, tt := range tests {
		if err := Add(ctx, dir, "p", "the command line", tt.tasks); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Add(%+v) = %v, want %q", tt.tasks, err, tt.err)
		}
	}
	if err := Add(ctx, dir, "p", "the command line", []plan.Task{{ID: "t2", Description: "behind t1", Dependencies: []string{"t1"}},
		{ID: "t3", Description: "free"}}); err != nil {
		t.Fatal(err)
	}
	st, err := StatusOf(ctx, dir, "p")
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks != 4 || st.Counts[store.Blocked] != 2 || st.Counts[store.Pending] != 1 || st.Counts[store.Failed] != 1 || len(st.Open) != 4 {
		t.Errorf("after Add: %d tasks, counts %v, %d open; want 4, t1 and t2 blocked, t3 pending", st.Tasks, st.Counts, len(st.Open))
	}
	var out bytes.Buffer
	if err := WriteStatus(&out, st); err != nil || !strings.HasPrefix(out.String(), "plan p: 4 tasks: 0 done, 0 claimed, 1 pending, 1 failed, 2 blocked, 0 skipped\nno runner at work; cost $0.00\n") {
		t.Errorf("WriteStatus = %q, %v", out.String(), err)
	}
}

// TestInitReadsBack: a plan whose queue would be a file too large to read (11 MB of '<',
// which JSON writes as \u003c, six bytes each: a 66 MB queue) is refused, and nothing is
// written: init accepted it before, and every later command failed on the file (issue 17).
func TestInitReadsBack(t *testing.T) {
	ctx := context.Background()
	dir := store.In(t.TempDir())
	file := filepath.Join(t.TempDir(), "p.md")
	half := strings.Repeat("<", 11<<20/2)
	if err := os.WriteFile(file, []byte("- [ ] t1: "+half+"\n- [ ] t2: "+half+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks, err := ReadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(ctx, dir, "p", tasks, false); err == nil || !strings.Contains(err.Error(), "split the plan") {
		t.Errorf("Init of a plan whose queue is too large to read = %v, want a refusal", err)
	}
	if _, err := os.Lstat(dir.TaskQueue("p")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the queue file: %v, want none written", err)
	}
}
