package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

func TestTaskType(t *testing.T) {
	tests := []struct{ prompt, want string }{
		{"Build the widget", "build"},
		{"Fix the crash", "fix"},
		{"Update docs", "update"},
		{"Review PR", "review"},
		{"Design the API", "design"},
		{"Implement login", "implement"},
		{"Refactor the store", "other"},
		{"build lowercase", "other"}, // the original's regexes were case-sensitive
		{"Build", "other"},           // the prefix includes the space
		{"", "other"},
	}
	for _, tt := range tests {
		if got := TaskType(tt.prompt); got != tt.want {
			t.Errorf("TaskType(%q) = %q, want %q", tt.prompt, got, tt.want)
		}
	}
}

func TestPercentFloor(t *testing.T) {
	tests := []struct {
		n, total int
		want     int64
	}{
		{0, 0, 0},
		{2, 3, 66},
		{29, 100, 28}, // 29/100*100 = 28.999…: jq printed 28, so must we
		{1, 1, 100},
		{49, 60, 81},
	}
	for _, tt := range tests {
		if got := Floor(percent(tt.n, tt.total)); got != tt.want {
			t.Errorf("Floor(percent(%d, %d)) = %d, want %d", tt.n, tt.total, got, tt.want)
		}
	}
}

func TestNearestRank(t *testing.T) {
	tests := []struct {
		values []int32
		p      int
		want   int32
	}{
		{nil, 50, 0},
		{[]int32{7}, 50, 7},
		{[]int32{7}, 90, 7},
		{[]int32{1, 2}, 50, 1}, // the lower middle
		{[]int32{1, 2, 3}, 50, 2},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90, 10},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 100, 10},
	}
	for _, tt := range tests {
		if got := nearestRank(tt.values, tt.p); got != tt.want {
			t.Errorf("nearestRank(%v, %d) = %d, want %d", tt.values, tt.p, got, tt.want)
		}
	}
}

func TestRecommendations(t *testing.T) {
	ok := "All metrics within acceptable ranges. Continue monitoring."
	tests := []struct {
		name string
		s    Statistics
		want []string
	}{
		{"empty", Statistics{}, []string{ok}},
		{"healthy", Statistics{TotalRuns: 10, SuccessRate: 90, RetryRate: 10,
			ByAgent: []AgentStats{{Agent: "claude", Count: 10, Success: 9}}}, []string{ok}},
		{"too few runs to judge", Statistics{TotalRuns: 2, SuccessRate: 0, RetryRate: 100}, []string{ok}},
		{"low success, no weak agent (the original lost every line here)", Statistics{TotalRuns: 10, SuccessRate: 69.9,
			ByAgent: []AgentStats{{Agent: "claude", Count: 1, Success: 0}}},
			[]string{"Overall success rate (69%) is below target (70%). Review prompt templates and task decomposition."}},
		{"retry rate exactly 30 is fine", Statistics{TotalRuns: 10, SuccessRate: 100, RetryRate: 30}, []string{ok}},
		{"two weak agents, one line each (the original repeated every line)", Statistics{TotalRuns: 6, SuccessRate: 50, RetryRate: 50,
			ByAgent:        []AgentStats{{Agent: "claude", Count: 3, Success: 1}, {Agent: "codex", Count: 3, Success: 0}},
			FailureReasons: []ReasonCount{{`say "hi"`, 2}, {"b", 1}}},
			[]string{
				"Overall success rate (50%) is below target (70%). Review prompt templates and task decomposition.",
				"High retry rate (50%). Consider improving initial prompt quality or agent context.",
				"Agent claude has low success rate (33%). May need better prompts or different task assignment.",
				"Agent codex has low success rate (0%). May need better prompts or different task assignment.",
				`Most common failure: "say "hi"" (2 occurrences)`,
			}},
	}
	for _, tt := range tests {
		if got := Recommendations(tt.s); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Recommendations() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// bead makes a merged bead the way Source does, from a run and an optional result.
func bead(run record.Run, res *record.Result) *Bead {
	if run.Bead == "" {
		run.Bead = "bd-x"
	}
	return newBead(run.Bead, &run, res)
}

func result(status, finished, reason string) *record.Result {
	r := &record.Result{Status: status, Reason: reason}
	if finished != "" {
		r.FinishedAt = &finished
	}
	return r
}

func TestAggregator(t *testing.T) {
	tmpl := "feature"
	a := NewAggregator(PeriodDay)
	a.Add(bead(record.Run{Agent: "claude", Model: "opus", Prompt: "Build x", StartedAt: "2026-02-12T10:00:00Z", Attempt: 1, TemplateName: &tmpl},
		result("done", "2026-02-12T10:05:00Z", "status-file")))
	a.Add(bead(record.Run{Agent: "claude", Model: "opus", Prompt: "Fix y", StartedAt: "2026-02-12T11:00:00.5+01:00", Attempt: 2},
		result("failed", "2026-02-12T10:10:00.5Z", "tests-failed")))
	a.Add(bead(record.Run{Agent: "codex", Prompt: "Fix z", StartedAt: "'$START'", Attempt: 1},
		result("failed", "2026-02-13T00:00:00Z", "")))
	a.Add(bead(record.Run{Agent: "codex", Model: "gpt", StartedAt: "2026-02-13T09:00:00Z"}, nil))
	a.Skip()
	s := a.Statistics()

	want := Statistics{
		TotalRuns: 4, Success: 1, Failed: 2, Running: 1, SuccessRate: 25, RetryCount: 1, RetryRate: 25,
		AvgDurationSeconds: 450, // 300 and 600: the offset and the fractions are read
		ByAgent:            []AgentStats{{"claude", 2, 1, 1, 450}, {"codex", 2, 0, 1, 0}},
		ByModel:            []ModelStats{{"gpt", 1, 0}, {"opus", 2, 1}, {Unknown, 1, 0}},
		ByTemplate:         []TemplateStats{{DefaultTemplate, 3, 0, 600}, {"feature", 1, 1, 300}},
		// A failed result without a reason is not a failure reason, as in the original.
		FailureReasons: []ReasonCount{{"tests-failed", 1}},
		TaskTypes:      []TaskTypeCount{{"build", 1}, {"fix", 2}, {"other", 1}},
		Durations:      Percentiles{Count: 2, P50: 300, P90: 600, Max: 600},
		SkippedRecords: 1,
	}
	days := s.ByDay
	s.ByDay = nil
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Statistics() =\n%+v\nwant\n%+v", s, want)
	}
	// The placeholder run is placed by its result's end; the rest by their start.
	var got []string
	for _, d := range days {
		m := "-"
		if d.MedianDuration != nil {
			m = time.Duration(*d.MedianDuration * int64(time.Second)).String()
		}
		got = append(got, d.Period+" "+m+" "+strings.Repeat("x", d.Runs))
	}
	wantDays := []string{"2026-02-12 5m0s xx", "2026-02-13 - xx"}
	if !reflect.DeepEqual(got, wantDays) {
		t.Errorf("ByDay = %q, want %q", got, wantDays)
	}
}

func TestPeriodKey(t *testing.T) {
	b := bead(record.Run{StartedAt: "2026-01-01T10:00:00Z"}, nil)
	none := bead(record.Run{StartedAt: "'$START'"}, nil)
	tests := []struct {
		period string
		b      *Bead
		want   string
	}{
		{"", b, ""},
		{PeriodDay, b, "2026-01-01"},
		{PeriodWeek, b, "2026-W01"},
		{PeriodDay, none, ""},
	}
	for _, tt := range tests {
		if got := periodKey(tt.period, tt.b); got != tt.want {
			t.Errorf("periodKey(%q, %q) = %q, want %q", tt.period, tt.b.StartedAt, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	early := bead(record.Run{StartedAt: "2026-01-07T23:59:59Z", Agent: "claude"}, result("done", "2026-01-08T00:00:01Z", ""))
	lateStart := bead(record.Run{StartedAt: "2026-01-08T00:00:00.250Z", Agent: "codex"}, nil)
	offset := bead(record.Run{StartedAt: "2026-01-07T20:00:00-05:00", Agent: "claude"}, nil) // 01:00Z on the 8th
	placeholder := bead(record.Run{StartedAt: "'$START'", Agent: "claude"}, result("done", "2026-01-09T00:00:00Z", ""))
	old := bead(record.Run{StartedAt: "2026-01-01T00:00:00Z", Agent: "claude"}, result("done", "2026-01-01T01:00:00Z", ""))
	tests := []struct {
		since, until string
		agents       []string
		b            *Bead
		want         bool
	}{
		{"", "", nil, old, true},
		{"2026-01-08", "", nil, early, true}, // finished after
		{"2026-01-08", "", nil, lateStart, true},
		{"2026-01-08", "", nil, offset, true},
		{"2026-01-08", "", nil, placeholder, true}, // by its result
		{"2026-01-08", "", nil, old, false},
		{"2026-01-08T00:00:00.5Z", "", nil, lateStart, false},
		{"", "2026-01-07", nil, early, true}, // the whole day
		{"", "2026-01-07", nil, lateStart, false},
		{"", "2026-01-07T23:59:59Z", nil, early, true}, // an exact time is kept
		{"", "2026-01-07T23:59:58Z", nil, early, false},
		{"", "2026-01-08", nil, placeholder, false}, // placed by its end, the 9th
		{"", "", []string{"codex"}, early, false},
		{"", "", []string{"claude", "codex"}, lateStart, true},
	}
	for _, tt := range tests {
		f, err := NewFilter(tt.since, tt.until, tt.agents, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(tt.b); got != tt.want {
			t.Errorf("Filter{since %q, until %q, agents %q}.Match(started %q) = %v, want %v", tt.since, tt.until, tt.agents, tt.b.StartedAt, got, tt.want)
		}
	}
}

func TestNewFilterErrors(t *testing.T) {
	tests := []struct{ since, until, want string }{
		{"yesterday", "", `--since: "yesterday" is not a date`},
		{"", "2026-13-01", `--until: "2026-13-01" is not a date`},
		{"2026-02-02", "2026-02-01", "--since 2026-02-02 is not before --until 2026-02-01"},
	}
	for _, tt := range tests {
		_, err := NewFilter(tt.since, tt.until, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewFilter(%q, %q) = %v, want an error containing %q", tt.since, tt.until, err, tt.want)
		}
	}
}

func TestTemplateScores(t *testing.T) {
	feature, docs := "feature", "docs"
	sec := func(n int64) *int64 { return &n }
	a := NewAggregator("")
	// feature: 3 uses, 1 done by its run status; durations 100 and 200; retries 0, 1, 2.
	a.Add(bead(record.Run{TemplateName: &feature, Status: "done", DurationSeconds: sec(100), Attempt: 1}, nil))
	a.Add(bead(record.Run{TemplateName: &feature, Status: "failed", DurationSeconds: sec(200), Attempt: 2}, nil))
	a.Add(bead(record.Run{TemplateName: &feature, Status: "running", Attempt: 3}, nil))
	// docs: 3 uses, all done; a legacy run takes status and duration from its result.
	for range 2 {
		a.Add(bead(record.Run{TemplateName: &docs, Status: "done", DurationSeconds: sec(60), Attempt: 1}, nil))
	}
	a.Add(bead(record.Run{TemplateName: &docs, StartedAt: "2026-01-01T00:00:00Z", Attempt: 1}, result("done", "2026-01-01T00:02:00Z", "")))
	// custom: 1 use.
	a.Add(bead(record.Run{Status: "failed"}, nil))

	ts := a.TemplateScores(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	want := []TemplateScore{
		{"docs", 3, 1, 80, 0},
		{"feature", 3, 1.0 / 3, 150, 1},
		{DefaultTemplate, 1, 0, 0, 0},
	}
	if !reflect.DeepEqual(ts.Templates, want) {
		t.Errorf("TemplateScores().Templates = %+v, want %+v", ts.Templates, want)
	}
	if w := "Avoid 'feature' template (33% success). Prefer templates with >70% success rate."; ts.Recommendation != w {
		t.Errorf("TemplateScores().Recommendation = %q, want %q", ts.Recommendation, w)
	}
	doc, _ := ts.MarshalJSON()
	wantDoc := `{"generated_at":"2026-02-01T00:00:00Z","templates":{"docs":{"uses":3,"success_rate":1,"avg_duration_s":80,"avg_retries":0},` +
		`"feature":{"uses":3,"success_rate":0.3333333333333333,"avg_duration_s":150,"avg_retries":1},` +
		`"custom":{"uses":1,"success_rate":0,"avg_duration_s":0,"avg_retries":0}},` +
		`"recommendation":"Avoid 'feature' template (33% success). Prefer templates with >70% success rate."}`
	if string(doc) != wantDoc {
		t.Errorf("MarshalJSON() =\n%s\nwant\n%s", doc, wantDoc)
	}
}

func TestTemplateRecommendation(t *testing.T) {
	tests := []struct {
		templates []TemplateScore
		want      string
	}{
		{nil, "Insufficient data (need at least 2 uses per template)."},
		{[]TemplateScore{{Template: "a", Uses: 1, SuccessRate: 0}}, "Insufficient data (need at least 2 uses per template)."},
		{[]TemplateScore{{Template: "a", Uses: 2, SuccessRate: 0.5}}, "All templates performing adequately. Continue monitoring for patterns."},
		// Equal rates: the more used one, which comes first, is named.
		{[]TemplateScore{{Template: "b", Uses: 4, SuccessRate: 0.25}, {Template: "a", Uses: 2, SuccessRate: 0.25}},
			"Avoid 'b' template (25% success). Prefer templates with >70% success rate."},
	}
	for _, tt := range tests {
		if got := templateRecommendation(tt.templates); got != tt.want {
			t.Errorf("templateRecommendation(%+v) = %q, want %q", tt.templates, got, tt.want)
		}
	}
}

// TestParsePeriod: analyze-runs.sh compared --since with started_at as strings, so users passed
// prefixes ("2026-02", "2026-02-10 12:00") and compact dates ("20260210"); each names a period,
// read from its start (--since) to its end (--until).
func TestParsePeriod(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	tests := []struct{ in, start, end string }{
		{"2026", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"202602", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"2026-02-10", "2026-02-10T00:00:00Z", "2026-02-11T00:00:00Z"},
		{"20260210", "2026-02-10T00:00:00Z", "2026-02-11T00:00:00Z"},
		{"2026-02-10T12", "2026-02-10T12:00:00Z", "2026-02-10T13:00:00Z"},
		{"2026-02-10 12:00", "2026-02-10T12:00:00Z", "2026-02-10T12:01:00Z"},
		{"2026-02-10T12:00", "2026-02-10T12:00:00Z", "2026-02-10T12:01:00Z"},
		{"2026-02-10T12:00+02:00", "2026-02-10T10:00:00Z", "2026-02-10T10:01:00Z"},
		{"2026-02-10 12:00:30", "2026-02-10T12:00:30Z", "2026-02-10T12:00:30.000000001Z"},
		{"2026-02-10T12:00:30.5Z", "2026-02-10T12:00:30.5Z", "2026-02-10T12:00:30.500000001Z"},
		{"20260210T120030Z", "2026-02-10T12:00:30Z", "2026-02-10T12:00:31Z"},
	}
	for _, tt := range tests {
		start, end, err := ParsePeriod(tt.in)
		if err != nil || !start.Equal(at(tt.start)) || !end.Equal(at(tt.end)) {
			t.Errorf("ParsePeriod(%q) = %v, %v, %v; want %s, %s", tt.in, start, end, err, tt.start, tt.end)
		}
	}
	for _, bad := range []string{"", "last-week", "2026-13", "2026-02-30", "26-02-10", "2026/02/10"} {
		if _, _, err := ParsePeriod(bad); err == nil {
			t.Errorf("ParsePeriod(%q) = nil error, want one", bad)
		}
	}
}
