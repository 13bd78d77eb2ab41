package worker

import (
	"time"
)

// Keys of the metadata object where a worker's supervisor records what its agent is doing,
// from the agent profile's screen patterns (the Python tool ignores and keeps them).
const (
	MetaProfile       = "profile"        // the agent profile that watches the screen
	MetaActivity      = "activity"       // busy, waiting or idle
	MetaActivitySince = "activity_since" // when it became so, local time as "started"
	MetaReadyAt       = "ready_at"       // when the ready pattern was first seen
	// MetaWaitingInput is since when the agent waits for input (its supervisor saw it blocked
	// reading its terminal at a prompt); absent while it does not.
	MetaWaitingInput = "waiting_input"
)

// Activities a supervisor records.
const (
	ActivityBusy    = "busy"    // a busy pattern shows, or the screen keeps changing
	ActivityWaiting = "waiting" // the agent asks the person something (a waiting pattern)
	ActivityIdle    = "idle"    // none of these: the screen is still
)

// Activity is what a supervised worker's agent is doing, as its supervisor last recorded it.
type Activity struct {
	State string    // ActivityBusy, ActivityWaiting or ActivityIdle
	Since time.Time // zero when not recorded
	// Ready is when the ready pattern was first seen; zero before.
	Ready time.Time
}

// Activity returns the worker's recorded activity, and false when there is none (a worker
// the Python tool started, or whose agent has not shown anything yet).
func (x *Worker) Activity() (Activity, bool) {
	var a Activity
	var since, ready string
	if x.Meta(MetaReadyAt, &ready) {
		a.Ready, _ = ParseTimestamp(ready)
	}
	if !x.Meta(MetaActivity, &a.State) || a.State == "" {
		return a, false
	}
	if x.Meta(MetaActivitySince, &since) {
		a.Since, _ = ParseTimestamp(since)
	}
	return a, true
}

// SetActivity records state as the worker's activity since at (unchanged when it is already
// the recorded one) and, when ready, the first time its agent showed ready.
func (x *Worker) SetActivity(state string, ready bool, at time.Time) {
	if ready && !x.Metadata.Has(MetaReadyAt) {
		x.Metadata = x.Metadata.SetValue(MetaReadyAt, Timestamp(at))
	}
	if state == "" {
		return
	}
	var cur string
	if x.Meta(MetaActivity, &cur) && cur == state {
		return
	}
	x.Metadata = x.Metadata.SetValue(MetaActivity, state).SetValue(MetaActivitySince, Timestamp(at))
}

// Describe says the activity as ls shows it: "busy", "waiting for input", "idle 12m" (how long
// the screen has been still, as Age says durations).
func (a Activity) Describe(now time.Time) string {
	switch a.State {
	case ActivityBusy:
		return "busy"
	case ActivityWaiting:
		return "waiting for input"
	case ActivityIdle:
		if a.Since.IsZero() {
			return "idle"
		}
		return "idle " + Age(a.Since, now)
	}
	return a.State
}

// WaitingInput is since when the worker's agent waits for input, as its supervisor last
// recorded it; zero when it does not.
func (x *Worker) WaitingInput() time.Time {
	var since string
	if !x.Meta(MetaWaitingInput, &since) {
		return time.Time{}
	}
	t, _ := ParseTimestamp(since)
	return t
}

// SetWaitingInput records that the agent waits for input since at, or (waiting false) that
// it does not; a wait already recorded keeps its start.
func (x *Worker) SetWaitingInput(waiting bool, at time.Time) {
	switch {
	case !waiting:
		x.Metadata = x.Metadata.Delete(MetaWaitingInput)
	case !x.Metadata.Has(MetaWaitingInput):
		x.Metadata = x.Metadata.SetValue(MetaWaitingInput, Timestamp(at))
	}
}
