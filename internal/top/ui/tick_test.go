package ui

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
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

// Leaving an agent's screen view (esc or q) leaves it for good: a prompt opened later from the
// list (the filter, send) goes back to the list when it closes, not to the screen view left
// before (seen in tmux: Esc at the filter prompt showed the task's screen again).
func TestPromptAfterScreenViewReturnsToList(t *testing.T) {
	m, err := top.Open(top.Sources{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, leave := range []tea.KeyPressMsg{{Code: tea.KeyEscape}, {Code: 'q', Text: "q"}} {
		for _, close := range []tea.KeyPressMsg{{Code: tea.KeyEscape}, {Code: tea.KeyEnter}} {
			u := newUI(context.Background(), m, Options{Interval: time.Second})
			u.Update(rowsMsg{rows: []*top.Row{{Kind: top.KindTask, Name: "t1", Status: "done"}}})
			u.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
			u.Update(screenMsg{key: u.current().Key(), lines: []string{"the agent's words"}})
			if u.mode != modeScreen {
				t.Fatalf("enter: mode %d, want the screen view", u.mode)
			}
			u.Update(leave)
			if u.mode != modeList {
				t.Fatalf("%s in the screen view: mode %d, want the list", leave, u.mode)
			}
			u.Update(tea.KeyPressMsg{Code: '/', Text: "/"})
			if u.mode != modeFilter {
				t.Fatalf("/: mode %d, want the filter prompt", u.mode)
			}
			u.Update(close)
			if u.mode != modeList {
				t.Errorf("screen view left with %s, then the filter prompt closed with %s: mode %d, want the list (%d)",
					leave, close, u.mode, modeList)
			}
		}
	}
}
