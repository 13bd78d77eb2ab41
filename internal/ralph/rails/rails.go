// Package rails is what keeps an agent that runs unattended on its rails: a budget (and a hard
// budget), a number of agent starts per hour, a hook told each transition, a commit after each
// iteration, and a seal that keeps them outside the agent's reach. Swarm's loops (internal/ralph/loop), AIWG's loops
// (internal/ralph/aiwg) and the queue (internal/ralph/queue/runner) each hold one Rails and
// apply it with the rules here; each keeps its own state file, seal file, messages and waits,
// which are compatibility contracts this package does not write.
//
// The rule all three follow: the agent can write its workspace, and a loop's state file is one
// it can reach, so what decides the outcome (the rails, what was spent, where the tree started)
// is held in memory by the loop's controller and kept in a seal outside the workspace; a copy
// shown in a state file is never believed, and is put back when it says otherwise.
package rails

import (
	"fmt"
	"math"
	"strconv"

	"github.com/agentfleet/fleet/internal/ralph/hook"
)

// Rails are an unattended agent's limits, as a person set them (ralph start's, ralph loop
// spawn's and ralph queue run's flags). Its JSON is the "rails" object of both loops' state
// files and seals: every field is left out when it is zero, so a swarm loop's rails (which
// have no timeouts) read and write as they always did.
type Rails struct {
	// IterationTimeoutSeconds stops an iteration's agent that ran that long (0: none).
	// InactivityTimeoutSeconds stops one that printed nothing for that long (0: never).
	// AIWG's loops have them; a swarm loop's timeouts are its spawn's own flags.
	IterationTimeoutSeconds  int64 `json:"iteration_timeout_seconds,omitempty"`
	InactivityTimeoutSeconds int64 `json:"inactivity_timeout_seconds,omitempty"`
	// BudgetUSD, when set, is what may be spent: no agent starts once the cost reached it
	// (Reached). HardBudget also stops the agent at work once the cost so far, with what it
	// reports while it runs, reaches it (Hard).
	BudgetUSD  *float64 `json:"budget_usd,omitempty"`
	HardBudget bool     `json:"hard_budget,omitempty"`
	// MaxCallsPerHour, when not 0, is how many times the agent may be started within an hour
	// (Calls): the next start waits, it never fails.
	MaxCallsPerHour int `json:"max_calls_per_hour,omitempty"`
	// OnEvent is the --on-event command (internal/ralph/hook), told each transition.
	OnEvent string `json:"on_event,omitempty"`
	// CommitEach commits the working tree after each iteration (Commit).
	CommitEach bool `json:"commit_each,omitempty"`
}

// Equal reports whether r and o are the same rails, the budget compared by its amount; nil is
// no rails, the same as zero ones.
func (r *Rails) Equal(o *Rails) bool {
	var a, b Rails
	if r != nil {
		a = *r
	}
	if o != nil {
		b = *o
	}
	if (a.BudgetUSD == nil) != (b.BudgetUSD == nil) || a.BudgetUSD != nil && *a.BudgetUSD != *b.BudgetUSD {
		return false
	}
	a.BudgetUSD, b.BudgetUSD = nil, nil
	return a == b
}

// Clone is a copy of r that shares nothing with it (nil for nil).
func (r *Rails) Clone() *Rails {
	if r == nil {
		return nil
	}
	x := *r
	if r.BudgetUSD != nil {
		v := *r.BudgetUSD
		x.BudgetUSD = &v
	}
	return &x
}

// Check refuses rails that are not sound: a budget that is no amount, a hard budget without
// one, a negative number of calls, a hook that is no command. nil rails are sound.
func (r *Rails) Check() error {
	if r == nil {
		return nil
	}
	if b := r.BudgetUSD; b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0) || *b < 0) {
		return fmt.Errorf("--budget %v: give an amount in USD, like 5 or 2.50", *b)
	}
	if r.HardBudget && r.BudgetUSD == nil {
		return fmt.Errorf("--hard-budget needs --budget USD")
	}
	if r.MaxCallsPerHour < 0 {
		return fmt.Errorf("--max-calls-per-hour %d: a whole number, 0 or more (0: no limit)", r.MaxCallsPerHour)
	}
	if _, err := hook.New(r.OnEvent); err != nil {
		return err
	}
	return nil
}

// Guarded says whether r holds something the agent must not be able to change by writing a
// file it can reach: a budget or a hook.
func (r *Rails) Guarded() bool { return r != nil && (r.BudgetUSD != nil || r.OnEvent != "") }

// Hook is the rails' --on-event hook (internal/ralph/hook), run in dir with env, what goes
// wrong with it told to warn; nil without one. A command that cannot be split is an error
// (Check refuses it before a loop starts).
func (r *Rails) Hook(dir string, env []string, warn func(error)) (*hook.Hook, error) {
	if r == nil || r.OnEvent == "" {
		return nil, nil
	}
	h, err := hook.New(r.OnEvent)
	if err != nil {
		return nil, err
	}
	h.Dir, h.Env, h.Warn = dir, env, warn
	return h, nil
}

// Reached says whether spent reached the budget (false without one): no agent starts any more.
func (r *Rails) Reached(spent float64) bool {
	return r != nil && r.BudgetUSD != nil && spent >= *r.BudgetUSD
}

// Hard says whether the budget is a hard one: the agent at work is also stopped once what was
// spent and what it reports so far reach it (Reached of their sum). The caller reads what the
// agent reports only then: it is a read of the agent's output.
func (r *Rails) Hard() bool { return r != nil && r.HardBudget && r.BudgetUSD != nil }

// Money is a cost as a loop's status and log show it: 2 decimals, 4 under a cent (so that a
// cheap iteration does not show as $0.00).
func Money(v float64) string {
	if v != 0 && v < 0.01 {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Dollars is a cost as the queue prints it: always 2 decimals.
func Dollars(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
