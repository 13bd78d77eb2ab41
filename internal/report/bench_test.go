package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// benchPairs is the size of the state directory the scan benchmarks read; make bench times
// the binary on up to a million pairs (scripts/bench/analyze-runs.sh).
const benchPairs = 2000

// benchState writes benchPairs full run/result pairs into a temporary state directory, as
// record.Marshal renders them (not through record.Store: its fsyncs would make the set up take
// longer than the benchmark).
func benchState(b *testing.B) string {
	dir := b.TempDir()
	for _, sub := range []string{"runs", "results"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	write := func(path string, v any) {
		doc, err := record.Marshal(v)
		if err == nil {
			err = os.WriteFile(path, doc, 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	{
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tmpl := []string{"feature", "bug-fix", "docs"}
		for i := range benchPairs {
			id := fmt.Sprintf("bd-%06x", i)
			start := base.Add(time.Duration(i) * 7 * time.Minute)
			end := record.FormatTime(start.Add(time.Duration(60+i%3600) * time.Second))
			status := []string{"done", "done", "failed", "timeout"}[i%4]
			prompt := fmt.Sprintf("Fix component %d of the service, carefully", i)
			t := tmpl[i%3]
			run := &record.Run{SchemaVersion: 1, Bead: id, Agent: "claude", Model: "sonnet", Repo: "/srv/repo",
				Prompt: prompt, PromptFull: prompt, PromptHash: record.PromptHash(prompt), StartedAt: record.FormatTime(start),
				FinishedAt: &end, DurationSeconds: record.Int(int64(60 + i%3600)), Status: status, Attempt: 1 + i%2,
				MaxRetries: 2, SessionName: record.SessionName(id), ResultFile: record.ResultFile(id), TemplateName: &t}
			res := &record.Result{SchemaVersion: 1, Bead: id, Agent: "claude", Status: status, Reason: "status-file",
				StartedAt: run.StartedAt, FinishedAt: &end, DurationSeconds: run.DurationSeconds, Attempt: run.Attempt,
				MaxRetries: 2, SessionName: run.SessionName}
			if status != "done" {
				res.ExitCode = record.Int(1)
			} else {
				res.ExitCode = record.Int(0)
			}
			run.ExitCode = res.ExitCode
			if status == "timeout" || status == "failed" {
				run.FailureReason = &res.Reason
			}
			write(filepath.Join(dir, "runs", id+".json"), run)
			write(filepath.Join(dir, "results", id+".json"), res)
		}
	}
	return dir
}

// BenchmarkScan is the default text report's work: read, merge and aggregate every pair.
func BenchmarkScan(b *testing.B) {
	dir := benchState(b)
	b.ResetTimer()
	for b.Loop() {
		a := NewAggregator("")
		if err := (Source{Dir: dir}).Scan(a.Add, func(Skipped) { a.Skip() }); err != nil {
			b.Fatal(err)
		}
		if err := WriteText(io.Discard, NewReport(a, Filter{}, time.Now())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchPairs)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkScanJSON adds what --json costs: each raw_data element built, spooled and written.
func BenchmarkScanJSON(b *testing.B) {
	dir := benchState(b)
	b.ResetTimer()
	for b.Loop() {
		a := NewAggregator("")
		spool := &Spool{}
		err := (Source{Dir: dir, Raw: true}).Scan(func(bd *Bead) { a.Add(bd); spool.Add(bd.Raw) }, func(Skipped) { a.Skip() })
		if err != nil {
			b.Fatal(err)
		}
		r := NewReport(a, Filter{}, time.Now())
		r.Raw = spool
		if err := WriteJSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		spool.Close()
	}
	b.ReportMetric(float64(benchPairs)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkAggregate is the aggregation alone, on beads already in memory.
func BenchmarkAggregate(b *testing.B) {
	beads := make([]*Bead, 1000)
	for i := range beads {
		fin := record.FormatTime(time.Date(2026, 1, 1, 1, i%60, 0, 0, time.UTC))
		beads[i] = bead(record.Run{Bead: fmt.Sprint(i), Agent: "claude", Model: "opus", Prompt: "Fix it",
			StartedAt: "2026-01-01T00:00:00Z", Attempt: 1 + i%2}, result([]string{"done", "failed"}[i%2], fin, "tests-failed"))
	}
	b.ResetTimer()
	for b.Loop() {
		a := NewAggregator(PeriodDay)
		for _, bd := range beads {
			a.Add(bd)
		}
		a.Statistics()
	}
}
