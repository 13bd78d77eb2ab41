package rails

import (
	"testing"
	"time"
)

// The calls tests give the clock by hand: every call of Calls takes its "now".
var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

// TestCallsFull: with Max starts within the window the next waits until the oldest of the last
// Max leaves it; older starts are forgotten; no limit is never full.
func TestCallsFull(t *testing.T) {
	c := &Calls{Max: 2}
	c.Load([]time.Time{at(-90), at(0), at(10)}) // the first is out of the hour
	until, full := c.Full(at(20))
	if !full || !until.Equal(at(60)) {
		t.Errorf("Full = %v, %v; want full until %v", until, full, at(60))
	}
	if c.Len() != 2 {
		t.Errorf("after Full %d starts held, want 2 (the one 110 minutes old forgotten)", c.Len())
	}
	if _, full := c.Full(at(60)); full {
		t.Error("Full at the hour's end: the oldest start has left the window, want room")
	}
	none := &Calls{}
	none.Load([]time.Time{at(0), at(1), at(2)})
	if _, full := none.Full(at(3)); full {
		t.Error("no limit, yet Full")
	}
}

// TestCallsNote: a start is noted, and only the last Max are kept: the limit needs no more.
func TestCallsNote(t *testing.T) {
	c := &Calls{Max: 2}
	for i := 0; i < 5; i++ {
		c.Note(at(i))
	}
	got := c.Times()
	if len(got) != 2 || !got[0].Equal(at(3)) || !got[1].Equal(at(4)) {
		t.Errorf("Times after 5 notes = %v, want the last 2", got)
	}
	got[0] = at(100) // a copy
	if c.Times()[0].Equal(at(100)) {
		t.Error("Times is not a copy")
	}
}

// TestCallsTakeGive: Take notes a start while the window has room and says how long to wait
// once it has none; Give hands back a start that was not used.
func TestCallsTakeGive(t *testing.T) {
	c := &Calls{Max: 2, Window: 10 * time.Minute}
	if w := c.Take(at(0)); w != 0 {
		t.Fatalf("Take 1 = %v, want 0", w)
	}
	if w := c.Take(at(1)); w != 0 {
		t.Fatalf("Take 2 = %v, want 0", w)
	}
	if w := c.Take(at(4)); w != 6*time.Minute {
		t.Errorf("Take 3 = %v, want 6m (the first leaves the 10-minute window at minute 10)", w)
	}
	if c.Len() != 2 {
		t.Errorf("a refused Take noted a start: %d held", c.Len())
	}
	c.Give(at(1))
	if w := c.Take(at(4)); w != 0 {
		t.Errorf("Take after Give = %v, want 0", w)
	}
	if w := c.Take(at(10)); w != 0 {
		t.Errorf("Take once the first left the window = %v, want 0", w)
	}
	unlimited := &Calls{}
	for i := 0; i < 100; i++ {
		if w := unlimited.Take(at(0)); w != 0 {
			t.Fatalf("no limit: Take = %v", w)
		}
	}
	if unlimited.Len() != 0 {
		t.Errorf("no limit: %d starts kept, want none", unlimited.Len())
	}
}
