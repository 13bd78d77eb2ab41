package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the report as GitHub-flavoured markdown, for pull requests and chat: the
// same figures as the text report in tables, with the duration percentiles and, with --by, the
// grouping over time.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b bytes.Buffer
	s := &r.Stats
	b.WriteString("# Flywheel analysis report\n\n")
	fmt.Fprintf(&b, "Generated %s", r.GeneratedAt.Format("2006-01-02 15:04:05 UTC"))
	if lines := filterLines(r.Filter); len(lines) > 0 {
		fmt.Fprintf(&b, " · filter: %s", mdEscape(strings.Join(lines, "; ")))
	}
	b.WriteString("\n\n## Summary\n\n| | |\n| --- | ---: |\n")
	fmt.Fprintf(&b, "| Total runs | %d |\n", s.TotalRuns)
	fmt.Fprintf(&b, "| Success | %d (%d%%) |\n", s.Success, Floor(s.SuccessRate))
	fmt.Fprintf(&b, "| Failed | %d |\n", s.Failed)
	fmt.Fprintf(&b, "| Timeout | %d |\n", s.Timeout)
	fmt.Fprintf(&b, "| Running | %d |\n", s.Running)
	fmt.Fprintf(&b, "| Retries | %d (%d%% of runs) |\n", s.RetryCount, Floor(s.RetryRate))
	fmt.Fprintf(&b, "| Avg duration | %s |\n", seconds(Floor(s.AvgDurationSeconds)))
	fmt.Fprintf(&b, "| Duration p50 / p90 / max | %s / %s / %s |\n", seconds(s.Durations.P50), seconds(s.Durations.P90), seconds(s.Durations.Max))
	if s.SkippedRecords > 0 {
		fmt.Fprintf(&b, "| Skipped (unreadable) | %d |\n", s.SkippedRecords)
	}

	if len(s.ByAgent) > 0 {
		b.WriteString("\n## By agent\n\n| Agent | Runs | Success | Failed | Avg duration |\n| --- | ---: | ---: | ---: | ---: |\n")
		for _, a := range s.ByAgent {
			fmt.Fprintf(&b, "| %s | %d | %d (%d%%) | %d | %s |\n", mdEscape(a.Agent), a.Count, a.Success, Floor(percent(a.Success, a.Count)), a.Failed, seconds(Floor(a.AvgDuration)))
		}
	}
	if len(s.ByModel) > 0 {
		b.WriteString("\n## By model\n\n| Model | Runs | Success |\n| --- | ---: | ---: |\n")
		for _, m := range s.ByModel {
			fmt.Fprintf(&b, "| %s | %d | %d (%d%%) |\n", mdEscape(m.Model), m.Count, m.Success, Floor(percent(m.Success, m.Count)))
		}
	}
	if len(s.ByTemplate) > 0 {
		b.WriteString("\n## By template\n\n| Template | Runs | Success | Avg duration |\n| --- | ---: | ---: | ---: |\n")
		for _, t := range s.ByTemplate {
			fmt.Fprintf(&b, "| %s | %d | %d (%d%%) | %s |\n", mdEscape(t.Template), t.Count, t.Success, Floor(percent(t.Success, t.Count)), seconds(Floor(t.AvgDuration)))
		}
	}
	if len(s.TaskTypes) > 0 {
		b.WriteString("\n## By task type\n\n| Task type | Runs |\n| --- | ---: |\n")
		for _, t := range s.TaskTypes {
			fmt.Fprintf(&b, "| %s | %d |\n", t.TaskType, t.Count)
		}
	}
	if len(s.FailureReasons) > 0 {
		b.WriteString("\n## Failure reasons\n\n| Reason | Count |\n| --- | ---: |\n")
		for _, f := range s.FailureReasons {
			fmt.Fprintf(&b, "| %s | %d |\n", mdEscape(f.Reason), f.Count)
		}
	}
	if r.Period != "" {
		fmt.Fprintf(&b, "\n## By %s\n\n| %s | Runs | Success | Median duration |\n| --- | ---: | ---: | ---: |\n", r.Period, strings.ToUpper(r.Period[:1])+r.Period[1:])
		for _, p := range r.periods() {
			median := "–"
			if p.MedianDuration != nil {
				median = seconds(*p.MedianDuration)
			}
			fmt.Fprintf(&b, "| %s | %d | %d (%d%%) | %s |\n", p.Period, p.Runs, p.Success, Floor(p.SuccessRate), median)
		}
	}
	b.WriteString("\n## Recommendations\n\n")
	for _, rec := range r.Recommendations {
		fmt.Fprintf(&b, "- %s\n", mdEscape(rec))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// seconds prints a duration in seconds as the text report does, with a readable form beside
// long ones: "5400s (1h30m)".
func seconds(n int64) string {
	if n < 60 {
		return fmt.Sprintf("%ds", n)
	}
	return fmt.Sprintf("%ds (%s)", n, human(n))
}

// mdEscape keeps a value from a record from breaking a table or starting markup: it is made
// printable, then pipes, backslashes and markup characters are neutralised.
func mdEscape(s string) string { return mdReplacer.Replace(printable(s)) }

var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;",
	"[", `\[`, "]", `\]`,
)
