package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// TestHungAgentStopped: an agent that hangs is stopped by the attempt's timeout, or by the
// inactivity timeout once it printed nothing for that long, and its task is retried as any
// failed attempt: t1 hangs on every attempt and is failed once out of retries; t2 hangs on its
// first attempt only and is done on its second (issue 19: the queue had no idle timeout, and
// no way to set the attempt's timeout but DISPATCH_WATCH_TIMEOUT).
func TestHungAgentStopped(t *testing.T) {
	for _, c := range []struct {
		name          string
		timeout, idle time.Duration
		reason        string
	}{
		{"iteration", 2 * time.Second, 0, "watch-timeout-2s"},
		{"inactivity", time.Hour, time.Second, "inactivity-timeout-1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, "t1: stuck hang", "t2: stuck once hangbefore:2")
			log := newLogWatch()
			cfg := w.config(2, 2, log)
			cfg.Timeout, cfg.Inactivity = c.timeout, c.idle
			start := time.Now()
			// Bounded: without the timeouts the run would wait for the agents for an hour.
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			res := w.run(ctx, cfg)
			if res.Counts[store.Done] != 1 || res.Counts[store.Failed] != 1 {
				t.Fatalf("Run = %+v, want t2 done, t1 failed\n%s", res.Counts, log)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the run took %s: the hung agents were not stopped in time", d)
			}
			t1 := w.task("t1")
			// Two attempts: one retry (seed 004's retries, 0 on the first try).
			if t1.Status != store.Failed || t1.Retries != 1 || t1.Attempt != 2 || t1.Error != c.reason {
				t.Errorf("t1 = %+v, want failed after 2 attempts, error %s", t1, c.reason)
			}
			if got := w.attempts("t2"); got[1] != record.StatusTimeout || got[2] != record.StatusDone {
				t.Errorf("t2's attempts = %v, want 1 timeout, 2 done", got)
			}
			if !strings.Contains(log.String(), "t1 (attempt 1): failed ("+c.reason+"), queued for a retry") {
				t.Errorf("log has no retry of t1 for %s:\n%s", c.reason, log)
			}
			w.noSupervisors()
			w.valid()
		})
	}
}
