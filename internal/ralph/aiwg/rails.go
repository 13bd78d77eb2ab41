package aiwg

import (
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/hook"
)

// A loop's rails beyond its iteration cap and its time (issue 19): a per-iteration timeout, an
// inactivity timeout (no output for D), a budget, a number of calls per hour, and a hook told
// each transition. Start and Resume (a person's options) keep them in the loop's seal, outside
// the workspace, with the controller's ledger (what the loop spent, when its agent was
// started); the controller takes them from there, never from state.json, which the agent can
// write: state.json shows them (rails, metrics.total_cost_usd), and the controller puts its own
// back whenever the state says others (holdRails). A loop without a seal (no SealDir) holds
// those its controller first read, in memory.

// Rails are a loop's rails, as ralph start's flags give them.
type Rails struct {
	// IterationTimeoutSeconds stops an iteration's agent that ran that long (0: none but the
	// loop's time). The iteration counts, failed, and the loop goes on.
	IterationTimeoutSeconds int64 `json:"iteration_timeout_seconds,omitempty"`
	// InactivityTimeoutSeconds stops an iteration's agent that printed nothing for that long
	// (0: never). The iteration counts, failed, and the loop goes on.
	InactivityTimeoutSeconds int64 `json:"inactivity_timeout_seconds,omitempty"`
	// BudgetUSD, when set, is what the loop may spend: no iteration starts once its cost
	// reached it (the loop pauses, reason budget; ralph resume --budget raises it). HardBudget
	// also stops the agent at work once its cost so far, as its output reports it, reaches it.
	BudgetUSD  *float64 `json:"budget_usd,omitempty"`
	HardBudget bool     `json:"hard_budget,omitempty"`
	// MaxCallsPerHour, when not 0, is how many times the agent may be started within an hour:
	// the next iteration waits (paused, reason calls-per-hour) until the oldest is an hour old.
	MaxCallsPerHour int `json:"max_calls_per_hour,omitempty"`
	// OnEvent is the --on-event command (internal/ralph/hook), told each transition.
	OnEvent string `json:"on_event,omitempty"`
	// CommitEach commits the working tree after each iteration that counts (checkpoint.Commit).
	CommitEach bool `json:"commit_each,omitempty"`
}

// Pause reasons of the rails: a budget waits for a person (ralph resume --budget), the calls
// per hour for the clock (the controller goes on at resume_at by itself).
const (
	PauseBudget = "budget"
	PauseCalls  = "calls-per-hour"
)

// equal reports whether r and o are the same rails.
func (r Rails) equal(o Rails) bool {
	if (r.BudgetUSD == nil) != (o.BudgetUSD == nil) || r.BudgetUSD != nil && *r.BudgetUSD != *o.BudgetUSD {
		return false
	}
	r.BudgetUSD, o.BudgetUSD = nil, nil
	return r == o
}

// railsOf is st's rails (none when it has none).
func railsOf(st *State) Rails {
	if st.Rails == nil {
		return Rails{}
	}
	r := *st.Rails
	if r.BudgetUSD != nil {
		b := *r.BudgetUSD
		r.BudgetUSD = &b
	}
	return r
}

// selfResuming reports whether a loop paused for reason goes on by itself at resume_at.
func selfResuming(reason string) bool { return reason == PauseUsageLimit || reason == PauseCalls }

// ledger is what the controller keeps of the loop outside the agent's reach: its rails, what
// it spent and when its agent was started.
type ledger struct {
	rails Rails
	spent float64
	calls []time.Time
	// seal is the loop's seal, nil without one (the ledger then lives in memory only).
	seal *seal
}

// fromSeal takes the rails and the ledger from s.
func (l *ledger) fromSeal(s *seal) {
	l.seal, l.rails = s, s.Rails
	l.spent = max(l.spent, s.SpentUSD)
	l.calls = l.calls[:0]
	for _, c := range s.Calls {
		if t, ok := parseStamp(c); ok {
			l.calls = append(l.calls, t)
		}
	}
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
	calls := c.ledger.calls
	c.ledger.fromSeal(s)
	if len(calls) > len(c.ledger.calls) {
		c.ledger.calls = calls
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
	for _, t := range c.ledger.calls {
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
	if !railsOf(st).equal(c.ledger.rails) {
		if st.Rails != nil || c.ledger.rails != (Rails{}) {
			fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json's rails (budget, calls, timeouts, hook) were changed behind the controller's back; the loop's own are kept\n", c.id)
		}
		r := c.ledger.rails
		st.Rails = &r
		if r == (Rails{}) {
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
	b := c.ledger.rails.BudgetUSD
	return b != nil && c.ledger.spent >= *b
}

// callsFull reports whether the agent was started MaxCallsPerHour times within the hour
// before now, and when the oldest of those leaves the hour. Older calls are forgotten.
func (c *controller) callsFull(now time.Time) (time.Time, bool) {
	calls := c.ledger.calls[:0]
	for _, t := range c.ledger.calls {
		if now.Sub(t) < time.Hour {
			calls = append(calls, t)
		}
	}
	c.ledger.calls = calls
	n := c.ledger.rails.MaxCallsPerHour
	if n <= 0 || len(calls) < n {
		return time.Time{}, false
	}
	return calls[len(calls)-n].Add(time.Hour), true
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
	cmd := c.ledger.rails.OnEvent
	if cmd == "" {
		return
	}
	h, err := hook.New(cmd)
	if err != nil {
		fmt.Fprintf(c.log, "ralph: warning: loop %s: %v; the loop runs without its hook\n", c.id, err)
		return
	}
	h.Dir, h.Env = c.ws.Root, c.rt.Env
	h.Warn = func(err error) { fmt.Fprintf(c.log, "%s ralph: warning: loop %s: %v\n", stamp(time.Now()), c.id, err) }
	c.hook = h
}
