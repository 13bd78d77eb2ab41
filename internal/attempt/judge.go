package attempt

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/record"
)

// What Judge could not read an attempt's end from.
var (
	ErrNotReconciled   = errors.New("its lost supervisor's end could not be recorded")
	ErrNoRunRecord     = errors.New("no readable run record")
	ErrRecordsReplaced = errors.New("its records are another attempt's")
)

// Verdict is how an attempt ended, as its run record says.
type Verdict struct {
	Run *record.Run
	// Done: the attempt succeeded (status done).
	Done bool
	// Reason is empty when Done; else the run's failure_reason, or its status when it gives
	// none, or "still recorded running" for a record whose supervisor left it running.
	Reason string
}

// Judge reads the end of attempt n of bead from its run record, once its supervisor is gone: a
// supervisor lost without recording the end has it closed first (supervisor-lost, through
// ReconcileBead). What every runner of attempts (swarm run's executors, the queue) decides on;
// each adds what it reads besides (the log's tail, the cost, a usage limit). The errors wrap
// ErrNotReconciled, ErrNoRunRecord or ErrRecordsReplaced.
func Judge(ctx context.Context, d Dir, bead string, n int) (Verdict, error) {
	if _, err := ReconcileBead(ctx, d, nil, bead); err != nil {
		return Verdict{}, fmt.Errorf("%w: %v", ErrNotReconciled, err)
	}
	run, err := record.ReadRun(d.Store.RunPath(bead))
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: %v", ErrNoRunRecord, err)
	}
	if run.Attempt != n {
		return Verdict{}, fmt.Errorf("%w: the records of %s are attempt %d's, not %d's", ErrRecordsReplaced, bead, run.Attempt, n)
	}
	v := Verdict{Run: run, Reason: run.Status}
	if run.FailureReason != nil && *run.FailureReason != "" {
		v.Reason = *run.FailureReason
	}
	switch run.Status {
	case record.StatusDone:
		v.Done, v.Reason = true, ""
	case record.StatusRunning:
		v.Reason = "still recorded running"
	}
	return v, nil
}
