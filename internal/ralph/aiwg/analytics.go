package aiwg

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Analytics is a loop's analytics/analytics.json (seed 003's file layout: loops/<id>/analytics/
// analytics.json), derived from its state each time the state is saved: every iteration run,
// and a summary. Its schema is the embedded loop-analytics schema, which every write is
// validated against.
type Analytics struct {
	Version    string           `json:"version"`
	LoopID     string           `json:"loop_id"`
	Status     string           `json:"status"`
	UpdatedAt  string           `json:"updated_at"`
	Iterations []Iteration      `json:"iterations"`
	Summary    AnalyticsSummary `json:"summary"`
}

// AnalyticsSummary sums a loop's iterations: the seed's metrics, the iterations run again
// (usage limit, interrupted, rolled back), the completion checks, the cost per counted
// iteration and the estimated completion.
type AnalyticsSummary struct {
	Metrics
	RedoneIterations       int     `json:"redone_iterations"`
	CompletionChecks       int     `json:"completion_checks"`
	CompletionChecksPassed int     `json:"completion_checks_passed"`
	CostPerIterationUSD    float64 `json:"cost_per_iteration_usd"`
	EstimatedCompletion    *string `json:"estimated_completion"`
	ExitReason             string  `json:"exit_reason,omitempty"`
	// Outcomes counts the iterations by outcome.
	Outcomes map[string]int `json:"outcomes"`
}

// AnalyticsVersion is the analytics document's version.
const AnalyticsVersion = "1.0.0"

// AnalyticsPath is loop id's analytics/analytics.json.
func (w Workspace) AnalyticsPath(id string) string {
	return filepath.Join(w.LoopDir(id), "analytics", "analytics.json")
}

// AnalyticsOf derives st's analytics at now.
func AnalyticsOf(st *State, now time.Time) *Analytics {
	a := &Analytics{Version: AnalyticsVersion, LoopID: st.LoopID, Status: st.Status, UpdatedAt: stamp(now),
		Iterations: st.Iterations, Summary: AnalyticsSummary{Metrics: st.Metrics, Outcomes: map[string]int{},
			EstimatedCompletion: st.Progress.EstimatedCompletion, ExitReason: st.ExitReason}}
	if a.Iterations == nil {
		a.Iterations = []Iteration{}
	}
	for _, it := range st.Iterations {
		a.Summary.Outcomes[it.Outcome]++
		if it.Outcome != OutcomeDone && it.Outcome != OutcomeFailed {
			a.Summary.RedoneIterations++
		}
	}
	for _, c := range st.Progress.CompletionChecks {
		a.Summary.CompletionChecks++
		if c.Passed {
			a.Summary.CompletionChecksPassed++
		}
	}
	if n := st.Metrics.TotalIterations; n > 0 {
		a.Summary.CostPerIterationUSD = st.Metrics.TotalCostUSD / float64(n)
	}
	return a
}

var (
	analyticsSchemaOnce sync.Once
	analyticsSchema     *schema.Schema
	analyticsSchemaErr  error
)

// EncodeAnalytics is a's document, validated against the loop-analytics schema.
func EncodeAnalytics(a *Analytics) ([]byte, error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	analyticsSchemaOnce.Do(func() { analyticsSchema, analyticsSchemaErr = schema.Load("loop-analytics", "") })
	if analyticsSchemaErr != nil {
		return nil, analyticsSchemaErr
	}
	problems, err := analyticsSchema.Validate(b)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("loop %s: the analytics would not validate (%s); nothing written", a.LoopID, problems[0])
	}
	return b, nil
}

// writeAnalytics writes st's analytics (validated) atomically, never through a link; the
// caller holds the workspace's lock.
func (w Workspace) writeAnalytics(st *State) error {
	b, err := EncodeAnalytics(AnalyticsOf(st, time.Now()))
	if err != nil {
		return err
	}
	path := w.AnalyticsPath(st.LoopID)
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, b, 0o600)
}
