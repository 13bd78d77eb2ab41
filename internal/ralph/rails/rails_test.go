package rails

import (
	"math"
	"strings"
	"testing"
)

func usd(v float64) *float64 { return &v }

// TestEqual: rails are compared by value, the budget by its amount, nil the same as none.
func TestEqual(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b *Rails
		want bool
	}{
		{"nil and nil", nil, nil, true},
		{"nil and none", nil, &Rails{}, true},
		{"same budget, two pointers", &Rails{BudgetUSD: usd(2)}, &Rails{BudgetUSD: usd(2)}, true},
		{"another budget", &Rails{BudgetUSD: usd(2)}, &Rails{BudgetUSD: usd(3)}, false},
		{"a budget and none", &Rails{BudgetUSD: usd(0)}, nil, false},
		{"hard budget", &Rails{BudgetUSD: usd(1), HardBudget: true}, &Rails{BudgetUSD: usd(1)}, false},
		{"calls", &Rails{MaxCallsPerHour: 3}, &Rails{MaxCallsPerHour: 4}, false},
		{"hook", &Rails{OnEvent: "notify"}, &Rails{OnEvent: "notify"}, true},
		{"commit each", &Rails{CommitEach: true}, nil, false},
		{"timeouts", &Rails{IterationTimeoutSeconds: 60}, &Rails{IterationTimeoutSeconds: 60, InactivityTimeoutSeconds: 5}, false},
	} {
		if got := c.a.Equal(c.b); got != c.want {
			t.Errorf("%s: Equal = %v, want %v", c.name, got, c.want)
		}
		if got := c.b.Equal(c.a); got != c.want {
			t.Errorf("%s (turned round): Equal = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestClone: a clone shares nothing: raising its budget leaves the original's as it was (a
// monitor's held rails must not move when the state's copy is changed).
func TestClone(t *testing.T) {
	var none *Rails
	if none.Clone() != nil {
		t.Error("Clone of nil rails is not nil")
	}
	r := &Rails{BudgetUSD: usd(1), MaxCallsPerHour: 2, OnEvent: "x"}
	c := r.Clone()
	if !c.Equal(r) {
		t.Fatalf("Clone = %+v, want %+v", c, r)
	}
	*c.BudgetUSD = 100
	c.MaxCallsPerHour = 0
	if *r.BudgetUSD != 1 || r.MaxCallsPerHour != 2 {
		t.Errorf("changing the clone changed the original: %+v, budget %v", r, *r.BudgetUSD)
	}
}

// TestCheck: rails that are not sound are refused with the flag to fix.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *Rails
		want string // "" : sound
	}{
		{"nil", nil, ""},
		{"none", &Rails{}, ""},
		{"budget", &Rails{BudgetUSD: usd(2.5), HardBudget: true, MaxCallsPerHour: 10, OnEvent: "notify-send ralph"}, ""},
		{"zero budget", &Rails{BudgetUSD: usd(0)}, ""},
		{"negative budget", &Rails{BudgetUSD: usd(-1)}, "--budget -1: give an amount in USD"},
		{"NaN budget", &Rails{BudgetUSD: usd(math.NaN())}, "--budget NaN"},
		{"infinite budget", &Rails{BudgetUSD: usd(math.Inf(1))}, "--budget +Inf"},
		{"hard without budget", &Rails{HardBudget: true}, "--hard-budget needs --budget USD"},
		{"negative calls", &Rails{MaxCallsPerHour: -1}, "--max-calls-per-hour -1: a whole number"},
		{"hook with an open quote", &Rails{OnEvent: "notify 'x"}, "on-event"},
	} {
		err := c.r.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Check = %v, want sound", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Check = %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestGuarded: a budget or a hook is what an agent must not reach; calls and commits are not.
func TestGuarded(t *testing.T) {
	for _, c := range []struct {
		r    *Rails
		want bool
	}{
		{nil, false},
		{&Rails{MaxCallsPerHour: 3, CommitEach: true}, false},
		{&Rails{BudgetUSD: usd(0)}, true},
		{&Rails{OnEvent: "x"}, true},
	} {
		if got := c.r.Guarded(); got != c.want {
			t.Errorf("Guarded(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestBudget: the budget is reached once what was spent is at it (not only above); a hard
// budget is one with an amount.
func TestBudget(t *testing.T) {
	for _, c := range []struct {
		name          string
		r             *Rails
		spent         float64
		reached, hard bool
	}{
		{"no rails", nil, 1e9, false, false},
		{"no budget", &Rails{MaxCallsPerHour: 1}, 1e9, false, false},
		{"under", &Rails{BudgetUSD: usd(1)}, 0.99, false, false},
		{"at", &Rails{BudgetUSD: usd(1)}, 1, true, false},
		{"over", &Rails{BudgetUSD: usd(1)}, 1.2, true, false},
		{"zero budget, nothing spent", &Rails{BudgetUSD: usd(0)}, 0, true, false},
		{"hard, under", &Rails{BudgetUSD: usd(1), HardBudget: true}, 0.5, false, true},
		{"hard, at", &Rails{BudgetUSD: usd(1), HardBudget: true}, 1, true, true},
		{"hard without an amount", &Rails{HardBudget: true}, 5, false, false},
	} {
		if got := c.r.Reached(c.spent); got != c.reached {
			t.Errorf("%s: Reached(%v) = %v, want %v", c.name, c.spent, got, c.reached)
		}
		if got := c.r.Hard(); got != c.hard {
			t.Errorf("%s: Hard = %v, want %v", c.name, got, c.hard)
		}
	}
}

// TestMoney: the loops show 4 decimals under a cent, the queue always 2.
func TestMoney(t *testing.T) {
	for _, c := range []struct {
		v              float64
		money, dollars string
	}{
		{0, "0.00", "0.00"},
		{0.004, "0.0040", "0.00"},
		{0.0123, "0.01", "0.01"},
		{1.2, "1.20", "1.20"},
		{1234.567, "1234.57", "1234.57"},
	} {
		if got := Money(c.v); got != c.money {
			t.Errorf("Money(%v) = %q, want %q", c.v, got, c.money)
		}
		if got := Dollars(c.v); got != c.dollars {
			t.Errorf("Dollars(%v) = %q, want %q", c.v, got, c.dollars)
		}
	}
}

// TestHook: the rails' hook runs where and with what it is given; no command, no hook; a
// command that cannot be split is an error.
func TestHook(t *testing.T) {
	var none *Rails
	if h, err := none.Hook("/x", nil, nil); h != nil || err != nil {
		t.Errorf("nil rails: Hook = %v, %v; want none", h, err)
	}
	if h, err := (&Rails{BudgetUSD: usd(1)}).Hook("/x", nil, nil); h != nil || err != nil {
		t.Errorf("no --on-event: Hook = %v, %v; want none", h, err)
	}
	warned := false
	h, err := (&Rails{OnEvent: "notify --to 'a b'"}).Hook("/work", []string{"A=1"}, func(error) { warned = true })
	if err != nil || h == nil {
		t.Fatalf("Hook = %v, %v", h, err)
	}
	if strings.Join(h.Argv, "|") != "notify|--to|a b" || h.Dir != "/work" || len(h.Env) != 1 || h.Warn == nil {
		t.Errorf("Hook = argv %q, dir %q, env %q; want the command split, run in /work with A=1", h.Argv, h.Dir, h.Env)
	}
	h.Warn(nil)
	if !warned {
		t.Error("the hook's warnings do not reach the caller")
	}
	if _, err := (&Rails{OnEvent: "notify 'open"}).Hook("/x", nil, nil); err == nil {
		t.Error("a command with an open quote: no error")
	}
}
