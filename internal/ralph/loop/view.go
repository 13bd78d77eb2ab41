package loop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/statedir"
)

// screenAge is how many seconds ago the agent's screen last changed (-1: unknown).
func (st *State) screenAge() int {
	if st.LastScreenChange != nil {
		if t, ok := parseISO(*st.LastScreenChange); ok {
			return int(time.Since(t).Seconds())
		}
	}
	return -1
}

// atWork: only a loop at work (running or paused) can be stuck (the Python swarm said it of
// stopped loops too).
func (st *State) atWork() bool { return st.Status == StatusRunning || st.Status == StatusPaused }

// WriteText writes the status as `ralph status` prints it, the Python swarm's lines.
func (s *Status) WriteText(out io.Writer) {
	st := s.State
	ago := st.screenAge()
	fmt.Fprintf(out, "Ralph Loop: %s\n", st.WorkerName)
	line := "Status: " + st.Status
	stuck := ago > 60 && st.atWork()
	if stuck {
		line += fmt.Sprintf(" (possibly stuck — no output change for %ds)", ago)
	}
	fmt.Fprintln(out, line)
	fmt.Fprintln(out, st.iterationLine())
	st.writeTimes(out)
	fmt.Fprintf(out, "Consecutive failures: %d\n", st.ConsecutiveFailures)
	fmt.Fprintf(out, "Total failures: %d\n", st.TotalFailures)
	fmt.Fprintf(out, "Inactivity timeout: %ds\n", st.InactivityTimeout)
	switch {
	case ago >= 0:
		fmt.Fprintf(out, "Last screen change: %ds ago\n", ago)
	case st.LastScreenChange != nil:
		fmt.Fprintln(out, "Last screen change: (unknown)")
	default:
		fmt.Fprintln(out, "Last screen change: (none)")
	}
	if st.DonePattern != nil && *st.DonePattern != "" {
		fmt.Fprintf(out, "Done pattern: %s\n", *st.DonePattern)
	}
	fmt.Fprintln(out, st.breakerLine())
	st.writeRails(out)
	st.writeLimit(out)
	if stuck && len(s.LastOutput) > 0 {
		fmt.Fprintln(out, "Last output:")
		for _, l := range s.LastOutput {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	st.writeExitReason(out, s.WorkerStatus)
}

// iterationLine is the Iteration: line, with the average iteration's duration once one ended
// and, for a running loop, the time its remaining iterations would take.
func (st *State) iterationLine() string {
	line := fmt.Sprintf("Iteration: %d/%d", st.CurrentIteration, st.MaxIterations)
	n := len(st.IterationDurations)
	if n == 0 {
		return line
	}
	var sum int64
	for _, d := range st.IterationDurations {
		sum += d
	}
	avg := float64(sum) / float64(n)
	if rem := st.MaxIterations - st.CurrentIteration; rem > 0 && st.Status == StatusRunning {
		return line + fmt.Sprintf(" (avg %s/iter, ~%s remaining)", formatDuration(int64(avg)), formatDuration(int64(avg*float64(rem))))
	}
	return line + fmt.Sprintf(" (avg %s/iter)", formatDuration(int64(avg)))
}

// writeTimes writes when the loop and its current iteration started, and, for a stopped loop,
// when its last iteration ended.
func (st *State) writeTimes(out io.Writer) {
	stamp := func(s string) string {
		if t, ok := parseISO(s); ok {
			return t.Format("2006-01-02 15:04:05")
		}
		return s
	}
	if st.Started != "" {
		fmt.Fprintf(out, "Started: %s\n", stamp(st.Started))
	}
	if st.LastIterationStarted != "" {
		fmt.Fprintf(out, "Current iteration started: %s\n", stamp(st.LastIterationStarted))
	}
	if st.LastIterationEnded != "" && st.Status == StatusStopped {
		fmt.Fprintf(out, "Last iteration ended: %s\n", stamp(st.LastIterationEnded))
	}
}

// breakerLine is the No-progress breaker: line, its counts against its threshold.
func (st *State) breakerLine() string {
	n := st.NoProgressN()
	if n <= 0 {
		return "No-progress breaker: off"
	}
	var b breaker.State
	if st.Breaker != nil {
		b = *st.Breaker
	}
	return fmt.Sprintf("No-progress breaker: %d/%d unchanged, %d/%d same failure", b.Unchanged, n, b.SameFailure, n)
}

// writeLimit writes the limit (usage, or calls per hour) the loop waits for, if any.
func (st *State) writeLimit(out io.Writer) {
	if st.LimitedUntil == "" {
		return
	}
	if t, ok := parseISO(st.LimitedUntil); ok && time.Until(t) > 0 {
		what := "Usage limit"
		if st.LimitReason == LimitCalls {
			what = "Calls per hour"
		}
		fmt.Fprintf(out, "%s: waiting until %s\n", what, t.Local().Format("2006-01-02 15:04:05"))
	}
}

// writeExitReason writes why the loop ended (with its worker's status ws when its monitor was
// disconnected), or that it still runs.
func (st *State) writeExitReason(out io.Writer, ws string) {
	switch {
	case st.ExitReason != nil && *st.ExitReason == ReasonDisconnected:
		fmt.Fprintf(out, "Exit reason: monitor_disconnected (worker %s)\n", ws)
		fmt.Fprintf(out, "Worker status: %s\n", ws)
	case st.ExitReason != nil:
		fmt.Fprintf(out, "Exit reason: %s\n", *st.ExitReason)
	case st.Status == StatusRunning:
		fmt.Fprintln(out, "Exit reason: (none - still running)")
	}
}

// JSON is status --json: the loop's state as state.json holds it, with the worker's status and
// whether a monitor runs (json.dump's indent=2 layout).
func (s *Status) JSON() []byte {
	x := *s.State
	x.extra = append(append([]member{}, s.State.extra...), member{"worker_status", mustJSON(s.WorkerStatus)},
		member{"monitor_alive", mustJSON(s.MonitorAlive)})
	return x.encode()
}

// ListJSON is list --json: each loop's state with its worker's status, as the Python swarm
// printed them (json.dump's indent=2 layout).
func ListJSON(loops []Listed) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i, lp := range loops {
		if i > 0 {
			b.WriteString(",")
		}
		x := *lp.State
		x.extra = append(append([]member{}, lp.State.extra...), member{"worker_status", mustJSON(lp.WorkerStatus)})
		b.Write(x.encodeCompact())
	}
	b.WriteString("]")
	return pyIndent([]byte(b.String()))
}

// LogsOptions say how much of a loop's iteration log Logs writes.
type LogsOptions struct {
	Lines int  // only the last Lines lines (negative: all); not with Live
	Live  bool // then keep writing new lines until ctx ends
}

// Logs writes the iteration log of the loop name (iterations.log) to out.
func (ls *Loops) Logs(ctx context.Context, name string, o LogsOptions, out io.Writer) error {
	l, err := ls.at(name)
	if err != nil {
		return err
	}
	if _, err := l.st.load(); err != nil {
		return fmt.Errorf("no ralph state found for worker '%s'", name)
	}
	path := l.dir.RalphIterations(name)
	b, err := statedir.ReadFile(path, 64<<20)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no iteration log found for worker '%s'", name)
	}
	if err != nil {
		return err
	}
	text := string(b)
	if n := o.Lines; n >= 0 && !o.Live {
		ls := strings.SplitAfter(text, "\n")
		if ls[len(ls)-1] == "" {
			ls = ls[:len(ls)-1]
		}
		if n < len(ls) {
			ls = ls[len(ls)-n:]
		}
		text = strings.Join(ls, "")
	}
	fmt.Fprint(out, text)
	if !o.Live {
		return nil
	}
	pos := int64(len(b))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
		f, err := statedir.Open(path)
		if err != nil {
			continue
		}
		f.Seek(pos, io.SeekStart)
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			pos += int64(len(line))
			fmt.Fprint(out, line)
		}
		f.Close()
	}
}

// PromptTemplate is the starter prompt `ralph init` writes and `ralph template` prints (the
// Python swarm's RALPH_PROMPT_TEMPLATE).
const PromptTemplate = `study specs/README.md
study CLAUDE.md and pick the most important incomplete task

IMPORTANT:

- do not assume anything is implemented - verify by reading code
- update IMPLEMENTATION_PLAN.md when the task is done
- if tests are missing, add them (choose unit/integration/property as appropriate, follow existing patterns)
- run tests after changes
- commit and push when you are done`

// writeRails writes the loop's cost and rails as status shows them: the cost always (the
// total, the last iteration's), the budget, calls per hour, hook and commits when set.
func (st *State) writeRails(out io.Writer) {
	line := "Cost: $" + rails.Money(st.CostUSD)
	r := st.Rails
	if r != nil && r.BudgetUSD != nil {
		line += " of a $" + rails.Money(*r.BudgetUSD) + " budget"
		if r.HardBudget {
			line += " (hard)"
		}
	}
	if n := len(st.IterationCosts); n > 0 {
		line += fmt.Sprintf(" (iteration %d: $%s)", n, rails.Money(st.IterationCosts[n-1]))
	}
	fmt.Fprintln(out, line)
	if r == nil {
		return
	}
	if r.MaxCallsPerHour > 0 {
		fmt.Fprintf(out, "Max calls per hour: %d\n", r.MaxCallsPerHour)
	}
	if r.OnEvent != "" {
		fmt.Fprintf(out, "On event: %s\n", r.OnEvent)
	}
	if r.CommitEach {
		fmt.Fprintln(out, "Commit each iteration: yes")
	}
}
