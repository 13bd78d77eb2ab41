package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the FLYWHEEL ANALYSIS REPORT of analyze-runs.sh, line for line. What the
// original did not print appears only when asked for or when there is something to say: the
// other filters' lines under "Filter: Since", a Skipped line when records were unreadable, the
// grouping over time (--by) and the duration percentiles (--detailed).
func WriteText(w io.Writer, r *Report) error {
	var b bytes.Buffer
	writeHeader(&b, r)
	writeSummary(&b, &r.Stats)
	writeBreakdowns(&b, &r.Stats)
	writeFailureReasons(&b, r.Stats.FailureReasons)
	if r.Period != "" {
		writePeriods(&b, r)
	}
	if r.Detailed {
		writeDurations(&b, r.Stats.Durations)
	}
	b.WriteString("RECOMMENDATIONS\n")
	for _, rec := range r.Recommendations {
		fmt.Fprintf(&b, "  • %s\n", printable(rec))
	}
	b.WriteString("\n" + rule + "\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeHeader writes the title, the time of the report and its filters between two rules.
func writeHeader(b *bytes.Buffer, r *Report) {
	b.WriteString(rule + "\nFLYWHEEL ANALYSIS REPORT\n")
	fmt.Fprintf(b, "Generated: %s\n", r.GeneratedAt.Format("2006-01-02 15:04:05 UTC"))
	for _, line := range filterLines(r.Filter) {
		fmt.Fprintf(b, "Filter: %s\n", line)
	}
	b.WriteString(rule + "\n\n")
}

// writeSummary writes the SUMMARY section: the counts over every run.
func writeSummary(b *bytes.Buffer, s *Statistics) {
	b.WriteString("SUMMARY\n")
	fmt.Fprintf(b, "  Total runs:     %d\n", s.TotalRuns)
	fmt.Fprintf(b, "  Success:        %d (%d%%)\n", s.Success, Floor(s.SuccessRate))
	fmt.Fprintf(b, "  Failed:         %d\n", s.Failed)
	fmt.Fprintf(b, "  Timeout:        %d\n", s.Timeout)
	fmt.Fprintf(b, "  Running:        %d\n", s.Running)
	fmt.Fprintf(b, "  Retries:        %d (%d%% of runs)\n", s.RetryCount, Floor(s.RetryRate))
	fmt.Fprintf(b, "  Avg duration:   %ds\n", Floor(s.AvgDurationSeconds))
	if s.SkippedRecords > 0 {
		fmt.Fprintf(b, "  Skipped:        %d unreadable record file(s), not counted\n", s.SkippedRecords)
	}
	b.WriteString("\n")
}

// writeBreakdowns writes the sections BY AGENT TYPE, BY MODEL, BY TEMPLATE and BY TASK TYPE.
func writeBreakdowns(b *bytes.Buffer, s *Statistics) {
	b.WriteString("BY AGENT TYPE\n")
	for _, a := range s.ByAgent {
		fmt.Fprintf(b, "  %s:\n", upper(printable(a.Agent)))
		fmt.Fprintf(b, "    Runs:         %d\n", a.Count)
		fmt.Fprintf(b, "    Success:      %d (%d%%)\n", a.Success, Floor(percent(a.Success, a.Count)))
		fmt.Fprintf(b, "    Failed:       %d\n", a.Failed)
		fmt.Fprintf(b, "    Avg duration: %ds\n\n", Floor(a.AvgDuration))
	}
	b.WriteString("BY MODEL\n")
	for _, m := range s.ByModel {
		fmt.Fprintf(b, "  %s:\n", printable(m.Model))
		fmt.Fprintf(b, "    Runs:    %d\n", m.Count)
		fmt.Fprintf(b, "    Success: %d\n\n", m.Success)
	}
	b.WriteString("BY TEMPLATE\n")
	for _, t := range s.ByTemplate {
		fmt.Fprintf(b, "  %s:\n", printable(t.Template))
		fmt.Fprintf(b, "    Runs:         %d\n", t.Count)
		fmt.Fprintf(b, "    Success:      %d (%d%%)\n", t.Success, Floor(percent(t.Success, t.Count)))
		fmt.Fprintf(b, "    Avg duration: %ds\n\n", Floor(t.AvgDuration))
	}
	b.WriteString("BY TASK TYPE\n")
	for _, t := range s.TaskTypes {
		fmt.Fprintf(b, "  %s: %d\n", upper(t.TaskType), t.Count)
	}
	b.WriteString("\n")
}

// writeFailureReasons writes the FAILURE REASONS section, when there is a reason to show.
func writeFailureReasons(b *bytes.Buffer, reasons []ReasonCount) {
	if len(reasons) == 0 {
		return
	}
	b.WriteString("FAILURE REASONS\n")
	for _, f := range reasons {
		fmt.Fprintf(b, "  [%dx] %s\n", f.Count, printable(f.Reason))
	}
	b.WriteString("\n")
}

// writePeriods writes the grouping over time asked for with --by: a table of one period a line.
func writePeriods(b *bytes.Buffer, r *Report) {
	fmt.Fprintf(b, "BY %s\n", upper(r.Period))
	fmt.Fprintf(b, "  %-10s  %6s  %7s  %8s\n", "PERIOD", "RUNS", "SUCCESS", "MEDIAN")
	for _, p := range r.periods() {
		median := "-"
		if p.MedianDuration != nil {
			median = fmt.Sprintf("%ds", *p.MedianDuration)
		}
		fmt.Fprintf(b, "  %-10s  %6d  %6d%%  %8s\n", p.Period, p.Runs, Floor(p.SuccessRate), median)
	}
	b.WriteString("\n")
}

// writeDurations writes the duration percentiles asked for with --detailed.
func writeDurations(b *bytes.Buffer, d Percentiles) {
	b.WriteString("DURATIONS\n")
	fmt.Fprintf(b, "  Runs timed:     %d\n", d.Count)
	fmt.Fprintf(b, "  p50:            %ds\n", d.P50)
	fmt.Fprintf(b, "  p90:            %ds\n", d.P90)
	fmt.Fprintf(b, "  Max:            %ds\n\n", d.Max)
}

// filterLines describes the filters, one line each, "Since DATE" first as the original wrote it,
// printable: a filter given for a name a record holds is that name.
func filterLines(f Filter) []string {
	var lines []string
	if f.Since != "" {
		lines = append(lines, printable("Since "+f.Since))
	}
	if f.Until != "" {
		lines = append(lines, printable("Until "+f.Until))
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"Agent", f.Agents}, {"Model", f.Models}, {"Template", f.Templates}} {
		if len(l.list) > 0 {
			lines = append(lines, printable(l.name+" "+strings.Join(l.list, ", ")))
		}
	}
	return lines
}

// upper is jq's ascii_upcase: ASCII letters only, everything else as it is.
func upper(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}
