package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// Init writes plan id's task queue in dir from its tasks, which plan.Check has passed (a
// command checks the plan before it looks at the directory): ticked tasks are queued done. A plan that has a queue is refused unless force, which starts its queue,
// retry queue and progress over; so is any while a runner works in dir. It returns how many
// tasks are queued done.
func Init(ctx context.Context, dir store.Dir, id string, tasks []plan.Task, force bool) (done int, err error) {
	unlock, err := dir.LockRunner(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	s := store.New(dir, id)
	now := record.FormatTime(time.Now())
	err = s.Update(ctx, func(tx *store.Tx) error {
		if !force {
			switch q, err := tx.Queue(); {
			case errors.Is(err, store.ErrNoQueue): // the plan's first queue
			case err != nil:
				return err
			case q.Len() > 0:
				return fmt.Errorf("plan %s already has a queue (%d tasks, %d done) in %s; pass --force to start it over, or add tasks with 'ralph queue add'",
					id, q.Len(), q.Counts()[store.Done], dir.TaskQueue(id))
			}
		}
		// --force replaces the queue unread: it may be the broken file being started over.
		q := store.NewQueue(id, now, nil)
		for _, t := range tasks {
			q.Put(queued(t, now))
		}
		done = q.Counts()[store.Done] // the ticked tasks: a checked plan has no id twice
		tx.SetQueue(q)
		if force {
			tx.SetRetry(&store.RetryQueue{PlanID: id, Retries: []store.Retry{}})
			tx.SetProgress(&store.Progress{PlanID: id, Phase: store.PhaseImplementation, StartedAt: now, UpdatedAt: now, Agents: []store.Agent{}})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// What was written must read back, or every later command would fail on it.
	if _, err := s.View(); err != nil {
		return 0, fmt.Errorf("plan %s: the queue written cannot be read back: %w", id, err)
	}
	return done, nil
}
