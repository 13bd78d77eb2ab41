package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// TemplateScore is one template of score-templates.sh's report.
type TemplateScore struct {
	Template     string
	Uses         int
	SuccessRate  float64 // a fraction, 0 to 1, as the original wrote it
	AvgDurationS int64   // floored
	AvgRetries   float64 // floored to one decimal
}

// TemplateScores is score-templates.sh's report and its state/template-scores.json.
type TemplateScores struct {
	GeneratedAt    time.Time
	Templates      []TemplateScore // most used first, ties by name
	Recommendation string
}

// TemplateScores scores the templates of the beads counted, by score-templates.sh's rules.
func (a *Aggregator) TemplateScores(now time.Time) TemplateScores {
	ts := TemplateScores{GeneratedAt: now}
	for _, name := range sortedKeys(a.scores) {
		s := a.scores[name]
		t := TemplateScore{Template: name, Uses: s.uses, SuccessRate: float64(s.success) / float64(s.uses)}
		if s.durations > 0 {
			t.AvgDurationS = Floor(s.durationSum / float64(s.durations))
		}
		t.AvgRetries = math.Floor(s.retriesSum/float64(s.uses)*10) / 10
		ts.Templates = append(ts.Templates, t)
	}
	slices.SortStableFunc(ts.Templates, func(x, y TemplateScore) int { return y.Uses - x.Uses })
	ts.Recommendation = templateRecommendation(ts.Templates)
	return ts
}

// templateRecommendation is the original's: the template with the lowest success rate among
// those used at least twice (the most used first among equals) is to be avoided when below 50%.
func templateRecommendation(templates []TemplateScore) string {
	var worst *TemplateScore
	for i := range templates {
		t := &templates[i]
		if t.Uses >= 2 && (worst == nil || t.SuccessRate < worst.SuccessRate) {
			worst = t
		}
	}
	switch {
	case worst == nil:
		return "Insufficient data (need at least 2 uses per template)."
	case worst.SuccessRate < 0.5:
		return fmt.Sprintf("Avoid '%s' template (%d%% success). Prefer templates with >70%% success rate.", worst.Template, Floor(worst.SuccessRate*100))
	}
	return "All templates performing adequately. Continue monitoring for patterns."
}

// MarshalJSON writes the document of state/template-scores.json: templates is an object keyed
// by template name, most used first, as select-template.sh reads it (.templates[$name]).
func (ts TemplateScores) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"generated_at":`)
	b.Write(indented(ts.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z")))
	b.WriteString(`,"templates":{`)
	for i, t := range ts.Templates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(indented(t.Template))
		fmt.Fprintf(&b, `:{"uses":%d,"success_rate":%s,"avg_duration_s":%d,"avg_retries":%s}`,
			t.Uses, number(t.SuccessRate), t.AvgDurationS, number(t.AvgRetries))
	}
	b.WriteString(`},"recommendation":`)
	b.Write(indented(ts.Recommendation))
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteTemplatesJSON writes the scores document, indented as jq printed it.
func WriteTemplatesJSON(w io.Writer, ts TemplateScores) error {
	doc, err := ts.MarshalJSON()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// WriteTemplatesText writes score-templates.sh's TEMPLATE SCORING REPORT. writtenTo is the
// scores file when one was written ("" for none).
func WriteTemplatesText(w io.Writer, ts TemplateScores, writtenTo string) error {
	var b bytes.Buffer
	b.WriteString(rule + "\nTEMPLATE SCORING REPORT\n")
	fmt.Fprintf(&b, "Generated: %s\n%s\n\n", ts.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC"), rule)
	for _, t := range ts.Templates {
		fmt.Fprintf(&b, "TEMPLATE: %s\n", printable(t.Template))
		fmt.Fprintf(&b, "  Uses:            %d\n", t.Uses)
		fmt.Fprintf(&b, "  Success rate:    %d%%\n", Floor(t.SuccessRate*100))
		fmt.Fprintf(&b, "  Avg duration:    %ds\n", t.AvgDurationS)
		fmt.Fprintf(&b, "  Avg retries:     %s\n\n", number(t.AvgRetries))
	}
	fmt.Fprintf(&b, "RECOMMENDATION\n  %s\n\n", printable(ts.Recommendation))
	if writtenTo != "" {
		fmt.Fprintf(&b, "Scores written to: %s\n", printable(writtenTo))
	}
	b.WriteString(rule + "\n")
	_, err := w.Write(b.Bytes())
	return err
}

// number prints a float as jq does: integers without a point, others in the shortest form
// (also what the exposition format takes).
func number(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
