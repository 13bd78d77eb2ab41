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
// on five ready tasks start no more than 2 attempts in any window (the 3rd and 4th no sooner
// than one window in, the 5th two): the others wait, their tasks pending, and every task is
// done in the end (a wait, not a failure).
func TestMaxCallsPerHour(t *testing.T) {
	w := newWorld(t, "t1: a", "t2: b", "t3: c", "t4: d", "t5: e")
	log := &startTimes{logWatch: newLogWatch()}
	cfg := w.config(3, 1, log.logWatch)
	cfg.Log = log
	cfg.MaxCallsPerHour, cfg.CallWindow = 2, 2*time.Second
	begin := time.Now()
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
	// Start k (from 0) took its slot no sooner than k/2 windows after the run began, and its
	// line is logged after that (so a slow launch never makes this fail).
	for k, at := range log.starts {
		if d, min := at.Sub(begin), time.Duration(k/2)*2*time.Second; d < min {
			t.Errorf("start %d logged %s after the run began, want at least %s\n%s", k+1, d, min, log)
		}
	}
	w.valid()
}
