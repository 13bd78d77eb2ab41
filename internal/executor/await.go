package executor

import (
	"context"
	"errors"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/record"
)

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
