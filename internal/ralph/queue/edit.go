package queue

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	ucli "github.com/urfave/cli/v2"
)

func retryApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " retry", Usage: "try a failed task again",
		UsageText:   "ralph queue retry PLAN TASK [--repo DIR]",
		Description: "Puts a failed task back to pending with its retries at 0 (a running 'ralph queue run' picks it up); the tasks it blocked are pending again.",
		Flags:       []ucli.Flag{repoFlag()},
		Action: func(c *ucli.Context) error {
			return edit(c, stdout, func(q *store.Queue, t *store.Task) (string, error) {
				switch t.Status {
				case store.Failed, store.Skipped:
				case store.Blocked:
					return "", fmt.Errorf("task %s is blocked by a failed dependency (%s); retry that one", t.ID, failedDeps(q, t))
				case store.Claimed:
					return "", fmt.Errorf("task %s is being worked on by %s; wait for its end", t.ID, deref(t.ClaimedBy))
				default:
					return "", fmt.Errorf("task %s is %s; only a failed (or skipped) task is retried", t.ID, t.Status)
				}
				t.Status, t.Retries, t.ClaimedBy, t.ClaimedAt, t.CompletedAt, t.Error = store.Pending, 0, nil, nil, nil, ""
				return "pending again", nil
			})
		},
	}, stdout, stderr)
}

func skipApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " skip", Usage: "leave a task out",
		UsageText:   "ralph queue skip PLAN TASK [--repo DIR]",
		Description: "Marks a pending, blocked or failed task skipped: it will not run, and counts as done for the tasks that depend on it.",
		Flags:       []ucli.Flag{repoFlag()},
		Action: func(c *ucli.Context) error {
			return edit(c, stdout, func(q *store.Queue, t *store.Task) (string, error) {
				switch t.Status {
				case store.Pending, store.Blocked, store.Failed:
				case store.Claimed:
					return "", fmt.Errorf("task %s is being worked on by %s; wait for its end, then skip it", t.ID, deref(t.ClaimedBy))
				default:
					return "", fmt.Errorf("task %s is %s already", t.ID, t.Status)
				}
				now := record.FormatTime(time.Now())
				t.Status, t.ClaimedBy, t.ClaimedAt, t.CompletedAt = store.Skipped, nil, nil, &now
				return "skipped", nil
			})
		},
	}, stdout, stderr)
}

// edit changes one task of the queue in one transaction, then blocks and unblocks its
// dependents, and clears its retry-queue entries.
func edit(c *ucli.Context, stdout io.Writer, change func(q *store.Queue, t *store.Task) (string, error)) error {
	a, err := args(c, "PLAN", "TASK")
	if err != nil {
		return err
	}
	id, err := planOf(a[0])
	if err != nil {
		return err
	}
	dir, _, err := dirOf(c)
	if err != nil {
		return err
	}
	var what string
	var moved []string
	err = store.New(dir, id).Update(c.Context, func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		t, ok := q.Get(a[1])
		if !ok {
			return fmt.Errorf("plan %s has no task %q", id, a[1])
		}
		if what, err = change(q, &t); err != nil {
			return err
		}
		q.Put(t)
		moved = q.Reblock()
		tx.ChangedQueue()
		rq, err := tx.Retry()
		if err != nil {
			return err
		}
		kept := rq.Retries[:0]
		for _, e := range rq.Retries {
			if e.TaskID != t.ID {
				kept = append(kept, e)
			}
		}
		if len(kept) != len(rq.Retries) {
			rq.Retries = kept
			tx.ChangedRetry()
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", a[1], what)
	if len(moved) > 0 {
		fmt.Fprintf(stdout, "and so: %s\n", strings.Join(moved, ", "))
	}
	return nil
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

func deref(s *string) string {
	if s == nil {
		return "an agent"
	}
	return *s
}

func addApp(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
	return newApp(cli.Spec{
		Name: tool + " add", Usage: "add tasks to a plan's queue",
		UsageText: "ralph queue add PLAN TASK_ID DESCRIPTION... [--after IDS] [--repo DIR]\nralph queue add PLAN --from FILE [--repo DIR]",
		Description: "Adds one task (its dependencies as --after t1,t2), or the tasks of a plan file (--from, in any plan format), " +
			"checked as init checks a plan, against the tasks already queued. A running 'ralph queue run' picks them up.",
		Flags: []ucli.Flag{repoFlag(),
			&ucli.StringFlag{Name: "after", Usage: "the task's dependencies, comma-separated (`IDS`)"},
			&ucli.StringFlag{Name: "from", Usage: "add the tasks of a plan file (`FILE`)"}},
		Action: func(c *ucli.Context) error {
			return add(c, stdout)
		},
	}, stdout, stderr)
}

func add(c *ucli.Context, stdout io.Writer) error {
	a := c.Args().Slice()
	if len(a) == 0 {
		return cli.Usagef("add takes PLAN and a task (TASK_ID DESCRIPTION...), or PLAN --from FILE")
	}
	id, err := planOf(a[0])
	if err != nil {
		return err
	}
	file := "the command line"
	var tasks []plan.Task
	switch {
	case c.String("from") != "" && len(a) == 1:
		file = c.String("from")
		doc, err := fsx.ReadFileLimit(file, plan.MaxSize)
		if err != nil {
			return fmt.Errorf("reading the plan: %w", err)
		}
		if tasks, err = plan.Parse(file, doc); err != nil {
			return err
		}
	case c.String("from") == "" && len(a) >= 3:
		t := plan.Task{ID: a[1], Description: strings.Join(a[2:], " ")}
		if c.String("after") != "" {
			for _, d := range strings.Split(c.String("after"), ",") {
				if d = strings.TrimSpace(d); d == "" {
					return cli.Usagef("--after %q has an empty id; list ids as t1,t2", c.String("after"))
				}
				t.Dependencies = append(t.Dependencies, d)
			}
		}
		tasks = []plan.Task{t}
	default:
		return cli.Usagef("add takes PLAN TASK_ID DESCRIPTION... [--after IDS], or PLAN --from FILE")
	}
	dir, _, err := dirOf(c)
	if err != nil {
		return err
	}
	now := record.FormatTime(time.Now())
	err = store.New(dir, id).Update(c.Context, func(tx *store.Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		known := make(map[string]plan.Known, q.Len())
		for _, t := range q.Tasks() {
			known[t.ID] = plan.Known{Dependencies: t.Dependencies}
		}
		if err := plan.Check(file, id, tasks, known); err != nil {
			return err
		}
		for _, t := range tasks {
			q.Put(queued(t, now))
		}
		q.Reblock()
		tx.ChangedQueue()
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "plan %s: %d task(s) added\n", id, len(tasks))
	return nil
}
