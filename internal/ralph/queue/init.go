package queue

import (
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	ucli "github.com/urfave/cli/v2"
)

func initApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " init", Usage: "queue a plan's tasks",
		UsageText: "ralph queue init PLAN_FILE [--repo DIR] [--force]",
		Description: "Reads the plan (a markdown task list, or a YAML or JSON list of {id, description, dependencies}), " +
			"checks it (ids unique and safe, dependencies that exist, no cycle) and writes DIR/.claude/ralph/task-queue-<plan>.json, " +
			"the plan's id being the file's name without the extension. Ticked tasks (- [x]) are queued done.",
		Flags: []ucli.Flag{repoFlag(),
			&ucli.BoolFlag{Name: "force", Usage: "start the plan's queue over (its retry queue and progress too)"}},
		Action: func(c *ucli.Context) error {
			a, err := args(c, "PLAN_FILE")
			if err != nil {
				return err
			}
			return initQueue(c, a[0], stdout)
		},
	}, stdout, stderr)
}

func initQueue(c *ucli.Context, file string, stdout io.Writer) error {
	id, err := plan.ID(file)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	doc, err := fsx.ReadFileLimit(file, plan.MaxSize)
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	tasks, err := plan.Parse(file, doc)
	if err != nil {
		return err
	}
	if err := plan.Check(file, id, tasks, nil); err != nil {
		return err
	}
	dir, _, err := dirOf(c)
	if err != nil {
		return err
	}
	unlock, err := dir.LockRunner(c.Context)
	if err != nil {
		return err
	}
	defer unlock()
	s := store.New(dir, id)
	now := record.FormatTime(time.Now())
	done := 0
	err = s.Create(c.Context, func(tx *store.Tx) error {
		if !c.Bool("force") {
			q, err := tx.Queue()
			if err != nil {
				return err
			}
			if q.Len() > 0 {
				counts := q.Counts()
				return fmt.Errorf("plan %s already has a queue (%d tasks, %d done) in %s; pass --force to start it over, or add tasks with 'ralph queue add'",
					id, q.Len(), counts[store.Done], dir.TaskQueue(id))
			}
		}
		// --force replaces the queue unread: it may be the broken file being started over.
		q := store.NewQueue(id, now, nil)
		for _, t := range tasks {
			q.Put(queued(t, now))
			if t.Done {
				done++
			}
		}
		tx.SetQueue(q)
		if c.Bool("force") {
			tx.SetRetry(&store.RetryQueue{PlanID: id, Retries: []store.Retry{}})
			tx.SetProgress(&store.Progress{PlanID: id, Phase: store.PhaseImplementation, StartedAt: now, UpdatedAt: now, Agents: []store.Agent{}})
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "plan %s: %d tasks queued (%d done) in %s\n", id, len(tasks), done, dir.TaskQueue(id))
	return nil
}

// queued is a plan's task as the queue first holds it.
func queued(t plan.Task, now string) store.Task {
	deps := append([]string{}, t.Dependencies...)
	st := store.Task{ID: t.ID, Description: t.Description, Status: store.Pending, Dependencies: deps, CreatedAt: now}
	if t.Done {
		st.Status, st.CompletedAt = store.Done, &now
	}
	return st
}
