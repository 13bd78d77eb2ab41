package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Usage is what an agent's output says about what it spent and whether it hit a limit.
type Usage struct {
	// CostUSD is the cost the agent reported (claude -p --output-format json: total_cost_usd;
	// others: the profile's cost pattern). HasCost says whether it reported one.
	CostUSD float64
	HasCost bool
	// RejectedCost is a cost the agent reported that is not one (NaN, an infinity, below zero),
	// as a number for a caller's warning; CostUSD and HasCost then say none was reported.
	RejectedCost *float64
	// InputTokens and OutputTokens as the agent reported them (0: not reported).
	InputTokens, OutputTokens int64
	// NumTurns is the turns claude reported in its result (num_turns; 0: not reported).
	NumTurns int
}

// usageTail bounds what ParseUsage and UsageLimit read: the agent prints its result and its
// limit message last, and a run's output can be megabytes of tool logs. Reading only the end
// keeps both linear in a bound, not in the output.
const usageTail = 256 << 10

func tail(b []byte) []byte {
	if len(b) > usageTail {
		b = b[len(b)-usageTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // a cut line is not parsed
		}
	}
	return b
}

// agentResult is the part of an agent's JSON output that reports spending: claude -p
// --output-format json prints one such object ({"type":"result", "total_cost_usd": …,
// "usage": {"input_tokens": …, "output_tokens": …}}), --output-format stream-json prints it as
// its last line; codex exec --json prints {"type":"turn.completed","usage":{…}} per turn.
type agentResult struct {
	Type         string   `json:"type"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	CostUSD      *float64 `json:"cost_usd"` // older claude versions
	IsError      bool     `json:"is_error"`
	Result       *string  `json:"result"`
	Usage        *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	// NumTurns is kept raw: a figure of another type or size must not cost the object its
	// cost (turns reads it).
	NumTurns json.RawMessage `json:"num_turns"`
}

// jsonObjects returns the JSON objects of output: the whole of it when it is one (claude's
// pretty or compact result), else every line that is one (stream-json, codex --json), in order.
func jsonObjects(output []byte) []agentResult {
	trimmed := bytes.TrimSpace(output)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var r agentResult
		if json.Unmarshal(trimmed, &r) == nil {
			return []agentResult{r}
		}
	}
	var out []agentResult
	for _, line := range bytes.Split(trimmed, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
			continue
		}
		var r agentResult
		if json.Unmarshal(line, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// ParseUsage reads cost and tokens from an agent's output (the whole of a headless run's
// stdout, or a screen's text): the last result object that reports a cost (claude), else the
// sum of the per-turn usage objects (codex --json), else the profile's cost pattern on the text.
// Claude's input_tokens are the uncached ones, as it reports them.
func (p *Profile) ParseUsage(output []byte) Usage {
	output = tail(output)
	var u Usage
	objs := jsonObjects(output)
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		cost := o.TotalCostUSD
		if cost == nil {
			cost = o.CostUSD
		}
		if cost == nil && o.Type != "result" {
			continue
		}
		u.takeCost(cost)
		u.NumTurns = turns(o.NumTurns)
		if o.Usage != nil {
			u.InputTokens, u.OutputTokens = o.Usage.InputTokens, o.Usage.OutputTokens
		}
		return u
	}
	for _, o := range objs {
		if o.Usage != nil && (o.Type == "turn.completed" || o.Type == "") {
			u.InputTokens += o.Usage.InputTokens
			u.OutputTokens += o.Usage.OutputTokens
		}
	}
	if p != nil && p.CostPattern != "" {
		if re, err := regexp.Compile(p.CostPattern); err == nil {
			// The last match: an agent that prints a running total prints the final one last.
			if ms := re.FindAllSubmatch(output, -1); len(ms) > 0 {
				m := ms[len(ms)-1]
				s := m[0]
				if len(m) > 1 {
					s = m[1]
				}
				if v, err := strconv.ParseFloat(strings.ReplaceAll(string(s), ",", ""), 64); err == nil {
					u.takeCost(&v)
				}
			}
		}
	}
	return u
}

// maxTurns bounds the turns taken from an agent's output: a larger figure is not believed.
const maxTurns = 1 << 20

// turns reads a result's num_turns: a whole number from 0 to maxTurns, else 0 (not reported).
func turns(raw json.RawMessage) int {
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil || n < 0 || n > maxTurns {
		return 0
	}
	return n
}

// validCost says whether an agent's reported cost can be taken: a finite figure, not below
// zero. NaN or Inf would make the record unwritable (JSON has neither), and a negative cost
// would lower a budget's spent total: the agent's output is not trusted to do either.
func validCost(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// takeCost takes cost (nil: none reported) as the usage's, or as its RejectedCost.
func (u *Usage) takeCost(cost *float64) {
	switch {
	case cost == nil:
	case validCost(*cost):
		u.CostUSD, u.HasCost = *cost, true
	default:
		v := *cost
		u.RejectedCost = &v
	}
}

// Built-in usage-limit patterns, as the agents word their limits (2025-2026). Claude Code:
// "Claude AI usage limit reached|1763913600" (older -p output: the reset as a Unix time),
// "Claude usage limit reached. Your limit will reset at 3pm (Europe/Berlin).", "5-hour limit
// reached ∙ resets 3pm", "You've hit your limit · resets 3pm (Europe/Berlin)", and the API's
// rate_limit_error / 429. Codex: "You've hit your usage limit. … try again in 2 hours 5
// minutes." and "exceeded retry limit, last status: 429 Too Many Requests".
var (
	claudeLimits = []string{`(?i)usage limit reached`, `(?i)\blimit reached\b.*\bresets?\b`,
		`(?i)you'?ve hit your (usage )?limit`, `(?i)\brate_limit_error\b`, `(?i)\b429\b.*too many requests`}
	codexLimits = []string{`(?i)you'?ve hit your usage limit`, `(?i)usage limit reached`,
		`(?i)rate limit (reached|exceeded)`, `(?i)\b429\b.*too many requests`}
)

// LimitPatterns are the built-in usage-limit patterns of the agent type name, nil for one that
// has none (a config entry without "usage_limit" gets its name's).
func LimitPatterns(name string) []string {
	switch name {
	case "claude":
		return claudeLimits
	case "codex":
		return codexLimits
	case GenericName:
		return concat(claudeLimits, codexLimits)
	}
	return nil
}

// claudeJSONLimit: when the output is claude's result object, only its result text can name a
// limit, and only when is_error says the run failed; the agent's own work ("add a 'rate limit
// reached' message") must not pause a loop.
func claudeJSONLimit(text string) (checked bool, msg string) {
	for _, o := range jsonObjects([]byte(text)) {
		if o.Type == "result" && o.Result != nil {
			checked, msg = true, ""
			if o.IsError {
				msg = *o.Result
			}
		}
	}
	return checked, msg
}

// UsageLimit tells whether text (a screen, or a headless run's output) shows a usage-limit or
// rate-limit message of the agent (patterns in its profile: "usage_limit" in the config, else
// the built-in ones of its name), and when the limit resets (zero when the message names no
// time; the caller then waits a default). Only the end of the text is read, one line at a time.
func (p *Profile) UsageLimit(text string, now time.Time) (limited bool, resetAt time.Time) {
	if p == nil {
		return false, time.Time{}
	}
	pats := p.Limits
	if pats == nil {
		pats = LimitPatterns(p.Name)
	}
	if len(pats) == 0 {
		return false, time.Time{}
	}
	text = string(tail([]byte(text)))
	if checked, msg := claudeJSONLimit(text); checked {
		text = msg
	}
	res := compileLimits(pats)
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for _, re := range res {
			if !re.MatchString(line) {
				continue
			}
			// The reset time may be on the line or the next few (a screen wraps it).
			end := min(i+3, len(lines))
			return true, ResetTime(strings.Join(lines[i:end], " "), now)
		}
	}
	return false, time.Time{}
}

func compileLimits(pats []string) []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, s := range pats {
		if re, err := regexp.Compile(s); err == nil { // checked when the config was loaded
			res = append(res, re)
		}
	}
	return res
}

var (
	epochRe = regexp.MustCompile(`(?i)limit reached\|(\d{9,11})\b`)
	// "try again in 2 hours 5 minutes", "resets in 4h", "retry after 30 seconds", "in 1h30m".
	inRe   = regexp.MustCompile(`(?i)\b(?:try again|retry|resets?|reset|available again)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)`)
	partRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*([a-z]+)`)
	// "resets 3pm", "reset at 3:30 PM (Europe/Berlin)", "try again at 15:00", "resets Dec 1, 9am".
	atRe = regexp.MustCompile(`(?i)\b(?:resets?|reset|try again|available again)\s+(?:at\s+|on\s+)?` +
		`(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?` +
		`(\d{1,2})(?::(\d{2}))?\s*([ap])?\.?(m\.?)?(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+\-]+)*)\))?`)
)

// maxLimitWait bounds a reset named as a duration: a longer one is not believed (and never
// overflows a time.Duration).
const maxLimitWait = 31 * 24 * time.Hour

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7,
	"aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// ResetTime reads the reset time a limit message names: a Unix time after "limit reached|", a
// duration after "try again in" / "resets in", or a clock time after "resets" / "try again at"
// (with a month and day, and a time zone in parentheses, when given: the next such moment
// after now, in that zone, else in now's). Zero when it names none.
func ResetTime(msg string, now time.Time) time.Time {
	if m := epochRe.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(n, 0).In(now.Location())
		}
	}
	if m := inRe.FindStringSubmatch(msg); m != nil {
		var d time.Duration
		for _, p := range partRe.FindAllStringSubmatch(m[1], -1) {
			v, _ := strconv.ParseFloat(p[1], 64)
			unit, ok := unitOf(p[2])
			if !ok {
				break
			}
			if part := v * float64(unit); part < float64(maxLimitWait) {
				d += time.Duration(part)
			} else {
				d = maxLimitWait + 1
			}
		}
		if d > 0 && d <= maxLimitWait {
			return now.Add(d)
		}
	}
	for _, m := range atRe.FindAllStringSubmatch(msg, -1) {
		if t, ok := clock(m, now); ok {
			return t
		}
	}
	return time.Time{}
}

func unitOf(s string) (time.Duration, bool) {
	switch strings.ToLower(s) {
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "m", "min", "mins", "minute", "minutes":
		return time.Minute, true
	case "h", "hr", "hrs", "hour", "hours":
		return time.Hour, true
	case "d", "day", "days":
		return 24 * time.Hour, true
	}
	// "1h30m" arrives as "1" and "h30m": Go's own duration syntax.
	if d, err := time.ParseDuration("1" + strings.ToLower(s)); err == nil {
		return d, true
	}
	return 0, false
}

// clock turns a match of atRe into the next such moment after now. A bare hour ("resets 3")
// is not a time: it needs minutes or am/pm.
func clock(m []string, now time.Time) (time.Time, bool) {
	mon, day, hh, mm, ap, zone := m[1], m[2], m[3], m[4], strings.ToLower(m[5]), m[7]
	if mm == "" && ap == "" {
		return time.Time{}, false
	}
	h, _ := strconv.Atoi(hh)
	mi, _ := strconv.Atoi(mm)
	if ap != "" {
		if h < 1 || h > 12 {
			return time.Time{}, false
		}
		h %= 12
		if ap == "p" {
			h += 12
		}
	}
	if h > 23 || mi > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	n := now.In(loc)
	if mon != "" {
		d, _ := strconv.Atoi(day)
		t := time.Date(n.Year(), months[strings.ToLower(mon[:3])], d, h, mi, 0, 0, loc)
		if t.Before(n.Add(-24 * time.Hour)) { // "Jan 2" said in December is next year's
			t = t.AddDate(1, 0, 0)
		}
		return t, true
	}
	t := time.Date(n.Year(), n.Month(), n.Day(), h, mi, 0, 0, loc)
	if !t.After(n) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}

// checkUsageKeys checks an entry's cost pattern and usage-limit patterns when the config is
// loaded, so a loop never finds a broken one in the middle of a run.
func checkUsageKeys(e entry) error {
	if e.CostPattern != "" {
		if _, err := regexp.Compile(e.CostPattern); err != nil {
			return fmt.Errorf("cost_pattern %q: %v", e.CostPattern, err)
		}
	}
	for _, s := range e.UsageLimit {
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("usage_limit pattern %q: %v", s, err)
		}
	}
	return nil
}
