package agent

import "time"

// Usage is what an agent's output says about what it spent and whether it hit a limit.
type Usage struct {
	// CostUSD is the cost the agent reported (claude -p --output-format json: total_cost_usd;
	// others: the profile's cost pattern). HasCost says whether it reported one.
	CostUSD float64
	HasCost bool
	// InputTokens and OutputTokens as the agent reported them (0: not reported).
	InputTokens, OutputTokens int64
}

// ParseUsage reads cost and tokens from an agent's output (the whole of a headless run's
// stdout, or a screen's text). Lead-owned: being implemented.
func (p *Profile) ParseUsage(output []byte) Usage { return Usage{} }

// UsageLimit tells whether text (a screen, or a headless run's output) shows a usage-limit or
// rate-limit message of the agent (patterns in its profile), and when the limit resets
// (zero when the message names no time; the caller then waits a default). Lead-owned: being
// implemented.
func (p *Profile) UsageLimit(text string, now time.Time) (limited bool, resetAt time.Time) {
	return false, time.Time{}
}
