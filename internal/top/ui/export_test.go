package ui

import (
	"context"

	tea "charm.land/bubbletea/v2"
	"github.com/agentfleet/fleet/internal/top"
)

// Driver drives the UI's model as bubbletea would, one message at a time, for package ui_test's
// tests (which have the lab: the binaries, real workers): keys in, the commands an action
// returns run and their messages fed back, the screen and status read.
type Driver struct{ u *ui }

// NewDriver is a UI of m at 100×30, its rows read once.
func NewDriver(ctx context.Context, m *top.Model, o Options) *Driver {
	d := &Driver{u: newUI(ctx, m, o)}
	d.u.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	d.Refresh()
	return d
}

// Refresh reads the rows again, as a state file's change does.
func (d *Driver) Refresh() {
	d.u.refreshing = false
	d.Run(d.u.refresh())
}

// Run runs cmd and feeds its message back, and so on for the command that one returns (a
// done action's refresh); a batch (the UI's timers and listeners) is not run.
func (d *Driver) Run(cmd tea.Cmd) {
	for cmd != nil {
		msg := cmd()
		if msg == nil {
			return
		}
		if _, ok := msg.(tea.BatchMsg); ok {
			return
		}
		_, cmd = d.u.Update(msg)
	}
}

// Key presses a key ("D", "enter", "esc", "down", ...) and runs what it starts.
func (d *Driver) Key(k string) {
	msg := tea.KeyPressMsg{Text: k}
	switch k {
	case "enter":
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		msg = tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		msg = tea.KeyPressMsg{Code: tea.KeyUp}
	default:
		msg.Code = []rune(k)[0]
	}
	_, cmd := d.u.Update(msg)
	d.Run(cmd)
}

// Type types text at a prompt, a key a character.
func (d *Driver) Type(text string) {
	for _, r := range text {
		d.u.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// Select selects the row of this machine called name, and reports whether there is one.
func (d *Driver) Select(name string) bool {
	for i, r := range d.u.rows {
		if r.Name == name && r.Host == "" {
			d.u.cursor = i
			d.u.clamp()
			return true
		}
	}
	return false
}

// SetRows shows rows as a refresh would (a host's rows, which no lab host gives here).
func (d *Driver) SetRows(rows []*top.Row) { d.u.Update(rowsMsg{rows: rows}) }

// Screen is what the UI draws; Message its last word on an action.
func (d *Driver) Screen() string  { return d.u.render() }
func (d *Driver) Message() string { return d.u.message }

// DiffTop is the diff pane's first line shown, DiffLen its lines (-1: no diff pane).
func (d *Driver) DiffTop() int { return d.u.diffTop }
func (d *Driver) DiffLen() int {
	if d.u.mode != modeDiff || d.u.diff == nil {
		return -1
	}
	return len(d.u.diffLines())
}

// SelectOn selects host's row called name, and reports whether there is one.
func (d *Driver) SelectOn(host, name string) bool {
	for i, r := range d.u.rows {
		if r.Name == name && r.Host == host {
			d.u.cursor = i
			d.u.clamp()
			return true
		}
	}
	return false
}
