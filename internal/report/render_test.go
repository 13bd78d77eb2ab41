package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// sample is a report over a few beads with awkward names, for the renderers.
func sample(t *testing.T, period string) *Report {
	t.Helper()
	a := NewAggregator(period)
	weird := `we"ird\<b>|x_y`
	for i := range 40 {
		start := time.Date(2026, 1, 1+i%9, 10, 0, 0, 0, time.UTC)
		end := start.Add(time.Duration(60*(i+1)) * time.Second)
		status := []string{"done", "done", "failed", "timeout"}[i%4]
		agent := []string{"claude", "codex", weird}[i%3]
		run := record.Run{Bead: fmt.Sprintf("bd-%d", i), Agent: agent, Model: "m" + strconv.Itoa(i%2),
			Prompt: "Fix " + weird, StartedAt: record.FormatTime(start), Attempt: 1 + i%2}
		if i%5 == 0 {
			run.TemplateName = &weird
		}
		a.Add(bead(run, result(status, record.FormatTime(end), weird)))
	}
	a.Skip()
	f, _ := NewFilter("2026-01-01", "", []string{weird}, nil, nil)
	r := NewReport(a, f, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC))
	r.Detailed = true
	return r
}

func TestWritePrometheus(t *testing.T) {
	var b bytes.Buffer
	if err := WritePrometheus(&b, sample(t, "")); err != nil {
		t.Fatal(err)
	}
	// The exposition format, line by line: comments, then samples whose family was declared.
	var (
		help   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$`)
		typ    = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$`)
		sample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? (\S+)$`)
	)
	declared := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		switch {
		case help.MatchString(line):
		case typ.MatchString(line):
			m := typ.FindStringSubmatch(line)
			if _, dup := declared[m[1]]; dup {
				t.Errorf("line %d: %s declared twice", i+1, m[1])
			}
			declared[m[1]] = m[2]
		case sample.MatchString(line):
			m := sample.FindStringSubmatch(line)
			name := m[1]
			if typ, ok := declared[strings.TrimSuffix(strings.TrimSuffix(name, "_sum"), "_count")]; !ok || (name != m[1] && typ != "summary") {
				if _, ok := declared[name]; !ok {
					t.Errorf("line %d: sample %s of no declared family", i+1, name)
				}
			}
			if !strings.HasPrefix(name, MetricPrefix) {
				t.Errorf("line %d: %s lacks the prefix %s", i+1, name, MetricPrefix)
			}
			if _, err := strconv.ParseFloat(m[3], 64); err != nil {
				t.Errorf("line %d: value %q: %v", i+1, m[3], err)
			}
		default:
			t.Errorf("line %d is not in the exposition format: %q", i+1, line)
		}
	}
	for _, want := range []string{`fleet_runs 40`, `fleet_success_ratio 0.5`, `fleet_skipped_records 1`,
		`fleet_agent_runs{agent="we\"ird\\<b>|x_y"} 13`, `fleet_run_duration_seconds{quantile="0.9"} 2160`} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("WritePrometheus() lacks the line %q", want)
		}
	}
}

func TestWriteHTML(t *testing.T) {
	for _, period := range []string{PeriodDay, PeriodWeek} {
		var b bytes.Buffer
		r := sample(t, period)
		if err := WriteHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		checkHTML(t, b.Bytes())
		for _, want := range []string{"<svg", "<polyline", "Duration distribution", "Agents: runs and successes",
			"we&#34;ird\\&lt;b&gt;|x_y", "1 unreadable record file(s)"} {
			if !bytes.Contains(b.Bytes(), []byte(want)) {
				t.Errorf("WriteHTML(by %s) lacks %q", period, want)
			}
		}
	}
	// No runs at all: still a page, with no chart.
	var b bytes.Buffer
	a := NewAggregator(PeriodDay)
	if err := WriteHTML(&b, NewReport(a, Filter{}, time.Unix(0, 0))); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, b.Bytes())
	if !bytes.Contains(b.Bytes(), []byte("No runs with a readable time.")) {
		t.Errorf("WriteHTML(empty) = %s, want the no-runs note", b.Bytes())
	}
}

// checkHTML parses the page as strict XML (so every element is closed and every attribute
// quoted: any browser reads it) and checks it loads nothing from the network.
func checkHTML(t *testing.T, page []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the HTML is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range tok.Attr {
				if strings.Contains(strings.ToLower(a.Value), "//") && (a.Name.Local == "src" || a.Name.Local == "href") {
					t.Errorf("<%s %s=%q> refers to another resource", tok.Name.Local, a.Name.Local, a.Value)
				}
			}
			if n := tok.Name.Local; n == "script" || n == "link" || n == "img" || n == "iframe" {
				t.Errorf("<%s> in a self-contained page", n)
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("the HTML ends %d elements deep", depth)
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) || bytes.Contains(page, []byte("@import")) || bytes.Contains(page, []byte("url(")) {
		t.Errorf("the HTML refers to the network")
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, sample(t, PeriodWeek)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"# Flywheel analysis report", "| Total runs | 40 |",
		`| we"ird\\&lt;b&gt;\|x\_y | 13 |`, "## By week", "| 2026-W01 |", "- Most common failure:"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteMarkdown() lacks %q:\n%s", want, out)
		}
	}
	// Every table row has as many cells as its header.
	cells := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			cells = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cells == 0 {
			cells = n
		} else if n != cells {
			t.Errorf("table row %q has %d separators, its header %d", line, n, cells)
		}
	}
}

func TestCSVWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewCSVWriter(&b)
	fin := "2026-01-01T00:10:00Z"
	w.Write(bead(record.Run{Bead: "bd-1", Agent: "claude", Model: "opus", Prompt: "Fix \"quoted\", now", StartedAt: "2026-01-01T00:00:00Z", Attempt: 2},
		&record.Result{Status: "done", FinishedAt: &fin, Reason: "a,b"}))
	w.Write(bead(record.Run{Bead: "bd-2", StartedAt: "'$START'"}, nil))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{csvHeader,
		{"bd-1", "2", "claude", "opus", "custom", "fix", "done", "done", "a,b", "2026-01-01T00:00:00Z", fin, "600", ""},
		{"bd-2", "", Unknown, Unknown, "custom", "other", "running", "", "", "'$START'", "", "", ""},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("CSV rows = %q, want %q", rows, want)
	}
	// No records: the header alone.
	b.Reset()
	w = NewCSVWriter(&b)
	w.Flush()
	if got := b.String(); got != strings.Join(csvHeader, ",")+"\n" {
		t.Errorf("CSV of nothing = %q, want the header", got)
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	r := NewReport(NewAggregator(""), Filter{}, time.Unix(0, 0))
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("WriteJSON(empty) is not JSON: %v\n%s", err, b.Bytes())
	}
	st := doc["statistics"].(map[string]any)
	for _, k := range []string{"by_agent", "by_model", "by_template", "failure_reasons", "task_types"} {
		if l, ok := st[k].([]any); !ok || len(l) != 0 {
			t.Errorf("statistics.%s = %v, want []", k, st[k])
		}
	}
	if f := doc["filter"].(map[string]any); len(f) != 1 || f["since"] != nil {
		t.Errorf("filter = %v, want {since: null}", f)
	}
	if raw, ok := doc["raw_data"].([]any); !ok || len(raw) != 0 {
		t.Errorf("raw_data = %v, want []", doc["raw_data"])
	}
}
