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

	for _, a := range []struct {
		name, help string
		value      func(AgentStats) float64
	}{
		{"agent_runs", "Runs by agent.", func(a AgentStats) float64 { return float64(a.Count) }},
		{"agent_successes", "Successful runs by agent.", func(a AgentStats) float64 { return float64(a.Success) }},
		{"agent_failures", "Failed runs (not timeouts) by agent.", func(a AgentStats) float64 { return float64(a.Failed) }},
		{"agent_duration_avg_seconds", "Average run duration by agent.", func(a AgentStats) float64 { return a.AvgDuration }},
	} {
		promGroup(m, a.name, a.help, "agent", s.ByAgent, func(x AgentStats) string { return x.Agent }, a.value)
	}
	promGroup(m, "model_runs", "Runs by model.", "model", s.ByModel,
		func(x ModelStats) string { return x.Model }, func(x ModelStats) float64 { return float64(x.Count) })
	promGroup(m, "model_successes", "Successful runs by model.", "model", s.ByModel,
		func(x ModelStats) string { return x.Model }, func(x ModelStats) float64 { return float64(x.Success) })
	templ := func(x TemplateStats) string { return x.Template }
	promGroup(m, "template_runs", "Runs by prompt template (custom: none named).", "template", s.ByTemplate,
		templ, func(x TemplateStats) float64 { return float64(x.Count) })
	promGroup(m, "template_successes", "Successful runs by prompt template.", "template", s.ByTemplate,
		templ, func(x TemplateStats) float64 { return float64(x.Success) })
	promGroup(m, "template_duration_avg_seconds", "Average run duration by prompt template.", "template", s.ByTemplate,
		templ, func(x TemplateStats) float64 { return x.AvgDuration })
	promGroup(m, "task_type_runs", "Runs by task type (the prompt's first word).", "task_type", s.TaskTypes,
		func(x TaskTypeCount) string { return x.TaskType }, func(x TaskTypeCount) float64 { return float64(x.Count) })
	promGroup(m, "failure_reasons", "Failed runs by the reason their result gives.", "reason", s.FailureReasons,
		func(x ReasonCount) string { return x.Reason }, func(x ReasonCount) float64 { return float64(x.Count) })
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

// promGroup writes one gauge family with a sample per row of a by-agent (model, template, …) table,
// labelled with the row's key.
func promGroup[T any](m promWriter, name, help, label string, rows []T, key func(T) string, value func(T) float64) {
	m.family(name, "gauge", help)
	for _, r := range rows {
		m.sample(name, labels(label, key(r)), value(r))
	}
}

// labels renders one label pair, its value printable and escaped as the exposition format
// requires.
func labels(name, value string) string {
	return "{" + name + `="` + escapeLabel(printable(value)) + `"}`
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
