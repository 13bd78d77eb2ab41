package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// startTimes is a run's log that notes when each attempt was started.
type startTimes struct {
	*logWatch
	mu     sync.Mutex
	starts []time.Time
}

func (s *startTimes) Write(p []byte) (int, error) {
	if strings.Contains(string(p), ": started ") {
		s.mu.Lock()
		s.starts = append(s.starts, time.Now())
		s.mu.Unlock()
	}
	return s.logWatch.Write(p)
}

// TestMaxCallsPerHour: with --max-calls-per-hour 2 (over a window of 2 s here), three agents
// on five ready tasks never start more than 2 attempts in any window: the others wait, their
// tasks pending, and every task is done in the end (a wait, not a failure).
func TestMaxCallsPerHour(t *testing.T) {
	w := newWorld(t, "t1: a", "t2: b", "t3: c", "t4: d", "t5: e")
	log := &startTimes{logWatch: newLogWatch()}
	cfg := w.config(3, 1, log.logWatch)
	cfg.Log = log
	cfg.MaxCallsPerHour, cfg.CallWindow = 2, 2*time.Second
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 5 {
		t.Fatalf("Run = %+v, want 5 done\n%s", res.Counts, log)
	}
	if !strings.Contains(log.String(), "(--max-calls-per-hour 2): waiting until ") {
		t.Errorf("the log does not say the agents wait:\n%s", log)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.starts) != 5 {
		t.Fatalf("%d starts logged, want 5\n%s", len(log.starts), log)
	}
	// The log line comes after the window's slot was taken: a little slack for its writing.
	for i := 2; i < len(log.starts); i++ {
		if d := log.starts[i].Sub(log.starts[i-2]); d < 2*time.Second-200*time.Millisecond {
			t.Errorf("starts %d and %d are %s apart, want at least the 2 s window\n%s", i-1, i+1, d, log)
		}
	}
	w.valid()
}
