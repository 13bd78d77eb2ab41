package ui

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/agentfleet/fleet/internal/top"
)

// TestBellRingsOnceWhenAnAgentStartsWaiting: with Options.Bell, the rows that bring an agent
// newly waiting for input ring the bell once (tea.Raw "\a"); the first rows (agents waiting
// before the UI started), rows that change nothing, and the UI without Bell ring nothing.
func TestBellRingsOnceWhenAnAgentStartsWaiting(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	rows := func(waiting ...string) []*top.Row {
		var out []*top.Row
		for _, name := range []string{"a", "b", "c"} {
			r := &top.Row{Kind: top.KindWorker, Name: name, Status: "running", Live: true}
			for _, w := range waiting {
				if w == name {
					r.WaitingInput = since
				}
			}
			out = append(out, r)
		}
		return out
	}
	rang := func(u *ui, msg tea.Msg) bool {
		_, cmd := u.Update(msg)
		if cmd == nil {
			return false
		}
		raw, ok := cmd().(tea.RawMsg)
		return ok && raw.Msg == "\a"
	}
	u := newUI(context.Background(), nil, Options{Bell: true})
	for i, step := range []struct {
		msg  tea.Msg
		want bool
	}{
		{rowsMsg{rows: rows("a")}, false},     // waiting already when the UI started
		{rowsMsg{rows: rows("a")}, false},     // nothing new
		{lookMsg{rows: rows("a", "b")}, true}, // b starts waiting
		{rowsMsg{rows: rows("a", "b")}, false},
		{rowsMsg{rows: rows()}, false},        // answered
		{rowsMsg{rows: rows("b", "c")}, true}, // two start: one bell
	} {
		if got := rang(u, step.msg); got != step.want {
			t.Errorf("step %d: bell %v, want %v", i, got, step.want)
		}
	}
	quiet := newUI(context.Background(), nil, Options{})
	rang(quiet, rowsMsg{rows: rows()})
	if rang(quiet, rowsMsg{rows: rows("a")}) {
		t.Errorf("the bell rang without Options.Bell")
	}
}
