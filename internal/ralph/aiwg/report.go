package aiwg

import (
	"context"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Look reads loop id's state, after a look at its controller: one found dead is recorded
// (crashed, or a paused loop's pid dropped) and the state read again. No lock is taken unless
// something looks dead.
func (w Workspace) Look(ctx context.Context, id string) (*State, error) {
	st, err := w.ReadState(id)
	if err != nil {
		return nil, err
	}
	if looksDead(st) { // the next look: read again once it is recorded
		if err := w.Sweep(ctx, []string{id}); err != nil {
			return nil, err
		}
		if st, err = w.ReadState(id); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// WriteStatus writes ralph status' text of st at now: one "Key: value" per line, text from
// the state stripped of control characters.
func WriteStatus(w io.Writer, st *State, now time.Time) {
	line := func(k, format string, a ...any) {
		fmt.Fprintf(w, "%-12s "+format+"\n", append([]any{k + ":"}, a...)...)
	}
	line("Loop", "%s", st.LoopID)
	status := st.Status
	switch {
	case st.Status == StatusPaused && st.PauseReason == PauseUsageLimit:
		status += " (usage limit; continues at " + deref(st.ResumeAt) + ")"
	case st.Status == StatusPaused && st.PauseReason != "":
		status += " (" + st.PauseReason + ")"
	case st.ExitReason != "" && st.ExitReason != st.Status:
		status += " (" + st.ExitReason + ")"
	}
	line("Status", "%s", status)
	line("Task", "%s", Clean(OneLine(st.Task, 100)))
	line("Completion", "%s", Clean(OneLine(st.CompletionCriteria, 100)))
	line("Agent", "%s", Clean(st.Agent))
	line("Iteration", "%d/%d", st.Iteration, st.Configuration.MaxIterations)
	if start, ok := parseStamp(st.StartedAt); ok {
		line("Started", "%s (%s ago)", st.StartedAt, now.Sub(start).Truncate(time.Second))
	}
	if dl, ok := deadline(st); ok && !Terminal(st.Status) {
		line("Timeout", "%s", dl.UTC().Format(time.RFC3339))
	}
	if st.Metrics.TotalIterations > 0 {
		line("Iterations", "%d (%d made progress, %d failed), %.1f s on average", st.Metrics.TotalIterations,
			st.Metrics.SuccessfulIterations, st.Metrics.FailedIterations, st.Metrics.AverageIterationTimeSeconds)
	}
	line("Cost", "$%.4f, %d tokens", st.Metrics.TotalCostUSD, st.Metrics.TotalTokens)
	writeRails(line, st)
	if n := st.NoProgressN(); n <= 0 {
		line("No-progress", "off")
	} else {
		var b breaker.State
		if st.Breaker != nil {
			b = *st.Breaker
		}
		line("No-progress", "%d/%d unchanged, %d/%d same failure", b.Unchanged, n, b.SameFailure, n)
	}
	if c := st.Progress.LastCompletionCheck; c != nil {
		verdict := "failed"
		if c.Passed {
			verdict = "passed"
		}
		line("Last check", "iteration %d, %s (exit %d): %s", c.Iteration, verdict, c.ExitCode, Clean(OneLine(lastLine(c.Output), 80)))
	}
	if st.PID != nil {
		line("PID", "%d", *st.PID)
	}
	if st.LastCheckpoint != nil {
		line("Checkpoint", "%s", *st.LastCheckpoint)
	}
	if st.ErrorContext != nil {
		line("Error", "%s", Clean(st.ErrorContext.ErrorMessage))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Clean removes control characters (a terminal's escapes) from text the state holds, for
// printing it.
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// LoopSummary is an AIWG loop as ralph list shows it.
type LoopSummary struct {
	LoopID        string  `json:"loop_id"`
	Status        string  `json:"status"`
	Iteration     int     `json:"iteration"`
	MaxIterations int     `json:"max_iterations"`
	Task          string  `json:"task"`
	StartedAt     string  `json:"started_at"`
	CostUSD       float64 `json:"total_cost_usd"`
	PID           *int    `json:"pid"`
}

// List is the workspace's loops, by id, each after a look at its controller (Sweep).
func (w Workspace) List(ctx context.Context) ([]LoopSummary, error) {
	ids := w.Loops()
	if err := w.Sweep(ctx, ids); err != nil {
		return nil, err
	}
	out := []LoopSummary{}
	for _, id := range ids {
		st, err := w.ReadState(id)
		if err != nil {
			continue // a directory being created, or not a loop's: nothing to list
		}
		out = append(out, LoopSummary{LoopID: st.LoopID, Status: st.Status,
			Iteration: st.Iteration, MaxIterations: st.Configuration.MaxIterations, Task: OneLine(st.Task, 200),
			StartedAt: st.StartedAt, CostUSD: st.Metrics.TotalCostUSD, PID: st.PID})
	}
	return out, nil
}

// Row is the summary's row in ralph list's table (KIND, LOOP, STATUS, ITERATION, TASK), tab
// separated, the task cut and stripped of control characters.
func (l *LoopSummary) Row() string {
	return fmt.Sprintf("aiwg\t%s\t%s\t%d/%d\t%s", l.LoopID, l.Status, l.Iteration, l.MaxIterations, Clean(OneLine(l.Task, 50)))
}

// Report is loop id's report, after a look at its controller (Sweep).
func (w Workspace) Report(ctx context.Context, id string) (*Report, error) {
	if err := w.Sweep(ctx, []string{id}); err != nil {
		return nil, err
	}
	st, err := w.ReadState(id)
	if err != nil {
		return nil, err
	}
	return NewReport(st), nil
}

// Report is ralph report's summary of a loop: its iterations, their durations and cost, and
// its completion checks.
type Report struct {
	LoopID      string      `json:"loop_id"`
	Task        string      `json:"task"`
	Completion  string      `json:"completion_criteria"`
	Status      string      `json:"status"`
	ExitReason  string      `json:"exit_reason,omitempty"`
	StartedAt   string      `json:"started_at"`
	CompletedAt *string     `json:"completed_at"`
	Metrics     Metrics     `json:"metrics"`
	Iterations  []Iteration `json:"iterations"`
	Checks      []Check     `json:"completion_checks"`
	// Redone counts the iterations run again (a usage limit, a pause, a signal, a crash).
	Redone int `json:"redone_iterations"`
}

// NewReport summarises st.
func NewReport(st *State) *Report {
	r := &Report{LoopID: st.LoopID, Task: st.Task, Completion: st.CompletionCriteria, Status: st.Status,
		ExitReason: st.ExitReason, StartedAt: st.StartedAt, CompletedAt: st.CompletedAt, Metrics: st.Metrics,
		Iterations: st.Iterations, Checks: st.Progress.CompletionChecks}
	for _, it := range st.Iterations {
		if it.Outcome == OutcomeUsageLimit || it.Outcome == OutcomeInterrupted || it.Outcome == OutcomeRolledBack {
			r.Redone++
		}
	}
	if r.Iterations == nil {
		r.Iterations = []Iteration{}
	}
	if r.Checks == nil {
		r.Checks = []Check{}
	}
	return r
}

func (r *Report) checkOf(i int) string {
	v := "-"
	for _, c := range r.Checks {
		if c.Iteration == i {
			v = "fail"
			if c.Passed {
				v = "pass"
			}
		}
	}
	return v
}

func cost(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func exitOf(e *int64) string {
	if e == nil {
		return "-"
	}
	return fmt.Sprint(*e)
}

// Text writes the report as plain text.
func (r *Report) Text(w io.Writer) {
	status := r.Status
	if r.ExitReason != "" && r.ExitReason != r.Status {
		status += " (" + r.ExitReason + ")"
	}
	fmt.Fprintf(w, "Loop %s: %s\n", r.LoopID, status)
	fmt.Fprintf(w, "Task: %s\nCompletion: %s\n", Clean(OneLine(r.Task, 200)), Clean(r.Completion))
	m := r.Metrics
	fmt.Fprintf(w, "Iterations: %d (%d made progress, %d failed, %d run again), %d s in all, %.1f s on average\n",
		m.TotalIterations, m.SuccessfulIterations, m.FailedIterations, r.Redone, m.TotalDurationSeconds, m.AverageIterationTimeSeconds)
	fmt.Fprintf(w, "Cost: $%.4f, %d tokens\n\n", m.TotalCostUSD, m.TotalTokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tOUTCOME\tEXIT\tSECONDS\tCOST\tTOKENS\tCHECK")
	for _, it := range r.Iterations {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%s\t%d\t%s\n", it.Number, it.Outcome, exitOf(it.ExitCode), it.DurationSeconds,
			cost(it.CostUSD), it.InputTokens+it.OutputTokens, r.checkOf(it.Number))
	}
	tw.Flush()
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "\nCompletion checks:")
		for _, c := range r.Checks {
			fmt.Fprintf(w, "  iteration %d  %s  exit %d  %s\n", c.Iteration, c.Timestamp, c.ExitCode, Clean(OneLine(lastLine(c.Output), 70)))
		}
	}
}

// Markdown writes the report as Markdown (a pull request's description, an issue comment).
func (r *Report) Markdown(w io.Writer) {
	esc := func(s string) string {
		return strings.NewReplacer("|", `\|`, "`", "'", "\n", " ").Replace(Clean(s))
	}
	fmt.Fprintf(w, "# Ralph loop `%s`\n\n", r.LoopID)
	fmt.Fprintf(w, "- **Task:** %s\n", esc(OneLine(r.Task, 300)))
	fmt.Fprintf(w, "- **Completion:** `%s`\n", esc(r.Completion))
	status := r.Status
	if r.ExitReason != "" && r.ExitReason != r.Status {
		status += " (" + r.ExitReason + ")"
	}
	fmt.Fprintf(w, "- **Status:** %s\n", status)
	m := r.Metrics
	fmt.Fprintf(w, "- **Iterations:** %d (%d made progress, %d failed, %d run again)\n", m.TotalIterations, m.SuccessfulIterations, m.FailedIterations, r.Redone)
	fmt.Fprintf(w, "- **Time:** %d s, %.1f s per iteration\n", m.TotalDurationSeconds, m.AverageIterationTimeSeconds)
	fmt.Fprintf(w, "- **Cost:** $%.4f, %d tokens\n\n", m.TotalCostUSD, m.TotalTokens)
	fmt.Fprintln(w, "## Iterations\n\n| # | Outcome | Exit | Seconds | Cost | Tokens | Check |\n|---|---|---|---|---|---|---|")
	for _, it := range r.Iterations {
		fmt.Fprintf(w, "| %d | %s | %s | %.1f | %s | %d | %s |\n", it.Number, it.Outcome, exitOf(it.ExitCode), it.DurationSeconds,
			cost(it.CostUSD), it.InputTokens+it.OutputTokens, r.checkOf(it.Number))
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "\n## Completion checks\n\n| Iteration | Time | Result | Exit | Last line |\n|---|---|---|---|---|")
		for _, c := range r.Checks {
			res := "fail"
			if c.Passed {
				res = "pass"
			}
			fmt.Fprintf(w, "| %d | %s | %s | %d | %s |\n", c.Iteration, c.Timestamp, res, c.ExitCode, esc(OneLine(lastLine(c.Output), 100)))
		}
	}
}

// writeRails writes st's rails as status shows them, one line each, after the cost.
func writeRails(line func(k, format string, a ...any), st *State) {
	r := railsOf(st)
	if r.BudgetUSD != nil {
		hard := ""
		if r.HardBudget {
			hard = " (hard: the agent at work is stopped too)"
		}
		line("Budget", "$%.4f of $%.2f spent%s", st.Metrics.TotalCostUSD, *r.BudgetUSD, hard)
	}
	if r.MaxCallsPerHour > 0 {
		n := 0
		for _, it := range st.Iterations {
			if t, ok := parseStamp(it.StartedAt); ok && time.Since(t) < time.Hour {
				n++
			}
		}
		line("Calls", "%d in the last hour, at most %d", n, r.MaxCallsPerHour)
	}
	var timeouts []string
	if r.IterationTimeoutSeconds > 0 {
		timeouts = append(timeouts, "iteration "+(time.Duration(r.IterationTimeoutSeconds)*time.Second).String())
	}
	if r.InactivityTimeoutSeconds > 0 {
		timeouts = append(timeouts, "inactivity "+(time.Duration(r.InactivityTimeoutSeconds)*time.Second).String())
	}
	if len(timeouts) > 0 {
		line("Timeouts", "%s", strings.Join(timeouts, ", "))
	}
	if r.CommitEach {
		line("Commits", "one after each iteration that changed the tree (--commit-each)")
	}
	if r.OnEvent != "" {
		line("On event", "%s", Clean(OneLine(r.OnEvent, 100)))
	}
}
