package ui

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/top"
)

// The timer does not read the state files again (inotify tells of their changes): with no live
// agent a tick only redraws; a full refresh comes after fullEvery intervals without one.
func TestTickDoesNotRefresh(t *testing.T) {
	m, err := top.Open(top.Sources{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	u := newUI(context.Background(), m, Options{Interval: time.Second})
	u.all = []*top.Row{{Kind: top.KindDispatch, Name: "b", Status: "done"}}
	u.lastFull = time.Now()
	u.Update(tickMsg{})
	if u.refreshing {
		t.Errorf("a tick with no live agent refreshes every row")
	}
	u.lastFull = time.Now().Add(-fullEvery * time.Second)
	u.Update(tickMsg{})
	if !u.refreshing {
		t.Errorf("no full refresh after %d intervals without one", fullEvery)
	}
}
