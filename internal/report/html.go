package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

// WriteHTML writes the report as one self-contained HTML page: inline CSS and SVG charts
// (success rate over time, the distribution of durations, runs and successes by agent, model
// and template), no script, no font, image or style sheet from anywhere, so it opens offline in
// any browser and can be mailed as it is. The markup is also well-formed XML.
func WriteHTML(w io.Writer, r *Report) error {
	s := &r.Stats
	p := htmlPage{
		Generated:       r.GeneratedAt.Format("2006-01-02 15:04:05 UTC"),
		Filters:         filterLines(r.Filter),
		Cards:           cards(s),
		Reasons:         printableReasons(s.FailureReasons),
		Recommendations: printableAll(r.Recommendations),
		NoRuns:          s.TotalRuns == 0,
		Skipped:         s.SkippedRecords,
	}
	periods, unit := r.periods(), r.Period
	if unit == PeriodDay && len(periods) > maxDays {
		periods, unit = weekly(periods), PeriodWeek
	}
	p.TrendTitle = "Success rate by " + unit
	p.Trend = trendChart(periods)
	p.Histogram = histogram(r.Durations)
	p.Groups = []barChart{
		groupChart("Agents", agentRows(s.ByAgent)),
		groupChart("Models", modelRows(s.ByModel)),
		groupChart("Templates", templateRows(s.ByTemplate)),
	}
	return pageTemplate.Execute(w, p)
}

// cards are the summary's figures. A rate of no runs is no figure: where the text report keeps
// the original's "0 (0%)" for them, the page shows a dash.
func cards(s *Statistics) []card {
	rate := func(x float64) string {
		if s.TotalRuns == 0 {
			return "–"
		}
		return fmt.Sprintf("%d%%", Floor(x))
	}
	median, spread := "–", "no run with a duration"
	if s.Durations.Count > 0 {
		median, spread = human(s.Durations.P50), "p90 "+human(s.Durations.P90)+", max "+human(s.Durations.Max)
	}
	return []card{
		{"Runs", fmt.Sprint(s.TotalRuns), fmt.Sprintf("%d running", s.Running)},
		{"Success rate", rate(s.SuccessRate), fmt.Sprintf("%d of %d", s.Success, s.TotalRuns)},
		{"Failed", fmt.Sprint(s.Failed), fmt.Sprintf("and %d timed out", s.Timeout)},
		{"Retries", rate(s.RetryRate), plural(s.RetryCount, "retried run")},
		{"Median duration", median, spread},
	}
}

// plural counts n things: "1 run", "2 runs", "0 runs".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// printableReasons and printableAll make the text of records printable for the page: the
// template escapes markup, but a control character would still reach the page (and make it
// XML that does not parse).
func printableReasons(in []ReasonCount) []ReasonCount {
	out := make([]ReasonCount, len(in))
	for i, r := range in {
		out[i] = r
		out[i].Reason = printable(r.Reason)
	}
	return out
}

func printableAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = printable(s)
	}
	return out
}

// maxDays is the most days drawn one by one; beyond it the chart goes by week.
const maxDays = 120

type htmlPage struct {
	Generated       string
	Filters         []string
	Cards           []card
	TrendTitle      string
	Trend           *chart
	Histogram       *chart
	Groups          []barChart
	Reasons         []ReasonCount
	Recommendations []string
	NoRuns          bool // the recommendations judge nothing
	Skipped         int
}

type card struct{ Label, Value, Sub string }

// chart is one SVG drawing, its coordinates computed here so the template only places them.
type chart struct {
	W, H   int
	Rects  []rect
	Line   string // polyline points
	Dots   []dot
	Labels []label
	Grid   []line
}

type rect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type dot struct {
	X, Y  float64
	Title string
}

type label struct {
	X, Y   float64
	Text   string
	Anchor string
}

type line struct{ X1, Y1, X2, Y2 float64 }

type barChart struct {
	Title string
	Chart *chart
	More  int
}

const (
	chartW               = 720
	padL, padR           = 44.0, 40.0 // the right one holds the runs scale of the trend chart
	padT, padB           = 12.0, 34.0
	trendH, histH        = 240, 200
	barRow, barLabelW    = 24.0, 170.0
	maxBarRows           = 25
	histBins             = 24
	plotW                = chartW - padL - padR
	volumeShare          = 0.35 // of the plot's height, for the runs bars under the rate line
	classRuns, classGood = "runs", "good"
)

// trendChart draws the success rate per period as a line over bars of the number of runs.
func trendChart(periods []PeriodStats) *chart {
	if len(periods) == 0 {
		return nil
	}
	c := &chart{W: chartW, H: trendH}
	plotH := float64(trendH) - padT - padB
	for _, pct := range []float64{0, 25, 50, 75, 100} {
		y := padT + plotH*(1-pct/100)
		c.Grid = append(c.Grid, line{padL, y, chartW - padR, y})
		c.Labels = append(c.Labels, label{padL - 6, y + 4, fmt.Sprintf("%.0f%%", pct), "end"})
	}
	maxRuns := 1
	for _, p := range periods {
		maxRuns = max(maxRuns, p.Runs)
	}
	step := plotW / float64(len(periods))
	var pts []string
	for i, p := range periods {
		x := padL + (float64(i)+0.5)*step
		h := plotH * volumeShare * float64(p.Runs) / float64(maxRuns)
		title := fmt.Sprintf("%s: %s, %d succeeded (%d%%)", p.Period, plural(p.Runs, "run"), p.Success, Floor(p.SuccessRate))
		c.Rects = append(c.Rects, rect{x - step*0.35, padT + plotH - h, step * 0.7, h, classRuns, title})
		y := padT + plotH*(1-p.SuccessRate/100)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		c.Dots = append(c.Dots, dot{x, y, title})
	}
	c.Line = strings.Join(pts, " ")
	// The bars have their own scale, on the right: the left one is the line's.
	top := padT + plotH*(1-volumeShare)
	c.Grid = append(c.Grid, line{chartW - padR, top, chartW - padR, padT + plotH})
	c.Labels = append(c.Labels, label{chartW - padR + 6, padT + plotH, "0", "start"},
		label{chartW - padR + 6, top + 4, fmt.Sprint(maxRuns), "start"},
		label{chartW - padR + 6, top - 10, "runs", "start"})
	for _, i := range spread(len(periods), 6) {
		x := padL + (float64(i)+0.5)*step
		c.Labels = append(c.Labels, label{x, float64(trendH) - 12, periods[i].Period, "middle"})
	}
	return c
}

// histogram draws how many runs took how long, in at most histBins equal bins of a round
// width, from 0 to the end of the bin that holds the longest run.
func histogram(sorted []int32) *chart {
	if len(sorted) == 0 {
		return nil
	}
	longest := int64(sorted[len(sorted)-1])
	width := roundWidth((longest + histBins) / histBins) // the least width that fits histBins
	bins := int(longest/width) + 1
	counts := make([]int, bins)
	for _, d := range sorted {
		counts[int64(d)/width]++
	}
	top := 1
	for _, n := range counts {
		top = max(top, n)
	}
	c := &chart{W: chartW, H: histH}
	plotH := float64(histH) - padT - padB
	step := plotW / float64(bins)
	for i, n := range counts {
		h := plotH * float64(n) / float64(top)
		lo, hi := int64(i)*width, int64(i+1)*width
		span := exact(lo) // durations are whole seconds: a bin holds lo to hi-1
		if width > 1 {
			span += " to " + exact(hi-1)
		}
		c.Rects = append(c.Rects, rect{padL + float64(i)*step + 1, padT + plotH - h, max(step-2, 1), h, classGood,
			fmt.Sprintf("%s: %s", span, plural(n, "run"))})
	}
	c.Grid = append(c.Grid, line{padL, padT + plotH, chartW - padR, padT + plotH})
	c.Labels = append(c.Labels, label{padL - 6, padT + 4, fmt.Sprint(top), "end"}, label{padL - 6, padT + plotH, "0", "end"})
	// The axis ends are anchored inward so that their labels stay inside the chart.
	ticks := []struct {
		bin    int
		anchor string
	}{{0, "start"}, {bins / 2, "middle"}, {bins, "end"}}
	if bins < 2 {
		ticks = []struct {
			bin    int
			anchor string
		}{{0, "start"}, {bins, "end"}}
	}
	for _, tick := range ticks {
		c.Labels = append(c.Labels, label{padL + float64(tick.bin)*step, float64(histH) - 12, exact(int64(tick.bin) * width), tick.anchor})
	}
	return c
}

// roundWidth is the least round bin width (1, 2, 5, 10, 15 or 30 seconds, minutes or hours,
// then whole days) of at least min seconds, so that the axis' ticks fall on round times.
func roundWidth(min int64) int64 {
	for _, unit := range []int64{1, 60, 3600} {
		for _, n := range []int64{1, 2, 5, 10, 15, 30} {
			if n*unit >= min {
				return n * unit
			}
		}
	}
	return (min + 86399) / 86400 * 86400
}

// exact prints seconds to the second: 45s, 1m45s, 12m, 1h05m, 2h.
func exact(s int64) string {
	h, m, sec := s/3600, s%3600/60, s%60
	switch {
	case h == 0 && m == 0:
		return fmt.Sprintf("%ds", sec)
	case h == 0 && sec == 0:
		return fmt.Sprintf("%dm", m)
	case h == 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	case m == 0 && sec == 0:
		return fmt.Sprintf("%dh", h)
	case sec == 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
}

// barRowData is one row of a by-agent, by-model or by-template chart.
type barRowData struct {
	name           string
	runs, success  int
	avgDurationSec float64
}

func agentRows(in []AgentStats) []barRowData {
	rows := make([]barRowData, len(in))
	for i, a := range in {
		rows[i] = barRowData{printable(a.Agent), a.Count, a.Success, a.AvgDuration}
	}
	return rows
}

func modelRows(in []ModelStats) []barRowData {
	rows := make([]barRowData, len(in))
	for i, m := range in {
		rows[i] = barRowData{printable(m.Model), m.Count, m.Success, -1}
	}
	return rows
}

func templateRows(in []TemplateStats) []barRowData {
	rows := make([]barRowData, len(in))
	for i, t := range in {
		rows[i] = barRowData{printable(t.Template), t.Count, t.Success, t.AvgDuration}
	}
	return rows
}

// groupChart draws one bar per group: its runs, and over them its successes.
func groupChart(title string, rows []barRowData) barChart {
	bc := barChart{Title: title}
	if len(rows) == 0 {
		return bc
	}
	if len(rows) > maxBarRows {
		bc.More = len(rows) - maxBarRows
		rows = rows[:maxBarRows]
	}
	top := 1
	for _, r := range rows {
		top = max(top, r.runs)
	}
	const barW = chartW - barLabelW - 150
	c := &chart{W: chartW, H: int(barRow*float64(len(rows))) + 8}
	for i, r := range rows {
		y := 4 + float64(i)*barRow
		title := fmt.Sprintf("%s: %s, %d succeeded (%d%%)", r.name, plural(r.runs, "run"), r.success, Floor(percent(r.success, r.runs)))
		if r.avgDurationSec >= 0 {
			title += ", average " + human(Floor(r.avgDurationSec))
		}
		c.Labels = append(c.Labels, label{barLabelW - 8, y + 15, clip(r.name, 24), "end"})
		c.Rects = append(c.Rects,
			rect{barLabelW, y + 3, barW * float64(r.runs) / float64(top), barRow - 6, classRuns, title},
			rect{barLabelW, y + 3, barW * float64(r.success) / float64(top), barRow - 6, classGood, title})
		c.Labels = append(c.Labels, label{barLabelW + barW + 8, y + 15,
			fmt.Sprintf("%d / %d (%d%%)", r.success, r.runs, Floor(percent(r.success, r.runs))), "start"})
	}
	bc.Chart = c
	return bc
}

// weekly folds days into ISO weeks (their medians cannot be folded and are left out).
func weekly(days []PeriodStats) []PeriodStats {
	var weeks []PeriodStats
	for _, d := range days {
		t, err := time.Parse(time.DateOnly, d.Period)
		if err != nil {
			continue
		}
		y, wk := t.ISOWeek()
		key := fmt.Sprintf("%04d-W%02d", y, wk)
		if n := len(weeks); n > 0 && weeks[n-1].Period == key {
			weeks[n-1].Runs += d.Runs
			weeks[n-1].Success += d.Success
		} else {
			weeks = append(weeks, PeriodStats{Period: key, Runs: d.Runs, Success: d.Success})
		}
	}
	for i := range weeks {
		weeks[i].SuccessRate = percent(weeks[i].Success, weeks[i].Runs)
	}
	return weeks
}

// spread picks at most k indexes of n spread evenly, the first and the last among them.
func spread(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for i := range out {
		out[i] = int(math.Round(float64(i) * float64(n-1) / float64(k-1)))
	}
	return out
}

// human prints seconds as 45s, 12m, 1h30m.
func human(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s%3600/60 == 0:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"f": func(x float64) string { return fmt.Sprintf("%.1f", x) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>Flywheel analysis report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 2em auto; max-width: 760px; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #666; margin-top: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card .v { font-size: 1.6em; font-weight: 600; }
.card .s, .empty, .note { color: #666; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font-size: 11px; fill: #444; }
.runs { fill: #dfe3e8; }
.good { fill: #2e7d32; }
.grid { stroke: #eee; }
.line { fill: none; stroke: #1565c0; stroke-width: 2; }
.dot { fill: #1565c0; }
table { border-collapse: collapse; }
td, th { text-align: left; padding: 2px 12px 2px 0; }
td.n { text-align: right; }
</style>
</head>
<body>
<h1>Flywheel analysis report</h1>
<p class="meta">Generated {{.Generated}}{{range .Filters}} · {{.}}{{end}}</p>
<div class="cards">{{range .Cards}}
<div class="card"><div class="l">{{.Label}}</div><div class="v">{{.Value}}</div><div class="s">{{.Sub}}</div></div>{{end}}
</div>
{{if .Skipped}}<p class="note">{{.Skipped}} unreadable record file(s) were left out.</p>
{{end}}
<h2>{{.TrendTitle}}</h2>
{{if .Trend}}<p class="note">The line is the success rate (left scale); the bars under it are the number of runs (right scale).</p>
{{end}}{{with .Trend}}{{template "chart" .}}{{else}}<p class="empty">No runs with a readable time.</p>{{end}}
<h2>Duration distribution</h2>
{{with .Histogram}}{{template "chart" .}}{{else}}<p class="empty">No run with a duration.</p>{{end}}
{{range .Groups}}
<h2>{{.Title}}: runs and successes</h2>
{{with .Chart}}{{template "chart" .}}{{else}}<p class="empty">No runs.</p>{{end}}
{{if .More}}<p class="note">and {{.More}} more</p>{{end}}
{{end}}
{{if .Reasons}}<h2>Failure reasons</h2>
<table>{{range .Reasons}}
<tr><td class="n">{{.Count}}×</td><td>{{.Reason}}</td></tr>{{end}}
</table>
{{end}}
<h2>Recommendations</h2>
{{if .NoRuns}}<p class="empty">No runs to judge yet.</p>
{{else}}<ul>{{range .Recommendations}}
<li>{{.}}</li>{{end}}
</ul>
{{end}}
</body>
</html>
{{define "chart"}}<svg viewBox="0 0 {{.W}} {{.H}}" width="{{.W}}" height="{{.H}}" role="img">
{{range .Grid}}<line class="grid" x1="{{f .X1}}" y1="{{f .Y1}}" x2="{{f .X2}}" y2="{{f .Y2}}"/>
{{end}}{{range .Rects}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Title}}</title></rect>
{{end}}{{if .Line}}<polyline class="line" points="{{.Line}}"/>
{{end}}{{range .Dots}}<circle class="dot" cx="{{f .X}}" cy="{{f .Y}}" r="3"><title>{{.Title}}</title></circle>
{{end}}{{range .Labels}}<text x="{{f .X}}" y="{{f .Y}}" text-anchor="{{.Anchor}}">{{.Text}}</text>
{{end}}</svg>{{end}}
`))
