package executor

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// Await waits until the supervisor of bead's attempt in d has ended. When ctx ends first it
// returns ctx's error and the attempt runs on: what an interruption does to it is the caller's
// to say (Local and ralph queue run stop it with Halt: taskgraph's meaning of interrupted).
func Await(ctx context.Context, d attempt.Dir, w attempt.Where, bead string) error {
	for {
		live, entry := attempt.Alive(context.WithoutCancel(ctx), d, w, bead)
		if !live {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		supervise.WaitExit(ctx, entry, 0)
	}
}

// Halt stops bead's attempt in d: its supervisor gets SIGTERM (it stops the agent, giving it
// w.KillGrace, and records the end), and is waited for until it has ended.
func Halt(d attempt.Dir, w attempt.Where, bead string) {
	stopped := false
	for {
		live, entry := attempt.Alive(context.Background(), d, w, bead)
		if !live {
			return
		}
		if !stopped {
			stopped = true
			attempt.Stop(context.Background(), nil, entry, "", syscall.SIGTERM)
		}
		supervise.WaitExit(context.Background(), entry, w.KillGrace+10*time.Second)
	}
}

// Judge reads the end of bead's attempt n in d from its run record (attempt.Judge: one whose
// supervisor was lost is closed as supervisor-lost first), and returns it as an Outcome with
// the record it was read from. When it cannot be read, the Outcome is failed with a reason
// naming why (reconcile-failed, records-replaced, no-run-record), and the error is returned.
func Judge(ctx context.Context, d attempt.Dir, bead string, n int) (Outcome, *record.Run, error) {
	v, err := attempt.Judge(ctx, d, bead, n)
	switch {
	case errors.Is(err, attempt.ErrNotReconciled):
		return failed(n, "reconcile-failed", err), nil, err
	case errors.Is(err, attempt.ErrRecordsReplaced):
		return failed(n, "records-replaced", err), nil, err
	case err != nil:
		return failed(n, "no-run-record", err), nil, err
	}
	run := v.Run
	out := Outcome{Attempt: n, Status: run.Status, Reason: v.Reason, Run: run}
	if run.Status == record.StatusRunning {
		out.Status = record.StatusFailed
	}
	if run.ExitCode != nil {
		c := int(*run.ExitCode)
		out.ExitCode = &c
	}
	out.Started, _ = record.ParseTime(run.StartedAt)
	if run.FinishedAt != nil {
		out.Finished, _ = record.ParseTime(*run.FinishedAt)
	}
	if out.Finished.IsZero() {
		out.Finished = time.Now()
	}
	return out, run, nil
}
