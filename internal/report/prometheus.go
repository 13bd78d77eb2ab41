package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// MetricPrefix starts every metric name of the Prometheus report.
const MetricPrefix = "fleet_"

// WritePrometheus writes the report in the Prometheus text exposition format (version 0.0.4),
// for node_exporter's textfile collector. Every metric is a gauge over the records the report
// counted (after the filters), so a window such as --since stays meaningful; the names are
// listed in docs/analyze-runs.md. Ratios are fractions (0 to 1), durations seconds.
func WritePrometheus(w io.Writer, r *Report) error {
	var b bytes.Buffer
	s := &r.Stats
	m := promWriter{&b}

	m.gauge("runs", "Runs counted by the report.", float64(s.TotalRuns))
	m.family("runs_by_status", "gauge", "Runs counted by the report, by outcome (done, failed, timeout, running).")
	m.sample("runs_by_status", labels("status", "done"), float64(s.Success))
	m.sample("runs_by_status", labels("status", "failed"), float64(s.Failed))
	m.sample("runs_by_status", labels("status", "timeout"), float64(s.Timeout))
	m.sample("runs_by_status", labels("status", "running"), float64(s.Running))
	m.gauge("success_ratio", "Share of runs that succeeded (0 to 1).", ratio(s.Success, s.TotalRuns))
	m.gauge("retries", "Runs that were a retry (attempt > 1).", float64(s.RetryCount))
	m.gauge("retry_ratio", "Share of runs that were a retry (0 to 1).", ratio(s.RetryCount, s.TotalRuns))
	m.gauge("skipped_records", "Record files that could not be read and were left out.", float64(s.SkippedRecords))
	m.gauge("report_timestamp_seconds", "When the report was generated (Unix time).", float64(r.GeneratedAt.Unix()))

	m.family("run_duration_seconds", "summary", "Run durations (result finished_at minus run started_at), exact quantiles.")
	m.sample("run_duration_seconds", labels("quantile", "0.5"), float64(s.Durations.P50))
	m.sample("run_duration_seconds", labels("quantile", "0.9"), float64(s.Durations.P90))
	m.sample("run_duration_seconds_sum", "", s.AvgDurationSeconds*float64(s.Durations.Count))
	m.sample("run_duration_seconds_count", "", float64(s.Durations.Count))
	m.gauge("run_duration_max_seconds", "The longest run duration.", float64(s.Durations.Max))

	m.family("agent_runs", "gauge", "Runs by agent.")
	for _, a := range s.ByAgent {
		m.sample("agent_runs", labels("agent", a.Agent), float64(a.Count))
	}
	m.family("agent_successes", "gauge", "Successful runs by agent.")
	for _, a := range s.ByAgent {
		m.sample("agent_successes", labels("agent", a.Agent), float64(a.Success))
	}
	m.family("agent_failures", "gauge", "Failed runs (not timeouts) by agent.")
	for _, a := range s.ByAgent {
		m.sample("agent_failures", labels("agent", a.Agent), float64(a.Failed))
	}
	m.family("agent_duration_avg_seconds", "gauge", "Average run duration by agent.")
	for _, a := range s.ByAgent {
		m.sample("agent_duration_avg_seconds", labels("agent", a.Agent), a.AvgDuration)
	}
	m.family("model_runs", "gauge", "Runs by model.")
	for _, x := range s.ByModel {
		m.sample("model_runs", labels("model", x.Model), float64(x.Count))
	}
	m.family("model_successes", "gauge", "Successful runs by model.")
	for _, x := range s.ByModel {
		m.sample("model_successes", labels("model", x.Model), float64(x.Success))
	}
	m.family("template_runs", "gauge", "Runs by prompt template (custom: none named).")
	for _, t := range s.ByTemplate {
		m.sample("template_runs", labels("template", t.Template), float64(t.Count))
	}
	m.family("template_successes", "gauge", "Successful runs by prompt template.")
	for _, t := range s.ByTemplate {
		m.sample("template_successes", labels("template", t.Template), float64(t.Success))
	}
	m.family("template_duration_avg_seconds", "gauge", "Average run duration by prompt template.")
	for _, t := range s.ByTemplate {
		m.sample("template_duration_avg_seconds", labels("template", t.Template), t.AvgDuration)
	}
	m.family("task_type_runs", "gauge", "Runs by task type (the prompt's first word).")
	for _, t := range s.TaskTypes {
		m.sample("task_type_runs", labels("task_type", t.TaskType), float64(t.Count))
	}
	m.family("failure_reasons", "gauge", "Failed runs by the reason their result gives.")
	for _, f := range s.FailureReasons {
		m.sample("failure_reasons", labels("reason", f.Reason), float64(f.Count))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// promWriter writes metric families; names get MetricPrefix.
type promWriter struct{ b *bytes.Buffer }

func (p promWriter) family(name, typ, help string) {
	fmt.Fprintf(p.b, "# HELP %s%s %s\n# TYPE %s%s %s\n", MetricPrefix, name, escapeHelp(help), MetricPrefix, name, typ)
}

func (p promWriter) sample(name, labels string, v float64) {
	fmt.Fprintf(p.b, "%s%s%s %s\n", MetricPrefix, name, labels, number(v))
}

func (p promWriter) gauge(name, help string, v float64) {
	p.family(name, "gauge", help)
	p.sample(name, "", v)
}

// labels renders one label pair, its value escaped as the exposition format requires.
func labels(name, value string) string {
	return "{" + name + `="` + escapeLabel(value) + `"}`
}

var escapeLabel = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace
var escapeHelp = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace

// ratio is n of total as a fraction (0 for no total), computed directly rather than from the
// percentage, so that 1 of 3 prints as 0.3333333333333333.
func ratio(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}
