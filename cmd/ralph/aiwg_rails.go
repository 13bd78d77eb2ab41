package main

import (
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	ucli "github.com/urfave/cli/v2"
)

// defaultIterationTimeout bounds each iteration of an AIWG loop, as DISPATCH_WATCH_TIMEOUT's
// 3600 s bounds each task of the queue: with --timeout none a hung agent no longer hangs the
// loop.
const defaultIterationTimeout = 60 * time.Minute

// railsOptions are ralph start's rails (issue 19), named as swarm's loops' and the queue's,
// as typed: rails reads them.
type railsOptions struct {
	iterationTimeout, inactivityTimeout givenString
	budget, maxCallsPerHour, onEvent    givenString
	hardBudget, commitEach              bool
}

// AddFlags appends the rails flags, each writing into o, to flags.
func (o *railsOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		o.iterationTimeout.flag("iteration-timeout"),
		o.inactivityTimeout.flag("inactivity-timeout"),
		o.budget.flag("budget"),
		&ucli.BoolFlag{Name: "hard-budget", Destination: &o.hardBudget},
		o.maxCallsPerHour.flag("max-calls-per-hour"),
		o.onEvent.flag("on-event"),
		&ucli.BoolFlag{Name: "commit-each", Destination: &o.commitEach},
	)
}

// rails reads ralph start's rails.
func (o *railsOptions) rails() (rails.Rails, error) {
	r := rails.Rails{IterationTimeoutSeconds: int64(defaultIterationTimeout / time.Second)}
	if o.iterationTimeout.given {
		d, err := parseTimeout(o.iterationTimeout.value)
		if err != nil {
			return r, cli.Usagef("--iteration-timeout %q: give minutes or a duration like 90s, 30m, 1h30m (none: only the loop's --timeout)", o.iterationTimeout.value)
		}
		r.IterationTimeoutSeconds = int64(d / time.Second)
	}
	if o.inactivityTimeout.given {
		v := strings.TrimSpace(o.inactivityTimeout.value)
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			d, derr := time.ParseDuration(v)
			secs, err = int64(d/time.Second), derr
			if err == nil && d > 0 && d < time.Second {
				err = strconv.ErrRange
			}
		}
		if err != nil || secs < 0 || secs > 1<<31 {
			return r, cli.Usagef("--inactivity-timeout %q: give seconds, or a duration like 90s or 5m (0: never)", v)
		}
		r.InactivityTimeoutSeconds = secs
	}
	if o.budget.given {
		b, err := budgetFlag(o.budget.value)
		if err != nil {
			return r, err
		}
		r.BudgetUSD = b
	} else if o.hardBudget {
		return r, cli.Usagef("--hard-budget needs --budget USD")
	}
	r.HardBudget = o.hardBudget
	if o.maxCallsPerHour.given {
		n, err := strconv.Atoi(strings.TrimSpace(o.maxCallsPerHour.value))
		if err != nil || n < 0 {
			return r, cli.Usagef("--max-calls-per-hour %q: give a whole number of agent starts an hour (0: no limit)", o.maxCallsPerHour.value)
		}
		r.MaxCallsPerHour = n
	}
	if o.onEvent.given {
		if _, err := hook.New(o.onEvent.value); err != nil {
			return r, cli.Usagef("%v", err)
		}
		r.OnEvent = strings.TrimSpace(o.onEvent.value)
	}
	r.CommitEach = o.commitEach
	return r, nil
}

// budgetFlag reads --budget USD, v as given, as ralph queue run reads it.
func budgetFlag(v string) (*float64, error) {
	usd, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return nil, cli.Usagef("--budget %q: give an amount in USD, like 5 or 2.50", v)
	}
	return &usd, nil
}
