package report

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Periods the report can be grouped by over time.
const (
	PeriodDay  = "day"
	PeriodWeek = "week"
)

// Statistics is the "statistics" object of the JSON report. The fields up to TaskTypes are the
// original's, with its names and meaning; the rest are additions, documented in
// docs/analyze-runs.md.
type Statistics struct {
	TotalRuns          int             `json:"total_runs"`
	Success            int             `json:"success"`
	Failed             int             `json:"failed"`
	Timeout            int             `json:"timeout"`
	Running            int             `json:"running"`
	SuccessRate        float64         `json:"success_rate"` // percent, not floored
	RetryCount         int             `json:"retry_count"`
	RetryRate          float64         `json:"retry_rate"` // percent, not floored
	AvgDurationSeconds float64         `json:"avg_duration_seconds"`
	ByAgent            []AgentStats    `json:"by_agent"`
	ByModel            []ModelStats    `json:"by_model"`
	ByTemplate         []TemplateStats `json:"by_template"`
	FailureReasons     []ReasonCount   `json:"failure_reasons"`
	TaskTypes          []TaskTypeCount `json:"task_types"`

	Durations      Percentiles    `json:"duration_percentiles"`
	SkippedRecords int            `json:"skipped_records"` // unreadable files left out
	ByDay          []PeriodStats  `json:"by_day,omitempty"`
	ByWeek         []PeriodStats  `json:"by_week,omitempty"`
	Verification   map[string]int `json:"verification,omitempty"` // beads by overall verdict
}

// AgentStats is one element of by_agent.
type AgentStats struct {
	Agent       string  `json:"agent"`
	Count       int     `json:"count"`
	Success     int     `json:"success"`
	Failed      int     `json:"failed"`
	AvgDuration float64 `json:"avg_duration"`
}

// ModelStats is one element of by_model.
type ModelStats struct {
	Model   string `json:"model"`
	Count   int    `json:"count"`
	Success int    `json:"success"`
}

// TemplateStats is one element of by_template.
type TemplateStats struct {
	Template    string  `json:"template"`
	Count       int     `json:"count"`
	Success     int     `json:"success"`
	AvgDuration float64 `json:"avg_duration"`
}

// ReasonCount is one element of failure_reasons.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// TaskTypeCount is one element of task_types.
type TaskTypeCount struct {
	TaskType string `json:"task_type"`
	Count    int    `json:"count"`
}

// PeriodStats is one day or week of by_day or by_week.
type PeriodStats struct {
	Period         string  `json:"period"` // 2026-02-11, or the ISO week 2026-W07
	Runs           int     `json:"runs"`
	Success        int     `json:"success"`
	SuccessRate    float64 `json:"success_rate"`
	MedianDuration *int64  `json:"median_duration_seconds"` // null when no run in it has a duration
}

// group accumulates one agent, model or template.
type group struct {
	count, success, failed int
	durations              int
	durationSum            float64
}

// periodAcc accumulates one day or week.
type periodAcc struct {
	runs, success int
	durations     []int32
}

// scoreAcc accumulates one template for the template scores.
type scoreAcc struct {
	uses, success int
	durations     int
	durationSum   float64
	retriesSum    float64
}

// Aggregator takes merged beads one at a time and keeps only counters, per-group sums and the
// durations (4 bytes each, for exact percentiles), so a million records need a few megabytes.
// The zero value is not ready: use NewAggregator.
type Aggregator struct {
	period string // "", PeriodDay or PeriodWeek

	total, success, failed, timeout, running, retries int
	durationSum                                       float64
	durations                                         []int32

	agents, models, templates map[string]*group
	reasons, tasks, verified  map[string]int
	periods                   map[string]*periodAcc
	scores                    map[string]*scoreAcc
	skipped                   int
}

// NewAggregator returns an empty Aggregator that also groups by period ("" for none).
func NewAggregator(period string) *Aggregator {
	return &Aggregator{
		period: period,
		agents: map[string]*group{}, models: map[string]*group{}, templates: map[string]*group{},
		reasons: map[string]int{}, tasks: map[string]int{}, verified: map[string]int{},
		periods: map[string]*periodAcc{}, scores: map[string]*scoreAcc{},
	}
}

// Skip counts a record file that could not be read.
func (a *Aggregator) Skip() { a.skipped++ }

// Add counts one bead.
func (a *Aggregator) Add(b *Bead) {
	a.total++
	outcome := b.Outcome()
	success := outcome == OutcomeSuccess
	switch outcome {
	case OutcomeSuccess:
		a.success++
	case OutcomeFailed:
		a.failed++
		// As the original: failed results only (not timeouts), and only those giving a reason.
		if b.Reason != "" {
			a.reasons[b.Reason]++
		}
	case OutcomeTimeout:
		a.timeout++
	case OutcomeRunning:
		a.running++
	}
	if b.Retried() {
		a.retries++
	}
	if b.HasSeconds {
		a.durationSum += float64(b.Seconds)
		a.durations = append(a.durations, clamp32(b.Seconds))
	}
	for _, g := range []*group{groupOf(a.agents, b.Agent), groupOf(a.models, b.Model), groupOf(a.templates, b.Template)} {
		g.count++
		if success {
			g.success++
		}
		if outcome == OutcomeFailed {
			g.failed++
		}
		if b.HasSeconds {
			g.durations++
			g.durationSum += float64(b.Seconds)
		}
	}
	a.tasks[b.Task]++
	if b.Verified != "" {
		a.verified[b.Verified]++
	}
	if key := periodKey(a.period, b); key != "" {
		p := a.periods[key]
		if p == nil {
			p = &periodAcc{}
			a.periods[key] = p
		}
		p.runs++
		if success {
			p.success++
		}
		if b.HasSeconds {
			p.durations = append(p.durations, clamp32(b.Seconds))
		}
	}
	a.score(b)
}

// score counts b for the template scores, by score-templates.sh's rules: a use is a run record,
// a success is the run's own status "done", the duration is the run's duration_seconds, the
// retries are attempt − 1. Legacy runs, which have no status or duration of their own, take them
// from their result (the original counted them as failures of no duration).
func (a *Aggregator) score(b *Bead) {
	s := a.scores[b.Template]
	if s == nil {
		s = &scoreAcc{}
		a.scores[b.Template] = s
	}
	s.uses++
	status := b.RunStatus
	if status == "" {
		status = b.Status
	}
	if status == OutcomeSuccess {
		s.success++
	}
	switch {
	case b.RunSeconds != nil:
		s.durations++
		s.durationSum += float64(*b.RunSeconds)
	case b.HasSeconds:
		s.durations++
		s.durationSum += float64(b.Seconds)
	}
	s.retriesSum += float64(max(b.Attempt-1, 0))
}

func groupOf(m map[string]*group, key string) *group {
	g := m[key]
	if g == nil {
		g = &group{}
		m[key] = g
	}
	return g
}

// clamp32 keeps a duration in an int32: 68 years is more than any run lasts.
func clamp32(s int64) int32 {
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(s)
}

// periodKey names the day (2026-02-11) or ISO week (2026-W07) of b, in UTC; "" when not
// grouping or when b has no readable time.
func periodKey(period string, b *Bead) string {
	if period == "" {
		return ""
	}
	t, ok := b.When()
	if !ok {
		return ""
	}
	if period == PeriodWeek {
		return weekKey(t.ISOWeek())
	}
	return t.Format(time.DateOnly)
}

// weekKey names an ISO week: 2026-W07.
func weekKey(year, week int) string { return fmt.Sprintf("%04d-W%02d", year, week) }

// Statistics returns what has been counted so far.
func (a *Aggregator) Statistics() Statistics {
	s := Statistics{
		TotalRuns: a.total, Success: a.success, Failed: a.failed, Timeout: a.timeout,
		Running: a.running, RetryCount: a.retries, SkippedRecords: a.skipped,
		ByAgent: []AgentStats{}, ByModel: []ModelStats{}, ByTemplate: []TemplateStats{},
		FailureReasons: []ReasonCount{}, TaskTypes: []TaskTypeCount{},
	}
	s.SuccessRate = percent(a.success, a.total)
	s.RetryRate = percent(a.retries, a.total)
	if len(a.durations) > 0 {
		s.AvgDurationSeconds = a.durationSum / float64(len(a.durations))
	}
	for _, k := range sortedKeys(a.agents) {
		g := a.agents[k]
		s.ByAgent = append(s.ByAgent, AgentStats{k, g.count, g.success, g.failed, g.avg()})
	}
	for _, k := range sortedKeys(a.models) {
		g := a.models[k]
		s.ByModel = append(s.ByModel, ModelStats{k, g.count, g.success})
	}
	for _, k := range sortedKeys(a.templates) {
		g := a.templates[k]
		s.ByTemplate = append(s.ByTemplate, TemplateStats{k, g.count, g.success, g.avg()})
	}
	for _, k := range sortedKeys(a.reasons) {
		s.FailureReasons = append(s.FailureReasons, ReasonCount{k, a.reasons[k]})
	}
	// Most frequent first; the sort is stable, so ties stay in name order, as jq's sort_by did.
	slices.SortStableFunc(s.FailureReasons, func(x, y ReasonCount) int { return y.Count - x.Count })
	for _, k := range sortedKeys(a.tasks) {
		s.TaskTypes = append(s.TaskTypes, TaskTypeCount{k, a.tasks[k]})
	}
	slices.Sort(a.durations)
	s.Durations = percentiles(a.durations)
	if len(a.verified) > 0 {
		s.Verification = a.verified
	}
	if a.period != "" {
		ps := []PeriodStats{}
		for _, k := range sortedKeys(a.periods) {
			p := a.periods[k]
			slices.Sort(p.durations)
			ps = append(ps, PeriodStats{Period: k, Runs: p.runs, Success: p.success, SuccessRate: percent(p.success, p.runs)})
			if len(p.durations) > 0 {
				m := int64(nearestRank(p.durations, 50))
				ps[len(ps)-1].MedianDuration = &m
			}
		}
		if a.period == PeriodWeek {
			s.ByWeek = ps
		} else {
			s.ByDay = ps
		}
	}
	return s
}

// SortedDurations returns every duration counted, sorted (for the HTML report's histogram).
// Valid after Statistics.
func (a *Aggregator) SortedDurations() []int32 { return a.durations }

func (g *group) avg() float64 {
	if g.durations == 0 {
		return 0
	}
	return g.durationSum / float64(g.durations)
}

// percent is n of total as the original computed it: n / total * 100, in that order, so the
// floored figures agree with jq's to the last digit (29/100*100 is 28.999…, floored 28).
func percent(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total) * 100
}

// Floor is the original's `floor` for printing a rate or an average.
func Floor(x float64) int64 { return int64(math.Floor(x)) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Recommendations applies the original's rules, in its order: overall success rate below 70%
// (at least 3 runs); retry rate above 30% (at least 3 runs); each agent with at least 2 runs
// and a success rate below 60%; the most common failure reason; else all is well. Unlike the
// original, every weak agent gets one line (it repeated every line once per weak agent, and lost
// them all when there was none).
func Recommendations(s Statistics) []string {
	var recs []string
	if s.SuccessRate < 70 && s.TotalRuns >= 3 {
		recs = append(recs, fmt.Sprintf("Overall success rate (%d%%) is below target (70%%). Review prompt templates and task decomposition.", Floor(s.SuccessRate)))
	}
	if s.RetryRate > 30 && s.TotalRuns >= 3 {
		recs = append(recs, fmt.Sprintf("High retry rate (%d%%). Consider improving initial prompt quality or agent context.", Floor(s.RetryRate)))
	}
	for _, a := range s.ByAgent {
		if rate := percent(a.Success, a.Count); a.Count >= 2 && rate < 60 {
			recs = append(recs, fmt.Sprintf("Agent %s has low success rate (%d%%). May need better prompts or different task assignment.", a.Agent, Floor(rate)))
		}
	}
	if len(s.FailureReasons) > 0 {
		r := s.FailureReasons[0]
		recs = append(recs, fmt.Sprintf("Most common failure: \"%s\" (%d occurrences)", r.Reason, r.Count))
	}
	if len(recs) == 0 {
		recs = []string{"All metrics within acceptable ranges. Continue monitoring."}
	}
	return recs
}
