package store

import "fmt"

// The agents work in the repository that holds the queue's files, so they can write them. A
// store with Guard set (the runner's) holds each task as it last wrote or read it, and checks
// every version of the task queue another process wrote against that: only the changes that
// ralph queue add, retry and skip make (a task added; a failed or skipped task pending again,
// retries at 0; a pending, blocked or failed task skipped; pending and blocked tasks moved by
// the dependencies) are taken. Any other change of a task (marked done, claimed, released,
// its retries or attempt rewritten, removed) is put back as the store held it, said through
// Warn, and written back in the same transaction.

// guard checks q, a version of the task queue another process wrote, against the tasks held;
// it puts back what it may not change and reports whether it did.
func (s *Store) guard(q *Queue) bool {
	changed := false
	for id, h := range s.held {
		var msg string
		if i, ok := q.index[id]; !ok {
			msg = fmt.Sprintf("task %s was removed from %s behind the runner's back; put back as %s", id, s.Dir.TaskQueue(s.Plan), h.Status)
		} else if t := &q.tasks[i]; !allowedChange(&h, t) {
			msg = fmt.Sprintf("task %s was changed in %s behind the runner's back (%s, retries %d, attempt %d → %s, retries %d, attempt %d), which ralph queue add, retry and skip never do; put back as %s",
				id, s.Dir.TaskQueue(s.Plan), h.Status, h.Retries, h.Attempt, t.Status, t.Retries, t.Attempt, h.Status)
		} else {
			continue
		}
		if s.Warn != nil {
			s.Warn(msg)
		}
		q.Put(h)
		changed = true
	}
	return changed
}

// allowedChange reports whether held task h may have become t by another process's hand.
func allowedChange(h, t *Task) bool {
	same := t.Attempt == h.Attempt && t.CostUSD == h.CostUSD
	switch {
	case t.Status == h.Status:
		return same && t.Retries == h.Retries && sameString(t.ClaimedBy, h.ClaimedBy) && sameString(t.CompletedAt, h.CompletedAt)
	case t.Status == Pending && (h.Status == Failed || h.Status == Skipped): // retry
		return same && t.Retries == 0 && t.ClaimedBy == nil
	case t.Status == Skipped && (h.Status == Pending || h.Status == Blocked || h.Status == Failed): // skip
		return same && t.Retries == h.Retries && t.ClaimedBy == nil
	case t.Status == Pending && h.Status == Blocked, t.Status == Blocked && h.Status == Pending: // Reblock
		return same && t.Retries == h.Retries && sameString(t.ClaimedBy, h.ClaimedBy)
	}
	return false
}

// sameString says whether a and b are both nil, or point to equal strings.
func sameString(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// hold makes q's tasks the ones held.
func (s *Store) hold(q *Queue) {
	s.held = make(map[string]Task, len(q.tasks))
	for _, t := range q.tasks {
		s.held[t.ID] = t
	}
}
