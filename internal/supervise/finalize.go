package supervise

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// Finalize writes the outcome into the bead's run and result records and removes the registry
// entry. It holds the bead's lock, and writes nothing when a newer attempt already owns the
// records (a --force dispatch replaced this one).
func Finalize(l Layout, spec *Spec, out Outcome) error {
	unlock, err := l.LockBead(context.Background(), spec.Bead, 30*time.Second)
	if err == nil {
		defer unlock()
	} // else: write anyway; an outcome left unwritten is worse than a late one
	// The entry goes only after the final records are written (a running record always has
	// one), and only if it is this attempt's: a newer attempt may have registered already.
	defer func() {
		if e, _ := l.ReadEntry(spec.Bead); e != nil && e.Attempt == spec.Run.Attempt {
			l.removeEntry(spec.Bead)
		}
	}()

	store := record.Store{Dir: l.Dir}
	if cur, err := record.ReadRun(store.RunPath(spec.Bead)); err == nil && cur.Attempt != spec.Run.Attempt {
		return fmt.Errorf("not recording attempt %d: the records now belong to attempt %d", spec.Run.Attempt, cur.Attempt)
	}
	run, res := Complete(spec.Run, out)
	ctx := context.Background()
	if err := store.WriteRun(ctx, &run); err != nil {
		return err
	}
	return store.WriteResult(ctx, &res)
}

// Complete fills a running run record with its outcome and builds the matching result record.
func Complete(run record.Run, out Outcome) (record.Run, record.Result) {
	finished := record.FormatTime(out.Finished)
	var duration *int64
	if d, ok := record.Seconds(run.StartedAt, finished); ok {
		duration = &d
	}
	run.FinishedAt = &finished
	run.DurationSeconds = duration
	run.Status = out.Status
	var exit *int64
	if !out.UnknownExit {
		exit = record.Int(out.ExitCode)
	}
	run.ExitCode = exit
	run.OutputSummary = &out.Summary
	run.FailureReason = nil
	if out.Status == record.StatusFailed || out.Status == record.StatusTimeout {
		run.FailureReason = record.Str(out.Reason)
	}
	run.Verification = out.Verification
	res := record.Result{
		SchemaVersion: record.SchemaVersion, Bead: run.Bead, Agent: run.Agent, Status: out.Status,
		Reason: out.Reason, StartedAt: run.StartedAt, FinishedAt: &finished, DurationSeconds: duration,
		Attempt: run.Attempt, MaxRetries: run.MaxRetries,
		WillRetry: out.Status != record.StatusDone && run.Attempt < run.MaxRetries,
		ExitCode:  exit, SessionName: run.SessionName, OutputSummary: &out.Summary,
		Verification: out.Verification,
	}
	return run, res
}
