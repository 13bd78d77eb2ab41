package attempt

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// TestJudge: the end of an attempt as its runners (swarm run, the queue) read it: done, failed
// with its reason or its status, a lost supervisor's attempt closed first, and the three ways
// there is nothing to judge.
func TestJudge(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	write := func(bead string, n int, status string, reason *string) {
		t.Helper()
		run := running(bead, n)
		run.Status, run.FailureReason = status, reason
		if err := d.Store.WriteRun(ctx, &run); err != nil {
			t.Fatal(err)
		}
	}
	timeout := "timeout"
	write("bd-done", 1, record.StatusDone, nil)
	write("bd-failed", 2, record.StatusFailed, &timeout)
	write("bd-plain", 1, record.StatusFailed, nil)
	write("bd-other", 3, record.StatusDone, nil)
	// Recorded running, its supervisor registered and long dead (pid 0 never runs one).
	lost := running("bd-lost", 1)
	d.Store.WriteRun(ctx, &lost)
	d.Layout.WriteEntry(&supervise.Entry{Tool: Tool, Name: "bd-lost", Attempt: 1, StartedAt: lost.StartedAt})

	for _, c := range []struct {
		bead   string
		n      int
		done   bool
		reason string
		err    error
	}{
		{"bd-done", 1, true, "", nil},
		{"bd-failed", 2, false, "timeout", nil},
		{"bd-plain", 1, false, record.StatusFailed, nil},
		{"bd-lost", 1, false, supervise.ReasonLost, nil},
		{"bd-other", 2, false, "", ErrRecordsReplaced},
		{"bd-none", 1, false, "", ErrNoRunRecord},
	} {
		v, err := Judge(ctx, d, c.bead, c.n)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Judge(%s, %d) = %+v, %v; want %v", c.bead, c.n, v, err, c.err)
			}
			continue
		}
		if err != nil || v.Done != c.done || v.Reason != c.reason || v.Run == nil || v.Run.Attempt != c.n {
			t.Errorf("Judge(%s, %d) = %+v, %v; want done %v, reason %q", c.bead, c.n, v, err, c.done, c.reason)
		}
	}
}
