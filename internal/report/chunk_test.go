package report

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// TestChunkTotalsRoundTrip: a chunk's totals, encoded and decoded, merged into an aggregator of
// any period, leave it as adding the chunk's beads one by one does; totals cut short or out of
// bounds are refused, never a panic.
func TestChunkTotalsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	at := time.Date(2026, 2, 16, 12, 0, 0, 0, time.UTC)
	for i := range 200 {
		n := 1 + rng.Intn(20)
		var beads []*Bead
		for range n {
			b := randomBead(rng)
			if rng.Intn(2) == 0 {
				b.Start, b.HasStart = time.Date(2026, 1, 1+rng.Intn(40), rng.Intn(24), 0, 0, 0, time.UTC), true
			}
			beads = append(beads, b)
		}
		chunk := NewAggregator(PeriodDay)
		for _, b := range beads {
			chunk.Add(b)
		}
		v := encodeTotals(nil, chunk)
		for _, period := range []string{"", PeriodDay, PeriodWeek} {
			want, got := NewAggregator(period), NewAggregator(period)
			want.Add(beads[0])
			got.Add(beads[0])
			for _, b := range beads {
				want.Add(b)
			}
			totals, ok := decodeTotals(v, n)
			if !ok {
				t.Fatalf("chunk %d: its totals were refused", i)
			}
			got.Merge(totals)
			ws, gs := want.Statistics(), got.Statistics()
			if !reflect.DeepEqual(gs, ws) || !reflect.DeepEqual(got.TemplateScores(at), want.TemplateScores(at)) {
				t.Fatalf("chunk %d by %q: merged %+v\nwant %+v", i, period, gs, ws)
			}
		}
		if _, ok := decodeTotals(v, chunk.total-1); ok && chunk.total > 0 {
			t.Fatalf("chunk %d: totals of %d beads were taken for a chunk of %d", i, chunk.total, chunk.total-1)
		}
		for cut := range len(v) {
			if _, ok := decodeTotals(v[:cut], n); ok {
				t.Fatalf("chunk %d: totals cut to %d of %d bytes were taken", i, cut, len(v))
			}
		}
		for range 20 {
			w := bytes.Clone(v)
			w[rng.Intn(len(w))] ^= byte(1 + rng.Intn(255))
			decodeTotals(w, n) // refused or not (the checksum is the entry's guard): no panic
		}
	}
}

// TestChunkStarts: a chunk's bounds depend on the names, not their positions: a name added
// moves no bound its hash made, only those of chunks cut at their longest up to the next.
func TestChunkStarts(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var entries []entry
	for i := range 2000 {
		entries = append(entries, entry{name: "bd-" + string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	const bits = 3
	natural := func(name string) bool { return fnv32(name)&(1<<bits-1) == 0 }
	keys := func(es []entry) map[string]bool {
		m := map[string]bool{}
		for _, s := range chunkStarts(es, bits) {
			m[es[s].name] = true
		}
		return m
	}
	before := keys(entries)
	for range 50 {
		k := rng.Intn(len(entries))
		after := keys(append(append(append([]entry(nil), entries[:k]...), entry{name: entries[k].name + "x"}), entries[k:]...))
		for s := range before {
			if natural(s) && !after[s] {
				t.Fatalf("a name added at %d moved the chunk bound at %s", k, s)
			}
		}
	}
	starts := chunkStarts(entries, bits)
	if len(starts) < 2000/8/3 || len(starts) > 2000/8*3 {
		t.Errorf("%d chunks of 2000 entries, want about 250", len(starts))
	}
	for c := 1; c < len(starts); c++ {
		if n := starts[c] - starts[c-1]; n > 4<<bits {
			t.Errorf("chunk %d has %d entries, over %d", c-1, n, 4<<bits)
		}
	}
}
