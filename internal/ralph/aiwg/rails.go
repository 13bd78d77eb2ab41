package aiwg

import (
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/rails"
)

// A loop's rails beyond its iteration cap and its time (issue 19): a per-iteration timeout, an
// inactivity timeout (no output for D), a budget, a number of calls per hour, and a hook told
// each transition. Start and Resume (a person's options) keep them in the loop's seal, outside
// the workspace, with the controller's ledger (what the loop spent, when its agent was
// started); the controller takes them from there, never from state.json, which the agent can
// write: state.json shows them (rails, metrics.total_cost_usd), and the controller puts its own
// back whenever the state says others (holdRails). A loop without a seal (no SealDir) holds
// those its controller first read, in memory.

// A loop's rails, as ralph start's flags give them, are a rails.Rails, which swarm's loops and
// the queue hold too. Its timeouts stop an iteration's agent (the iteration
// counts, failed, and the loop goes on); its budget pauses the loop (reason budget; ralph
// resume --budget raises it); its calls per hour pause it until the oldest call is an hour old
// (reason calls-per-hour); its CommitEach commits after each iteration that counts.

// Pause reasons of the rails: a budget waits for a person (ralph resume --budget), the calls
// per hour for the clock (the controller goes on at resume_at by itself).
const (
	PauseBudget = "budget"
	PauseCalls  = "calls-per-hour"
)

// railsOf is st's rails (none when it has none).
func railsOf(st *State) rails.Rails {
	if st.Rails == nil {
		return rails.Rails{}
	}
	return *st.Rails.Clone()
}

// selfResuming reports whether a loop paused for reason goes on by itself at resume_at.
func selfResuming(reason string) bool { return reason == PauseUsageLimit || reason == PauseCalls }

// ledger is what the controller keeps of the loop outside the agent's reach: its rails, what
// it spent and when its agent was started.
type ledger struct {
	rails rails.Rails
	spent float64
	calls rails.Calls // its Max is the rails' (callsFull)
	// seal is the loop's seal, nil without one (the ledger then lives in memory only).
	seal *seal
}

// fromSeal takes the rails and the ledger from s.
func (l *ledger) fromSeal(s *seal) {
	l.seal, l.rails = s, s.Rails
	l.spent = max(l.spent, s.SpentUSD)
	var calls []time.Time
	for _, c := range s.Calls {
		if t, ok := parseStamp(c); ok {
			calls = append(calls, t)
		}
	}
	l.calls.Load(calls)
}

// refresh reads the seal again (Resume may have raised the budget or changed the calls per
// hour while this controller waited); the caller holds the lock.
func (c *controller) refresh() {
	if c.ledger.seal == nil {
		return
	}
	s, ok, err := c.ws.readSeal(c.rt, c.id)
	if err != nil || !ok {
		return // the last one read holds
	}
	calls := c.ledger.calls.Times()
	c.ledger.fromSeal(s)
	if len(calls) > c.ledger.calls.Len() {
		c.ledger.calls.Load(calls)
	}
}

// saveLedger writes the ledger into the seal (nothing without one); the caller holds the lock.
// A seal that cannot be written is said in the log: the ledger in memory still holds.
func (c *controller) saveLedger() {
	s := c.ledger.seal
	if s == nil {
		return
	}
	s.Rails, s.SpentUSD, s.Calls = c.ledger.rails, c.ledger.spent, nil
	for _, t := range c.ledger.calls.Times() {
		s.Calls = append(s.Calls, stamp(t))
	}
	if err := c.ws.storeSeal(c.rt, s); err != nil {
		fmt.Fprintf(c.log, "ralph: warning: loop %s: its ledger (cost, calls) could not be kept: %v\n", c.id, err)
	}
}

// holdRails puts the controller's rails and spent total back into st when st says others (the
// agent wrote them), with a line in the log; a total in st above the ledger's (a crashed loop's
// in-flight iteration, counted at resume) is taken. It reports whether it changed st.
func (c *controller) holdRails(st *State) bool {
	changed := false
	if !st.Rails.Equal(&c.ledger.rails) {
		if st.Rails != nil || c.ledger.rails != (rails.Rails{}) {
			fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json's rails (budget, calls, timeouts, hook) were changed behind the controller's back; the loop's own are kept\n", c.id)
		}
		r := c.ledger.rails
		st.Rails = &r
		if r == (rails.Rails{}) {
			st.Rails = nil
		}
		changed = true
	}
	switch spent := st.Metrics.TotalCostUSD; {
	case spent < c.ledger.spent-1e-9:
		fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json's total cost was lowered behind the controller's back ($%.4f); the loop's own $%.4f is kept\n", c.id, spent, c.ledger.spent)
		st.Metrics.TotalCostUSD = c.ledger.spent
		changed = true
	case spent > c.ledger.spent:
		c.ledger.spent = spent
	}
	return changed
}

// budgetReached reports whether the loop spent its budget.
func (c *controller) budgetReached() bool {
	return c.ledger.rails.Reached(c.ledger.spent)
}

// callsFull reports whether the agent was started MaxCallsPerHour times within the hour
// before now, and when the oldest of those leaves the hour. Older calls are forgotten.
func (c *controller) callsFull(now time.Time) (time.Time, bool) {
	c.ledger.calls.Max = c.ledger.rails.MaxCallsPerHour
	return c.ledger.calls.Full(now)
}

// spend counts what iteration it cost into the ledger.
func (c *controller) spend(it Iteration) {
	if it.CostUSD != nil {
		c.ledger.spent += *it.CostUSD
	}
}

// event tells the loop's hook of a transition (nothing without one).
func (c *controller) event(name string, st *State, iteration int, reason, log string) {
	if c.hook == nil {
		return
	}
	spent := c.ledger.spent
	c.hook.Send(hook.Event{Kind: "aiwg", Event: name, Loop: c.id, Iteration: iteration, Status: st.Status,
		Reason: reason, CostUSD: &spent, Log: log})
}

// startHook makes the loop's hook from its rails, the workspace its directory; a command that
// cannot be split is said in the log, and the loop runs without it.
func (c *controller) startHook() {
	h, err := c.ledger.rails.Hook(c.ws.Root, c.rt.Env, func(err error) {
		fmt.Fprintf(c.log, "%s ralph: warning: loop %s: %v\n", stamp(time.Now()), c.id, err)
	})
	if err != nil {
		fmt.Fprintf(c.log, "ralph: warning: loop %s: %v; the loop runs without its hook\n", c.id, err)
		return
	}
	c.hook = h
}
