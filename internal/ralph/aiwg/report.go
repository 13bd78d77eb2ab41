package aiwg

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/statedir"
)

func statusCmd(ctx context.Context, args []string, stdout io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"json": false, "loop-id": true})
	if err != nil {
		return err
	}
	ws, id, err := namedLoop(ctx, flags, ops)
	if err != nil {
		return err
	}
	st, err := ws.ReadState(id)
	if err != nil {
		return err
	}
	if looksDead(st) { // the next look: read again once it is recorded
		if err := ws.Sweep(ctx, []string{id}); err != nil {
			return err
		}
		if st, err = ws.ReadState(id); err != nil {
			return err
		}
	}
	if flags["json"] == "true" {
		return writeJSON(stdout, st)
	}
	writeStatus(stdout, st, time.Now())
	return nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeStatus is ralph status' text: one "Key: value" per line.
func writeStatus(w io.Writer, st *State, now time.Time) {
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
	line("Task", "%s", clean(summary(st.Task, 100)))
	line("Completion", "%s", clean(summary(st.CompletionCriteria, 100)))
	line("Agent", "%s", clean(st.Agent))
	line("Iteration", "%d/%d", st.Iteration, st.Configuration.MaxIterations)
	if start, ok := parseStamp(st.StartedAt); ok {
		line("Started", "%s (%s ago)", st.StartedAt, now.Sub(start).Truncate(time.Second))
	}
	if dl, ok := deadline(st); ok && !Terminal(st.Status) {
		line("Timeout", "%s", dl.UTC().Format(time.RFC3339))
	}
	if st.Metrics.TotalIterations > 0 {
		line("Iterations", "%d (%d ok, %d failed), %.1f s on average", st.Metrics.TotalIterations,
			st.Metrics.SuccessfulIterations, st.Metrics.FailedIterations, st.Metrics.AverageIterationTimeSeconds)
	}
	line("Cost", "$%.4f, %d tokens", st.Metrics.TotalCostUSD, st.Metrics.TotalTokens)
	if c := st.Progress.LastCompletionCheck; c != nil {
		verdict := "failed"
		if c.Passed {
			verdict = "passed"
		}
		line("Last check", "iteration %d, %s (exit %d): %s", c.Iteration, verdict, c.ExitCode, clean(summary(lastLine(c.Output), 80)))
	}
	if st.PID != nil {
		line("PID", "%d", *st.PID)
	}
	if st.LastCheckpoint != nil {
		line("Checkpoint", "%s", *st.LastCheckpoint)
	}
	if st.ErrorContext != nil {
		line("Error", "%s", clean(st.ErrorContext.ErrorMessage))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// clean removes control characters (a terminal's escapes) from text the state holds.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// ListEntry is one loop in ralph list --json: Kind "aiwg" (Loop set) or "swarm" (Swarm set).
type ListEntry struct {
	Kind  string        `json:"kind"`
	Loop  *LoopSummary  `json:"aiwg,omitempty"`
	Swarm *loop.Summary `json:"swarm,omitempty"`
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

func listCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"json": false})
	if err != nil {
		return err
	}
	if len(ops) > 0 {
		return cli.Usagef("ralph list takes no operand")
	}
	ws, err := workspace(ctx)
	if err != nil {
		return err
	}
	ids := ws.Loops()
	if err := ws.Sweep(ctx, ids); err != nil {
		return err
	}
	entries := []ListEntry{}
	for _, id := range ids {
		st, err := ws.ReadState(id)
		if err != nil {
			continue // a directory being created, or not a loop's: nothing to list
		}
		entries = append(entries, ListEntry{Kind: "aiwg", Loop: &LoopSummary{LoopID: st.LoopID, Status: st.Status,
			Iteration: st.Iteration, MaxIterations: st.Configuration.MaxIterations, Task: summary(st.Task, 200),
			StartedAt: st.StartedAt, CostUSD: st.Metrics.TotalCostUSD, PID: st.PID}})
	}
	if sw, err := statedir.SwarmFromEnv(os.LookupEnv); err == nil {
		swarm, err := loop.List(ctx, sw.Root)
		if err != nil {
			// AIWG's loops are still worth listing.
			fmt.Fprintf(stderr, "ralph: warning: swarm's loops in %s: %v\n", sw.Root, err)
		}
		for i := range swarm {
			entries = append(entries, ListEntry{Kind: "swarm", Swarm: &swarm[i]})
		}
	}
	if flags["json"] == "true" {
		return writeJSON(stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(stdout, "No ralph loops")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tLOOP\tSTATUS\tITERATION\tTASK")
	for _, e := range entries {
		if e.Loop != nil {
			l := e.Loop
			fmt.Fprintf(tw, "aiwg\t%s\t%s\t%d/%d\t%s\n", l.LoopID, l.Status, l.Iteration, l.MaxIterations, clean(summary(l.Task, 50)))
			continue
		}
		s := e.Swarm
		fmt.Fprintf(tw, "swarm\t%s\t%s\t%d/%d\t\n", clean(s.Name), s.Status, s.Iteration, s.MaxIterations)
	}
	return tw.Flush()
}

func reportCmd(ctx context.Context, args []string, stdout io.Writer) error {
	flags, ops, err := parseArgs(args, flagSpec{"format": true, "loop-id": true, "json": false})
	if err != nil {
		return err
	}
	format := flags["format"]
	switch {
	case flags["json"] == "true":
		format = "json"
	case format == "":
		format = "text"
	case format != "text" && format != "markdown" && format != "json":
		return cli.Usagef("--format %q: use text, markdown or json", format)
	}
	ws, id, err := sweptLoop(ctx, flags, ops)
	if err != nil {
		return err
	}
	st, err := ws.ReadState(id)
	if err != nil {
		return err
	}
	r := NewReport(st)
	switch format {
	case "json":
		return writeJSON(stdout, r)
	case "markdown":
		r.Markdown(stdout)
	default:
		r.Text(stdout)
	}
	return nil
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
	fmt.Fprintf(w, "Task: %s\nCompletion: %s\n", clean(summary(r.Task, 200)), clean(r.Completion))
	m := r.Metrics
	fmt.Fprintf(w, "Iterations: %d (%d ok, %d failed, %d run again), %d s in all, %.1f s on average\n",
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
			fmt.Fprintf(w, "  iteration %d  %s  exit %d  %s\n", c.Iteration, c.Timestamp, c.ExitCode, clean(summary(lastLine(c.Output), 70)))
		}
	}
}

// Markdown writes the report as Markdown (a pull request's description, an issue comment).
func (r *Report) Markdown(w io.Writer) {
	esc := func(s string) string {
		return strings.NewReplacer("|", `\|`, "`", "'", "\n", " ").Replace(clean(s))
	}
	fmt.Fprintf(w, "# Ralph loop `%s`\n\n", r.LoopID)
	fmt.Fprintf(w, "- **Task:** %s\n", esc(summary(r.Task, 300)))
	fmt.Fprintf(w, "- **Completion:** `%s`\n", esc(r.Completion))
	status := r.Status
	if r.ExitReason != "" && r.ExitReason != r.Status {
		status += " (" + r.ExitReason + ")"
	}
	fmt.Fprintf(w, "- **Status:** %s\n", status)
	m := r.Metrics
	fmt.Fprintf(w, "- **Iterations:** %d (%d ok, %d failed, %d run again)\n", m.TotalIterations, m.SuccessfulIterations, m.FailedIterations, r.Redone)
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
			fmt.Fprintf(w, "| %d | %s | %s | %d | %s |\n", c.Iteration, c.Timestamp, res, c.ExitCode, esc(summary(lastLine(c.Output), 100)))
		}
	}
}
