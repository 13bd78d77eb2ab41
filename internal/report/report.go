package report

import "time"

// Report is what the renderers print: the statistics of one analysis and how it was asked for.
type Report struct {
	GeneratedAt     time.Time
	Filter          Filter
	Period          string // "", PeriodDay or PeriodWeek: print the grouping over time
	Detailed        bool   // text: print the duration percentiles
	Stats           Statistics
	Recommendations []string
	// Durations are every duration counted, sorted (the HTML report draws their distribution).
	Durations []int32
	// Raw holds the raw_data elements for the JSON report (nil: an empty raw_data).
	Raw *Spool
}

// NewReport finishes an aggregation into a report.
func NewReport(a *Aggregator, f Filter, now time.Time) *Report {
	st := a.Statistics()
	return &Report{
		GeneratedAt: now.UTC(), Filter: f, Period: a.period, Stats: st,
		Recommendations: Recommendations(st), Durations: a.SortedDurations(),
	}
}

// periods returns the grouping over time that was asked for.
func (r *Report) periods() []PeriodStats {
	if r.Period == PeriodWeek {
		return r.Stats.ByWeek
	}
	return r.Stats.ByDay
}

// rule is the original's heavy horizontal line.
const rule = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━"
