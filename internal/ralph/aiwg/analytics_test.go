package aiwg

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/schema"
)

// TestEstimateCompletion: seed 003's progress.estimated_completion is the latest end a running
// loop's caps allow at its pace so far: the iterations left times the average, or the
// timeout's end when that comes first; nil when it cannot be told.
func TestEstimateCompletion(t *testing.T) {
	now := time.Date(2026, 2, 2, 21, 0, 0, 0, time.UTC)
	loop := func(status string, done, max int, avg float64, timeout int64, from string) *State {
		return &State{Status: status, StartedAt: "2026-02-02T20:00:00Z", TimeoutFrom: from, TimeoutSeconds: timeout,
			Configuration: Configuration{MaxIterations: max},
			Metrics:       Metrics{TotalIterations: done, AverageIterationTimeSeconds: avg}}
	}
	for _, tt := range []struct {
		name string
		st   *State
		want string // "" for nil
	}{
		{"no iteration yet", loop(StatusRunning, 0, 10, 0, 0, ""), ""},
		{"paused", loop(StatusPaused, 2, 10, 60, 0, ""), ""},
		{"completed", loop(StatusCompleted, 2, 10, 60, 0, ""), ""},
		{"8 left at 60 s", loop(StatusRunning, 2, 10, 60, 0, ""), "2026-02-02T21:08:00Z"},
		{"the timeout first", loop(StatusRunning, 2, 10, 60, 3900, ""), "2026-02-02T21:05:00Z"},
		{"the timeout from timeout_from", loop(StatusRunning, 2, 10, 60, 3900, "2026-02-02T20:02:00Z"), "2026-02-02T21:07:00Z"},
		{"the cap reached", loop(StatusRunning, 10, 10, 60, 0, ""), "2026-02-02T21:00:00Z"},
		{"the timeout passed", loop(StatusRunning, 2, 10, 60, 60, ""), "2026-02-02T21:00:00Z"},
	} {
		got := EstimateCompletion(tt.st, now)
		if (got == nil) != (tt.want == "") || (got != nil && *got != tt.want) {
			g := "nil"
			if got != nil {
				g = *got
			}
			t.Errorf("%s: EstimateCompletion = %s, want %q", tt.name, g, tt.want)
		}
	}
}

// TestAnalyticsWritten: a loop keeps seed 003's analytics/analytics.json beside its state,
// valid against the loop-analytics schema, with every iteration and a summary; while it runs
// its state's progress.estimated_completion is set once an iteration was counted, and null
// once it ended (issue 19: neither was written).
func TestAnalyticsWritten(t *testing.T) {
	l := newLab(t, "cost=0.01 exit=1", "cost=0.02 touch=OUT/m2 await=OUT/go2", "touch=done.txt cost=0.03")
	id := l.start("Analysed", "test -f done.txt")
	l.waitFile(l.marker("m2"))
	l.waitUntil("iteration 1 counted", func() bool {
		st, err := l.ws.ReadState(id)
		return err == nil && st.Metrics.TotalIterations >= 1 && st.Progress.EstimatedCompletion != nil
	})
	if err := os.WriteFile(l.marker("go2"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := l.waitStatus(id, StatusCompleted)
	if st.Progress.EstimatedCompletion != nil {
		t.Errorf("completed: estimated_completion = %s, want null", *st.Progress.EstimatedCompletion)
	}
	path := l.ws.AnalyticsPath(id)
	if filepath.Dir(path) != filepath.Join(l.ws.Root, ".aiwg", "ralph", "loops", id, "analytics") {
		t.Errorf("analytics at %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Load("loop-analytics", "")
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := s.Validate(b); err != nil || len(problems) > 0 {
		t.Errorf("analytics.json does not validate: %v %v", problems, err)
	}
	var a Analytics
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	sum := a.Summary
	if a.LoopID != id || a.Status != StatusCompleted || len(a.Iterations) != 3 || sum.TotalIterations != 3 ||
		sum.FailedIterations != 1 || sum.CompletionChecks != 3 || sum.CompletionChecksPassed != 1 ||
		sum.Outcomes[OutcomeDone] != 2 || sum.Outcomes[OutcomeFailed] != 1 || sum.CostPerIterationUSD < 0.0199 || sum.CostPerIterationUSD > 0.0201 {
		t.Errorf("analytics = %+v", a)
	}
}
