package main

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	ucli "github.com/urfave/cli/v2"
)

// defaultIterationTimeout bounds each iteration of an AIWG loop, as DISPATCH_WATCH_TIMEOUT's
// 3600 s bounds each task of the queue: with --timeout none a hung agent no longer hangs the
// loop.
const defaultIterationTimeout = 60 * time.Minute

// railsFlags are ralph start's rails (issue 19), named as swarm's loops' and the queue's.
func railsFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "iteration-timeout"},
		&ucli.StringFlag{Name: "inactivity-timeout"},
		&ucli.StringFlag{Name: "budget"},
		&ucli.BoolFlag{Name: "hard-budget"},
		&ucli.StringFlag{Name: "max-calls-per-hour"},
		&ucli.StringFlag{Name: "on-event"},
		&ucli.BoolFlag{Name: "commit-each"},
	}
}

// railsOf reads ralph start's rails.
func railsOf(c *ucli.Context) (aiwg.Rails, error) {
	r := aiwg.Rails{IterationTimeoutSeconds: int64(defaultIterationTimeout / time.Second)}
	if c.IsSet("iteration-timeout") {
		d, err := parseTimeout(c.String("iteration-timeout"))
		if err != nil {
			return r, cli.Usagef("--iteration-timeout %q: give minutes or a duration like 90s, 30m, 1h30m (none: only the loop's --timeout)", c.String("iteration-timeout"))
		}
		r.IterationTimeoutSeconds = int64(d / time.Second)
	}
	if c.IsSet("inactivity-timeout") {
		v := strings.TrimSpace(c.String("inactivity-timeout"))
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
	if c.IsSet("budget") {
		b, err := budgetFlag(c)
		if err != nil {
			return r, err
		}
		r.BudgetUSD = b
	} else if c.Bool("hard-budget") {
		return r, cli.Usagef("--hard-budget needs --budget USD")
	}
	r.HardBudget = c.Bool("hard-budget")
	if c.IsSet("max-calls-per-hour") {
		n, err := strconv.Atoi(strings.TrimSpace(c.String("max-calls-per-hour")))
		if err != nil || n < 0 {
			return r, cli.Usagef("--max-calls-per-hour %q: give a whole number of agent starts an hour (0: no limit)", c.String("max-calls-per-hour"))
		}
		r.MaxCallsPerHour = n
	}
	if c.IsSet("on-event") {
		if _, err := hook.New(c.String("on-event")); err != nil {
			return r, cli.Usagef("%v", err)
		}
		r.OnEvent = strings.TrimSpace(c.String("on-event"))
	}
	r.CommitEach = c.Bool("commit-each")
	return r, nil
}

// budgetFlag reads --budget USD, as ralph queue run reads it.
func budgetFlag(c *ucli.Context) (*float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(c.String("budget")), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, cli.Usagef("--budget %q: give an amount in USD, like 5 or 2.50", c.String("budget"))
	}
	return &v, nil
}
