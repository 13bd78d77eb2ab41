package report

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/benchdata"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// benchPairs is the size of the state directory the scan benchmarks read; make bench times
// the binary on up to a million pairs (scripts/bench/analyze-runs.sh).
const benchPairs = 2000

// benchState generates benchPairs pairs (10% of them legacy records) as make bench does.
func benchState(b *testing.B) string {
	dir := b.TempDir()
	if err := benchdata.Generate(benchPairs, dir, 1, 10, 0); err != nil {
		b.Fatal(err)
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

// BenchmarkScanCached is BenchmarkScan through an up-to-date cache: what a cron run over a
// history costs when nothing changed (make bench times a million pairs with 1% new:
// scripts/bench/analyze-runs-cache.sh).
func BenchmarkScanCached(b *testing.B) {
	dir := benchState(b)
	cache := NewCache(statedir.Dir{Root: dir}.ReportCache(), "bench")
	cache.Fresh = 0
	scan := func() {
		a := NewAggregator("")
		if err := (Source{Dir: dir, Cache: cache}).Scan(a.Add, func(Skipped) { a.Skip() }); err != nil {
			b.Fatal(err)
		}
		if err := WriteText(io.Discard, NewReport(a, Filter{}, time.Now())); err != nil {
			b.Fatal(err)
		}
	}
	scan() // builds the cache
	b.ResetTimer()
	for b.Loop() {
		scan()
	}
	if cache.Stats.Reused != benchPairs {
		b.Fatalf("the cache gave %d pairs of %d (%+v)", cache.Stats.Reused, benchPairs, cache.Stats)
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
