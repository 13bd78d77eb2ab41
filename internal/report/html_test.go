package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// oneRun is a report over one run of 3 seconds that succeeded, the example.
func oneRun(t *testing.T) *Report {
	t.Helper()
	a := NewAggregator(PeriodDay)
	start := time.Date(2026, 2, 12, 10, 0, 0, 0, time.UTC)
	a.Add(bead(record.Run{Bead: "bd-1", Agent: "claude", Model: "opus", Prompt: "Build it",
		StartedAt: record.FormatTime(start), Attempt: 1}, result("done", record.FormatTime(start.Add(3*time.Second)), "")))
	return NewReport(a, Filter{}, time.Unix(0, 0))
}

func html(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, b.Bytes())
	return b.String()
}

// Issue 20: the page said "1 runs".
func TestWriteHTMLCountsInTheSingular(t *testing.T) {
	page := html(t, oneRun(t))
	if m := regexp.MustCompile(`\b1 runs\b`).FindString(page); m != "" {
		t.Errorf("WriteHTML(one run) says %q", m)
	}
	if !strings.Contains(page, "1 run, 1 succeeded") {
		t.Errorf("WriteHTML(one run) lacks %q", "1 run, 1 succeeded")
	}
}

// Issue 20: with no run, the page showed a 0% success rate and "All metrics within acceptable
// ranges", neither of which is true of nothing.
func TestWriteHTMLWithNoRunsClaimsNothing(t *testing.T) {
	page := html(t, NewReport(NewAggregator(PeriodDay), Filter{}, time.Unix(0, 0)))
	for _, lie := range []string{`<div class="v">0%</div>`, "acceptable ranges", `<div class="v">0s</div>`} {
		if strings.Contains(page, lie) {
			t.Errorf("WriteHTML(no runs) shows %q", lie)
		}
	}
	if !strings.Contains(page, "No runs to judge yet.") {
		t.Errorf("WriteHTML(no runs) lacks %q", "No runs to judge yet.")
	}
}

// Issue 20: the duration axis ran to 24 s when the longest run took 3 s: it ends at the end of
// the bin that holds the longest run, and no bin lies wholly beyond it.
func TestHistogramEndsAtTheLongestRun(t *testing.T) {
	for _, tc := range []struct {
		durations []int32
		bins      int
		end       string
	}{
		{[]int32{3}, 4, "4s"},
		{[]int32{0}, 1, "1s"},
		{[]int32{1, 2, 23}, 24, "24s"},
		{[]int32{10, 100}, 21, "1m45s"},
		{[]int32{60, 3600}, 13, "1h05m"}, // bins of 5 minutes
	} {
		c := histogram(tc.durations)
		if len(c.Rects) != tc.bins {
			t.Errorf("histogram(%v) has %d bins, want %d", tc.durations, len(c.Rects), tc.bins)
		}
		if last := c.Labels[len(c.Labels)-1].Text; last != tc.end {
			t.Errorf("histogram(%v) axis ends at %q, want %q", tc.durations, last, tc.end)
		}
	}
}

// Issue 20: the bars of the number of runs under the success-rate line had no scale (only the
// line's 0–100%): they get their own axis on the right.
func TestTrendChartScalesItsRuns(t *testing.T) {
	c := trendChart([]PeriodStats{{Period: "2026-02-11", Runs: 7, Success: 3}, {Period: "2026-02-12", Runs: 10, Success: 10}})
	var right []string
	for _, l := range c.Labels {
		if l.X > chartW-padR {
			right = append(right, l.Text)
		}
	}
	if strings.Join(right, ",") != "0,10,runs" {
		t.Errorf("trendChart() right axis = %q, want 0, 10 and its name", right)
	}
}
