package agent

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseUsage(t *testing.T) {
	claude := Builtin().Agents["claude"]
	codex := Builtin().Agents["codex"]
	aider := &Profile{Name: "aider", CostPattern: `Cost: \$([0-9.,]+) session`}
	loose := &Profile{Name: "loose", CostPattern: `Cost: \$(\S+) session`}
	tests := []struct {
		name   string
		p      *Profile
		output string
		want   Usage
	}{
		{"claude json", claude,
			`{"type":"result","subtype":"success","is_error":false,"duration_ms":2300,"num_turns":3,"result":"done","session_id":"x","total_cost_usd":0.0425,"usage":{"input_tokens":12,"cache_read_input_tokens":9000,"output_tokens":345}}`,
			Usage{CostUSD: 0.0425, HasCost: true, InputTokens: 12, OutputTokens: 345, NumTurns: 3}},
		// A num_turns that is no whole number is not taken, and costs the result nothing else.
		{"claude json, turns not a number", claude, `{"type":"result","total_cost_usd":0.5,"num_turns":"many"}`,
			Usage{CostUSD: 0.5, HasCost: true}},
		{"claude json, turns out of bounds", claude, `{"type":"result","total_cost_usd":0.5,"num_turns":1e30}`,
			Usage{CostUSD: 0.5, HasCost: true}},
		{"claude json pretty", claude, "{\n  \"type\": \"result\",\n  \"total_cost_usd\": 1.5,\n  \"usage\": {\"input_tokens\": 100, \"output_tokens\": 7}\n}\n",
			Usage{CostUSD: 1.5, HasCost: true, InputTokens: 100, OutputTokens: 7}},
		{"claude stream-json: the result line, not the turns", claude,
			`{"type":"system","subtype":"init"}
{"type":"assistant","message":{"usage":{"input_tokens":5,"output_tokens":5}}}
{"type":"result","total_cost_usd":0.2,"usage":{"input_tokens":50,"output_tokens":60}}
`, Usage{CostUSD: 0.2, HasCost: true, InputTokens: 50, OutputTokens: 60}},
		{"older claude cost_usd", claude, `{"type":"result","cost_usd":0.3}`, Usage{CostUSD: 0.3, HasCost: true}},
		{"text around the JSON", claude, "starting\n" + `{"type":"result","total_cost_usd":0.01,"usage":{"input_tokens":1,"output_tokens":2}}` + "\nbye\n",
			Usage{CostUSD: 0.01, HasCost: true, InputTokens: 1, OutputTokens: 2}},
		{"codex turns summed", codex,
			`{"type":"thread.started","thread_id":"t"}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":50,"output_tokens":10}}
{"type":"turn.completed","usage":{"input_tokens":200,"output_tokens":20}}
`, Usage{InputTokens: 300, OutputTokens: 30}},
		{"cost pattern, last match", aider, "Tokens: 1k sent. Cost: $0.01 session\nmore\nCost: $1,234.50 session\n",
			Usage{CostUSD: 1234.5, HasCost: true}},
		{"nothing", claude, "plain text\nno cost here\n", Usage{}},
		{"broken JSON", claude, `{"type":"result","total_cost_usd":`, Usage{}},
		{"wrong type", claude, `{"type":"result","total_cost_usd":"free"}`, Usage{}},
		{"nil profile", nil, `{"type":"result","total_cost_usd":2}`, Usage{CostUSD: 2, HasCost: true}},
		// A cost the agent reports is not trusted to be a figure: none of these is taken (NaN
		// or Inf would make its record unwritable, a negative one would lower a budget's total).
		{"negative JSON cost", claude, `{"type":"result","total_cost_usd":-1000,"usage":{"input_tokens":1,"output_tokens":2}}`,
			Usage{InputTokens: 1, OutputTokens: 2, RejectedCost: ptr(-1000)}},
		{"NaN by the pattern", loose, "Cost: $NaN session\n", Usage{RejectedCost: ptr(math.NaN())}},
		{"Inf by the pattern", loose, "Cost: $+Inf session\n", Usage{RejectedCost: ptr(math.Inf(1))}},
		{"huge JSON cost: not JSON's", claude, `{"type":"result","total_cost_usd":1e400}`, Usage{}},
		{"negative by the pattern", loose, "Cost: $-5 session\n", Usage{RejectedCost: ptr(-5)}},
	}
	for _, tt := range tests {
		got := tt.p.ParseUsage([]byte(tt.output))
		if !sameUsage(got, tt.want) {
			t.Errorf("%s: ParseUsage(%q) = %+v (rejected %v), want %+v (rejected %v)", tt.name, tt.output, got, deref(got.RejectedCost), tt.want, deref(tt.want.RejectedCost))
		}
	}
}

func ptr(v float64) *float64 { return &v }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// sameUsage compares two usages, their rejected costs by value (NaN equal to NaN).
func sameUsage(a, b Usage) bool {
	ra, rb := a.RejectedCost, b.RejectedCost
	a.RejectedCost, b.RejectedCost = nil, nil
	if a != b || (ra == nil) != (rb == nil) {
		return false
	}
	return ra == nil || *ra == *rb || math.IsNaN(*ra) && math.IsNaN(*rb)
}

func TestParseUsageReadsOnlyTheTail(t *testing.T) {
	out := `{"type":"result","total_cost_usd":9}` + "\n" + strings.Repeat("x", usageTail) + "\n" +
		`{"type":"result","total_cost_usd":0.5}`
	if got := Builtin().Agents["claude"].ParseUsage([]byte(out)); got.CostUSD != 0.5 {
		t.Errorf("ParseUsage(long) = %+v, want cost 0.5", got)
	}
}

func TestUsageLimit(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data")
	}
	now := time.Date(2026, 11, 23, 13, 10, 0, 0, time.UTC) // 14:10 in Berlin
	claude := Builtin().Agents["claude"]
	codex := Builtin().Agents["codex"]
	custom := &Profile{Name: "mine", Limits: []string{`QUOTA EXHAUSTED`}}
	none := &Profile{Name: "claude", Limits: []string{}}
	tests := []struct {
		name    string
		p       *Profile
		text    string
		limited bool
		reset   time.Time
	}{
		{"claude epoch", claude, "Claude AI usage limit reached|1763913600", true, time.Unix(1763913600, 0)},
		{"claude clock with zone", claude, "Claude usage limit reached. Your limit will reset at 3pm (Europe/Berlin).",
			true, time.Date(2026, 11, 23, 15, 0, 0, 0, berlin)},
		{"claude clock passed today: tomorrow", claude, "5-hour limit reached ∙ resets 1pm (Europe/Berlin)",
			true, time.Date(2026, 11, 24, 13, 0, 0, 0, berlin)},
		{"claude clock in now's zone", claude, "You've hit your limit · resets 3:30pm", true,
			time.Date(2026, 11, 23, 15, 30, 0, 0, time.UTC)},
		{"claude weekly with date", claude, "You've hit your limit · resets Dec 1, 9am (Europe/Berlin)", true,
			time.Date(2026, 12, 1, 9, 0, 0, 0, berlin)},
		{"claude no time", claude, "Claude AI usage limit reached", true, time.Time{}},
		{"claude api rate limit", claude, `API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}`, true, time.Time{}},
		{"claude json error", claude, `{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1763913600"}`,
			true, time.Unix(1763913600, 0)},
		{"claude json success mentioning a limit", claude,
			`{"type":"result","is_error":false,"result":"Added the 'usage limit reached' banner","total_cost_usd":0.1}`, false, time.Time{}},
		{"codex try again in", codex, "■ You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.",
			true, now.Add(2*time.Hour + 5*time.Minute)},
		{"codex try again in short units", codex, "usage limit reached; try again in 1h30m", true, now.Add(90 * time.Minute)},
		{"codex 429", codex, "stream error: exceeded retry limit, last status: 429 Too Many Requests", true, time.Time{}},
		{"codex try again at", codex, "Rate limit reached. Try again at 15:45.", true, time.Date(2026, 11, 23, 15, 45, 0, 0, time.UTC)},
		{"retry after seconds", codex, "rate limit exceeded, retry after 30 seconds", true, now.Add(30 * time.Second)},
		{"reset on the next line", claude, "Claude usage limit reached.\nYour limit will reset at 6am", true,
			time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)},
		{"bare hour is no time", claude, "usage limit reached, resets 3", true, time.Time{}},
		{"nothing", claude, "All tests pass.\nDone.", false, time.Time{}},
		{"custom pattern", custom, "error: QUOTA EXHAUSTED, try again in 10 minutes", true, now.Add(10 * time.Minute)},
		{"custom ignores built-ins", custom, "Claude AI usage limit reached", false, time.Time{}},
		{"empty list disables", none, "Claude AI usage limit reached", false, time.Time{}},
		{"unknown agent has none", &Profile{Name: "aider"}, "usage limit reached", false, time.Time{}},
		{"generic has all", Generic(), "You've hit your usage limit, try again in 5 minutes", true, now.Add(5 * time.Minute)},
		{"nil profile", nil, "usage limit reached", false, time.Time{}},
		{"absurd duration", codex, "usage limit reached, try again in 99999999999999999999 hours", true, time.Time{}},
	}
	for _, tt := range tests {
		limited, reset := tt.p.UsageLimit(tt.text, now)
		if limited != tt.limited || !reset.Equal(tt.reset) {
			t.Errorf("%s: UsageLimit(%q) = %v, %v; want %v, %v", tt.name, tt.text, limited, reset, tt.limited, tt.reset)
		}
	}
}

func TestUsageConfigKeys(t *testing.T) {
	cfg, err := Parse([]byte(`{"aider": {"command": "aider", "cost_pattern": "\\$([0-9.]+)", "usage_limit": ["out of credits"]},
		"claude": {"command": "claude"}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents["aider"]
	if got := a.ParseUsage([]byte("spent $0.75")); got.CostUSD != 0.75 || !got.HasCost {
		t.Errorf("aider ParseUsage = %+v, want 0.75", got)
	}
	if l, _ := a.UsageLimit("you are out of credits", time.Now()); !l {
		t.Errorf("aider UsageLimit(out of credits) = false, want true")
	}
	if l, _ := cfg.Agents["claude"].UsageLimit("Claude AI usage limit reached", time.Now()); !l {
		t.Errorf("claude entry without usage_limit: built-in patterns not used")
	}
	for _, bad := range []string{`{"x": {"command": "x", "cost_pattern": "("}}`, `{"x": {"command": "x", "usage_limit": ["[a"]}}`} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `agent "x"`) {
			t.Errorf("Parse(%s) = %v, want an error naming the agent", bad, err)
		}
	}
}

// FuzzUsage runs ParseUsage and UsageLimit on arbitrary agent output: no panic, no cost without
// HasCost, no reset time without a limit, and a reset never before the message's time unless
// the message gave a Unix time.
func FuzzUsage(f *testing.F) {
	for _, s := range []string{`{"type":"result","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}`,
		"Claude AI usage limit reached|1763913600", "You've hit your limit · resets Dec 1, 9am (Europe/Berlin)",
		"usage limit reached; try again in 1h30m", `{"type":"turn.completed","usage":{"input_tokens":3}}`,
		"Rate limit reached. Try again at 15:45.", "spent $1,2.3"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 23, 13, 10, 0, 0, time.UTC)
	profiles := []*Profile{Builtin().Agents["claude"], Builtin().Agents["codex"], Generic(),
		{Name: "x", CostPattern: `\$([0-9.,]+)`, Limits: []string{`(?i)limit`}}}
	f.Fuzz(func(t *testing.T, out string) {
		for _, p := range profiles {
			u := p.ParseUsage([]byte(out))
			if !u.HasCost && u.CostUSD != 0 {
				t.Errorf("%s: cost %v without HasCost", p.Name, u.CostUSD)
			}
			limited, reset := p.UsageLimit(out, now)
			if !limited && !reset.IsZero() {
				t.Errorf("%s: reset %v without a limit", p.Name, reset)
			}
			if limited && !reset.IsZero() && reset.Before(now) && !epochRe.MatchString(out) {
				t.Errorf("%s: reset %v before now for %q", p.Name, reset, out)
			}
		}
	})
}
