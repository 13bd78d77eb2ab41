package executor

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/screen"
)

// Judge reads the end of bead's attempt n in d from its run record (attempt.Judge: one whose
// supervisor was lost is closed as supervisor-lost first), and returns it as an Outcome with
// the record it was read from (Run) and the end of the agent's output (its last 2000 bytes, its
// control sequences stripped). When it cannot be read, the Outcome is failed with a reason
// naming why (reconcile-failed, records-replaced, no-run-record), and the error in Err.
func Judge(ctx context.Context, d attempt.Dir, bead string, n int) Outcome {
	v, err := attempt.Judge(ctx, d, bead, n)
	switch {
	case errors.Is(err, attempt.ErrNotReconciled):
		return failed(n, "reconcile-failed", err)
	case errors.Is(err, attempt.ErrRecordsReplaced):
		return failed(n, "records-replaced", err)
	case err != nil:
		return failed(n, "no-run-record", err)
	}
	out := recorded(n, v.Run.Status, v.Run.ExitCode, v.Run.StartedAt, v.Run.FinishedAt)
	out.Reason, out.Run = v.Reason, v.Run
	if v.Run.Status == record.StatusRunning {
		out.Status = record.StatusFailed
	}
	if b, err := fsx.ReadTail(d.Layout.LogPath(bead), 4096); err == nil {
		logs := strings.TrimSpace(screen.Strip(string(b)))
		out.Logs = logs[max(0, len(logs)-2000):]
	}
	return out
}

// recorded is attempt n's Outcome with a record's status, exit code and times (finished now
// when the record names no end): a run record's here (Judge), a host's result record
// (outcomeOf).
func recorded(n int, status string, exit *int64, started string, finished *string) Outcome {
	out := Outcome{Attempt: n, Status: status, Finished: time.Now()}
	if exit != nil {
		out.ExitCode = new(int(*exit))
	}
	out.Started, _ = record.ParseTime(started)
	if finished != nil {
		if f, ok := record.ParseTime(*finished); ok {
			out.Finished = f
		}
	}
	return out
}
