package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// testRunner is a runner of plan p in a new directory, with maxRetries attempts a task, and
// its store; the queue holds tasks (each with its status set) and the retry queue retries.
func testRunner(t *testing.T, maxRetries int, tasks []store.Task, retries []store.Retry) (*runner, *store.Store) {
	t.Helper()
	tmp := t.TempDir()
	stateDir := filepath.Join(tmp, "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := store.New(store.In(tmp), "p")
	at := record.FormatTime(time.Now())
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		q := store.NewQueue("p", at, nil)
		for _, task := range tasks {
			if task.Description == "" {
				task.Description = "d"
			}
			if task.Dependencies == nil {
				task.Dependencies = []string{}
			}
			task.CreatedAt = at
			q.Put(task)
		}
		tx.SetQueue(q)
		tx.SetRetry(&store.RetryQueue{PlanID: "p", Retries: append([]store.Retry{}, retries...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: Config{Store: s, Agents: 1, Profile: &agent.Profile{Name: "fake"}, MaxRetries: maxRetries, StateDir: stateDir},
		plan: "p", dir: attempt.NewDir(stateDir)}
	return r, s
}

// TestFinish: how each end of an attempt settles its task, in one transaction: done; failed
// and queued for a retry; failed for good once out of attempts, its dependents blocked; stopped
// by the budget (pending, no attempt counted); and a claim no longer the agent's left alone.
// The cost counts in the progress whatever the end.
func TestFinish(t *testing.T) {
	a1, a2 := "agent-1", "agent-2"
	at := "2026-11-23T19:00:00Z"
	old := store.Retry{TaskID: "t", AgentID: a1, Attempt: 1, Error: "agent-exit-3", QueuedAt: at, MaxRetries: 3}
	tests := []struct {
		name     string
		retries  int     // t's retries before this attempt
		holder   *string // who holds t's claim in the file
		attempt  int     // the attempt the file's claim names
		out      outcome
		status   string // t's status after
		wantRetr int    // t's retries after
		queued   bool   // t has a retry-queue entry after
		dep      string // the status of the task that depends on t, after
	}{
		{name: "done", retries: 1, holder: &a1, attempt: 2, out: outcome{status: outDone, cost: 0.5, duration: 3},
			status: store.Done, wantRetr: 1, dep: store.Pending},
		{name: "failed, retried", retries: 0, holder: &a1, attempt: 1, out: outcome{status: outFailed, reason: "agent-exit-3", cost: 0.5},
			status: store.Pending, wantRetr: 1, queued: true, dep: store.Pending},
		{name: "failed, out of attempts", retries: 2, holder: &a1, attempt: 3, out: outcome{status: outFailed, reason: "timeout", cost: 0.5},
			status: store.Failed, wantRetr: 2, dep: store.Blocked}, // 0 on the first try (seed 004)
		{name: "stopped by the budget", retries: 1, holder: &a1, attempt: 2, out: outcome{status: outStopped, reason: "stopped", cost: 0.5},
			status: store.Pending, wantRetr: 1, queued: true, dep: store.Pending},
		{name: "gone", retries: 0, holder: &a1, attempt: 1, out: outcome{status: outGone, cost: 0.5},
			status: store.Claimed, wantRetr: 0, queued: true, dep: store.Pending},
		{name: "another agent's claim", retries: 0, holder: &a2, attempt: 1, out: outcome{status: outDone, cost: 0.5},
			status: store.Claimed, wantRetr: 0, queued: true, dep: store.Pending},
		{name: "another attempt's claim", retries: 0, holder: &a1, attempt: 7, out: outcome{status: outFailed, cost: 0.5},
			status: store.Claimed, wantRetr: 0, queued: true, dep: store.Pending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claimed := store.Task{ID: "t", Status: store.Claimed, ClaimedBy: tt.holder, ClaimedAt: &at, Retries: tt.retries, Attempt: tt.attempt}
			r, s := testRunner(t, 3, []store.Task{claimed,
				{ID: "dep", Status: store.Pending, Dependencies: []string{"t"}},
				{ID: "free", Status: store.Pending}}, []store.Retry{old})
			a := &agentRun{r: r, id: a1}
			mine := claimed
			mine.ClaimedBy = &a1
			if tt.name == "another attempt's claim" {
				mine.Attempt = 1
			}
			a.finish(context.Background(), &claim{task: mine, attempt: mine.Attempt}, tt.out)

			q, err := s.View()
			if err != nil {
				t.Fatal(err)
			}
			task, _ := q.Get("t")
			if task.Status != tt.status || task.Retries != tt.wantRetr {
				t.Errorf("t: %s with %d retries, want %s with %d", task.Status, task.Retries, tt.status, tt.wantRetr)
			}
			switch task.Status {
			case store.Done, store.Failed:
				if task.CompletedAt == nil {
					t.Errorf("t is %s without completed_at", task.Status)
				}
			case store.Pending:
				if task.ClaimedBy != nil || task.ClaimedAt != nil {
					t.Errorf("t is pending, still claimed by %v", task.ClaimedBy)
				}
			}
			if tt.out.status == outFailed && task.Status != store.Claimed && task.Error != tt.out.reason {
				t.Errorf("t's error = %q, want %q", task.Error, tt.out.reason)
			}
			if dep, _ := q.Get("dep"); dep.Status != tt.dep {
				t.Errorf("dep: %s, want %s", dep.Status, tt.dep)
			}
			if free, _ := q.Get("free"); free.Status != store.Pending {
				t.Errorf("free: %s, want pending (nothing else is blocked)", free.Status)
			}
			rq, err := s.ViewRetry()
			if err != nil {
				t.Fatal(err)
			}
			entries := 0
			for _, e := range rq.Retries {
				if e.TaskID == "t" {
					entries++
				}
			}
			if got := entries > 0; got != tt.queued {
				t.Errorf("t's retry-queue entries: %+v, want some: %v", rq.Retries, tt.queued)
			}
			if tt.name == "failed, retried" {
				last := rq.Retries[len(rq.Retries)-1]
				if last.AgentID != a1 || last.Attempt != 1 || last.Error != "agent-exit-3" || last.MaxRetries != 3 {
					t.Errorf("the retry entry = %+v", last)
				}
			}
			p, err := s.ViewProgress()
			if err != nil {
				t.Fatal(err)
			}
			if p.TotalCostUSD != 0.5 || len(p.Agents) != 1 || p.Agents[0].Tasks != 1 || p.Agents[0].CostUSD != 0.5 {
				t.Errorf("progress: total $%v, agents %+v; want $0.5 and one task for agent-1", p.TotalCostUSD, p.Agents)
			}
			for kind, path := range map[string]string{store.KindTaskQueue: s.Dir.TaskQueue("p"),
				store.KindRetryQueue: s.Dir.RetryQueue("p"), store.KindProgress: s.Dir.Progress("p")} {
				doc, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := store.Check(kind, doc); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}
		})
	}
}
