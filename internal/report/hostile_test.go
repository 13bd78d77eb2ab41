package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/record"
)

// hostileText is text a record can carry that a terminal obeys: a window title and a clipboard
// write (OSC 0 and 52), a screen clear (CSI), the same in its C1 form, a bell, a carriage
// return that hides what came before, a newline that forges a line of the report, a right-to-left
// override, a DEL and a NUL (as \u0000 in JSON).
const hostileText = "ok\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\u009b31m\a\rfake\nRECOMMENDATIONS\u202eevil\x7f\x00end"

// hostileReport counts beads whose every field shown in a report holds hostileText, and returns their
// template scores too.
func hostileReport(t *testing.T) (*Report, TemplateScores) {
	t.Helper()
	a := NewAggregator(PeriodDay)
	for i, status := range []string{"failed", "done", "failed"} {
		start := time.Date(2026, 1, 1+i, 10, 0, 0, 0, time.UTC)
		tmpl := hostileText
		run := record.Run{Bead: "bd-" + hostileText, Agent: hostileText + string(rune('a'+i)), Model: hostileText, Prompt: hostileText,
			StartedAt: record.FormatTime(start), Attempt: 1, TemplateName: &tmpl}
		a.Add(bead(run, result(status, record.FormatTime(start.Add(time.Minute)), hostileText)))
	}
	f, _ := NewFilter("2026-01-01", "", nil, []string{hostileText}, nil)
	at := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	return NewReport(a, f, at), a.TemplateScores(at)
}

// TestRenderersNeutraliseHostileText: whatever a record holds, no renderer passes on a control
// character or a bidirectional override (the terminal would obey it), the HTML stays
// well-formed XML, and the text report gets no line a record made (issue 9, item 11).
func TestRenderersNeutraliseHostileText(t *testing.T) {
	for _, r := range []struct {
		name  string
		write func(*bytes.Buffer, *Report, TemplateScores) error
	}{
		{"text", func(b *bytes.Buffer, r *Report, _ TemplateScores) error { return WriteText(b, r) }},
		{"markdown", func(b *bytes.Buffer, r *Report, _ TemplateScores) error { return WriteMarkdown(b, r) }},
		{"prometheus", func(b *bytes.Buffer, r *Report, _ TemplateScores) error { return WritePrometheus(b, r) }},
		{"html", func(b *bytes.Buffer, r *Report, _ TemplateScores) error { return WriteHTML(b, r) }},
		{"templates", func(b *bytes.Buffer, _ *Report, ts TemplateScores) error {
			return WriteTemplatesText(b, ts, "state/"+hostileText)
		}},
		{"csv", func(b *bytes.Buffer, _ *Report, _ TemplateScores) error {
			w := NewCSVWriter(b)
			for i := 0; i < 2; i++ {
				tmpl := hostileText
				run := record.Run{Bead: hostileText, Agent: "=cmd|' /C calc'!A0", Model: "+1", Prompt: hostileText,
					StartedAt: "-2+3", Attempt: 1, TemplateName: &tmpl}
				w.Write(bead(run, result("@SUM(1+1)", "\t=1", hostileText)))
			}
			return w.Flush()
		}},
	} {
		var b bytes.Buffer
		rep, scores := hostileReport(t)
		if err := r.write(&b, rep, scores); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		out := b.String()
		if bad := controlIn(out); bad != "" {
			t.Errorf("the %s report passes on %s", r.name, bad)
		}
		switch r.name {
		case "text":
			if strings.Count(out, "\nRECOMMENDATIONS") != 1 {
				t.Errorf("a record forged a line of the text report:\n%s", out)
			}
		case "html":
			checkHTML(t, b.Bytes())
		case "csv":
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatalf("the CSV does not parse: %v", err)
			}
			for _, row := range rows[1:] {
				for i, cell := range row {
					if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
						t.Errorf("CSV cell %s = %q starts a formula", csvHeader[i], cell)
					}
				}
			}
		}
	}
}

// controlIn names the first control character or bidirectional control in s, "" if none (a
// newline and a tab are layout).
func controlIn(s string) string {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == utf8.RuneError,
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}
