package aiwg

import (
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

// TestRefreshKeepsTheCallsItHolds: a controller that reads its seal again (refresh) while it
// holds more agent starts than the seal does (a ledger write that failed) keeps its own
// starts, each as it was. It once kept the seal's in their place: the seal was read into the
// memory its own starts were still kept in, so the oldest start held took the seal's time.
func TestRefreshKeepsTheCallsItHolds(t *testing.T) {
	root := t.TempDir()
	ws := Workspace{Root: filepath.Join(root, "ws")}
	rt := Runtime{SealDir: filepath.Join(root, "seals")}
	id := NewID("calls")
	now := time.Now().UTC().Truncate(time.Second)
	held := []time.Time{now.Add(-30 * time.Minute), now.Add(-20 * time.Minute), now.Add(-10 * time.Minute)}
	s := &seal{LoopID: id, Workspace: ws.Root, Rails: rails.Rails{MaxCallsPerHour: 5}, Calls: []string{stamp(now.Add(-50 * time.Minute))}}
	if err := statedir.Mkdir(rt.SealDir); err != nil {
		t.Fatal(err)
	}
	if err := ws.storeSeal(rt, s); err != nil {
		t.Fatal(err)
	}
	c := &controller{ws: ws, rt: rt, id: id}
	c.ledger.fromSeal(s)
	c.ledger.calls.Load(held)
	c.refresh()
	got := c.ledger.calls.Times()
	if len(got) != len(held) {
		t.Fatalf("after refresh %d starts held, want its own %d: %v", len(got), len(held), got)
	}
	for i := range held {
		if !got[i].Equal(held[i]) {
			t.Errorf("after refresh start %d is %v, want %v (the controller's own)", i, got[i], held[i])
		}
	}
}
