package queue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// Edited is what a change of one task came to: the task's new state in words ("pending
// again", "skipped"), and the tasks it blocked or unblocked.
type Edited struct {
	What  string
	Moved []string
}

// Retry puts task of plan id back to pending with its retries at 0 (a running runner picks it
// up), and the tasks it blocked with it: a failed or skipped task only, or one blocked by a
// merge conflict.
func Retry(ctx context.Context, dir store.Dir, id, task string) (*Edited, error) {
	return edit(ctx, dir, id, task, retry)
}

// Skip marks task of plan id skipped: it will not run, and counts as done for the tasks that
// depend on it. A pending, blocked or failed task only.
func Skip(ctx context.Context, dir store.Dir, id, task string) (*Edited, error) {
	return edit(ctx, dir, id, task, skip)
}

// retry is Retry's change of t.
func retry(q *store.Queue, t *store.Task, _ string) (string, error) {
	switch t.Status {
	case store.Failed, store.Skipped:
	case store.Blocked: // by a merge conflict, it is retried: its worktree is made again from its dependencies' branches
		if t.Reason != store.ReasonConflict {
			return "", fmt.Errorf("task %s is blocked by a failed dependency (%s); retry that one", t.ID, failedDeps(q, t))
		}
	case store.Claimed:
		return "", fmt.Errorf("task %s is being worked on by %s; wait for its end", t.ID, orElse(t.ClaimedBy, "an agent"))
	default:
		return "", fmt.Errorf("task %s is %s; only a failed (or skipped) task is retried", t.ID, t.Status)
	}
	t.Status, t.Retries, t.ClaimedBy, t.ClaimedAt, t.CompletedAt, t.Error, t.Reason = store.Pending, 0, nil, nil, nil, "", ""
	return "pending again", nil
}

// skip is Skip's change of t, at now.
func skip(_ *store.Queue, t *store.Task, now string) (string, error) {
	switch t.Status {
	case store.Pending, store.Blocked, store.Failed:
	case store.Claimed:
		return "", fmt.Errorf("task %s is being worked on by %s; wait for its end, then skip it", t.ID, orElse(t.ClaimedBy, "an agent"))
	default:
		return "", fmt.Errorf("task %s is %s already", t.ID, t.Status)
	}
	t.Status, t.ClaimedBy, t.ClaimedAt, t.CompletedAt = store.Skipped, nil, nil, &now
	return "skipped", nil
}

// edit changes one task of the queue in one transaction, then blocks and unblocks its
// dependents, and clears its retry-queue entries.
func edit(ctx context.Context, dir store.Dir, id, task string, change func(q *store.Queue, t *store.Task, now string) (string, error)) (*Edited, error) {
	var out Edited
	now := record.FormatTime(time.Now())
	err := store.New(dir, id).Update(ctx, func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		t, ok := q.Get(task)
		if !ok {
			return fmt.Errorf("plan %s has no task %q", id, task)
		}
		if out.What, err = change(q, &t, now); err != nil {
			return err
		}
		q.Put(t)
		out.Moved = q.Reblock()
		tx.ChangedQueue()
		rq, err := tx.Retry()
		if err != nil {
			return err
		}
		if rq.Drop(t.ID) {
			tx.ChangedRetry()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func failedDeps(q *store.Queue, t *store.Task) string {
	var ids []string
	for _, d := range t.Dependencies {
		if dt, ok := q.Get(d); ok && (dt.Status == store.Failed || dt.Status == store.Blocked) {
			ids = append(ids, d+" "+dt.Status)
		}
	}
	return strings.Join(ids, ", ")
}

// orElse is *s, or none when s is nil (a task's agent, when it has one).
func orElse(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

// Add adds tasks to plan id's queue in dir, checked as a plan is (plan.Check, from, the file
// or "the command line", naming where they came from) against the tasks already queued, in
// one transaction; a running runner picks them up.
func Add(ctx context.Context, dir store.Dir, id, from string, tasks []plan.Task) error {
	now := record.FormatTime(time.Now())
	return store.New(dir, id).Update(ctx, func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		known := make(map[string][]string, q.Len())
		for _, t := range q.Tasks() {
			known[t.ID] = t.Dependencies
		}
		if err := plan.Check(from, id, tasks, known); err != nil {
			return err
		}
		for _, t := range tasks {
			q.Put(queued(t, now))
		}
		q.Reblock()
		tx.ChangedQueue()
		return nil
	})
}
