package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/agentfleet/fleet/internal/swarmrun"
	"golang.org/x/term"
)

// progress is what swarm run shows while it works, on stderr (stdout keeps the summary, the
// run's data): a line per event of a task (started, completed, retried, failed, blocked,
// re-queued from a host gone offline), the run's warnings, and on a terminal one status line
// below them, redrawn in place every second and at each event: the tasks done, failed, blocked
// and running, the slots in use and an estimate of the time left. Not on a terminal (a pipe,
// cron), or with NO_COLOR or TERM=dumb, there is no status line and no control byte: plain
// lines only. Quiet shows the warnings only.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool // the status line, redrawn in place
	quiet bool
	width int
	shown bool // the status line is on the screen (the cursor at its end)

	start                 time.Time
	tasks, slots          int
	done, failed, blocked int
	running               map[string]bool // the tasks at work
	ended                 int             // attempts ended, whose time is in spent
	spent                 float64         // seconds
	stopTick, tickDone    chan struct{}
	closeOnce             sync.Once
}

// newProgress shows a run's progress on w (stderr).
func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, quiet: quiet, running: map[string]bool{}, start: time.Now(), width: 80}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && !quiet {
		p.live = true
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			p.width = cols
		}
		p.stopTick, p.tickDone = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// tick redraws the status line every second (its elapsed time and estimate move on).
func (p *progress) tick() {
	defer close(p.tickDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stopTick:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// Write prints a line of the run's log (a warning): above the status line.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.w.Write(b)
	p.redraw()
	return len(b), nil
}

// Event takes an event of the run: the counts, and its line unless quiet.
func (p *progress) Event(e runevents.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(e)
	if line := eventText(e); line != "" && !p.quiet && e.Event != runevents.RunEnd {
		p.clear()
		fmt.Fprintf(p.w, "swarm: run: %s\n", line)
	}
	p.redraw()
}

// count keeps the status line's numbers (under mu).
func (p *progress) count(e runevents.Event) {
	if e.DurationSeconds > 0 {
		p.ended++
		p.spent += e.DurationSeconds
	}
	switch e.Event {
	case runevents.RunStart:
		p.tasks, p.slots = e.Tasks, e.Slots
		if c := e.Counts; c != nil {
			p.done = c.Completed + c.Skipped
		}
	case runevents.TaskStart:
		p.running[e.Task] = true
	case runevents.TaskRetry, runevents.TaskRequeued:
		delete(p.running, e.Task)
	case runevents.TaskEnd:
		delete(p.running, e.Task)
		p.done++
	case runevents.TaskFailed:
		delete(p.running, e.Task)
		p.failed++
	case runevents.TaskBlocked:
		delete(p.running, e.Task)
		p.blocked++
	}
}

// status is the status line: counts, slots in use, the time so far and the time left.
func (p *progress) status() string {
	s := fmt.Sprintf("%d/%d done", p.done, p.tasks)
	if p.failed > 0 {
		s += fmt.Sprintf(", %d failed", p.failed)
	}
	if p.blocked > 0 {
		s += fmt.Sprintf(", %d blocked", p.blocked)
	}
	s += fmt.Sprintf(" | %d/%d slots busy | %s", len(p.running), p.slots, time.Since(p.start).Round(time.Second))
	if left, ok := p.left(); ok {
		s += fmt.Sprintf(" | ~%s left", left)
	}
	if len(s) >= p.width {
		s = s[:p.width-1]
	}
	return s
}

// left estimates the time left: the tasks not ended, in waves of the slots, each of the mean
// time of the attempts ended so far. None before an attempt ended.
func (p *progress) left() (time.Duration, bool) {
	if p.ended == 0 || p.slots == 0 {
		return 0, false
	}
	rest := p.tasks - p.done - p.failed - p.blocked
	if rest <= 0 {
		return 0, false
	}
	waves := (rest + p.slots - 1) / p.slots
	return time.Duration(float64(waves) * p.spent / float64(p.ended) * float64(time.Second)).Round(time.Second), true
}

// clear takes the status line off the screen (under mu), so that a line can be printed.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// redraw draws the status line again (under mu).
func (p *progress) redraw() {
	if !p.live || p.tasks == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s", p.status())
	p.shown = true
}

// Close takes the status line away for good (the summary follows).
func (p *progress) Close() {
	p.closeOnce.Do(func() {
		if p.stopTick != nil {
			close(p.stopTick)
			<-p.tickDone
		}
		p.mu.Lock()
		p.live = false
		p.clear()
		p.mu.Unlock()
	})
}

// eventText is an event as a line of words (without the time), its text from the events file
// made printable: what swarm run prints as it works and swarm run follow prints.
func eventText(e runevents.Event) string {
	q := record.Printable
	switch e.Event {
	case runevents.RunStart:
		s := fmt.Sprintf("execution %s: %d tasks on %d slots", q(e.Execution), e.Tasks, e.Slots)
		if c := e.Counts; c != nil && c.Completed+c.Skipped > 0 {
			s += fmt.Sprintf(" (%d done before)", c.Completed+c.Skipped)
		}
		return s
	case runevents.TaskStart:
		if e.Reason != "" {
			return fmt.Sprintf("%s: %s: waiting for attempt %d, from an earlier run", q(e.Agent), q(e.Task), e.Attempt)
		}
		return fmt.Sprintf("%s: %s: started (attempt %d)", q(e.Agent), q(e.Task), e.Attempt)
	case runevents.TaskEnd:
		return fmt.Sprintf("%s: %s: completed (attempt %d, %s)", q(e.Agent), q(e.Task), e.Attempt, q(e.Commit))
	case runevents.TaskRetry:
		return fmt.Sprintf("%s: %s: %s; retrying", q(e.Agent), q(e.Task), q(e.Reason))
	case runevents.TaskFailed:
		if e.Agent == "" {
			return fmt.Sprintf("%s: failed: %s", q(e.Task), q(e.Reason))
		}
		return fmt.Sprintf("%s: %s: failed: %s", q(e.Agent), q(e.Task), q(e.Reason))
	case runevents.TaskBlocked:
		return fmt.Sprintf("%s: blocked: %s", q(e.Task), q(e.Reason))
	case runevents.HostOffline:
		return fmt.Sprintf("host %s went offline (%s)", q(e.Host), q(e.Reason))
	case runevents.TaskRequeued:
		return fmt.Sprintf("%s: %s: %s", q(e.Agent), q(e.Task), q(e.Reason))
	case runevents.Merge:
		return fmt.Sprintf("%s: merged %s (%s)", q(e.Task), q(e.Branch), q(e.Commit))
	case runevents.RunEnd:
		s := fmt.Sprintf("execution %s %s", q(e.Execution), q(e.Status))
		if c := e.Counts; c != nil {
			s += fmt.Sprintf(": %d completed, %d failed, %d blocked, %d skipped, %d not run", c.Completed, c.Failed, c.Blocked, c.Skipped, c.Pending)
		}
		if e.Halted {
			s += " (--halt)"
		}
		return s
	}
	return strings.TrimSpace(q(e.Event + " " + e.Task + " " + e.Reason))
}

// hookDrain bounds how long swarm run, its work over, waits for its --on-event hook to be told
// the last events: a hook that hangs holds its end that long at most.
const hookDrain = hook.DefaultTimeout

// runTold is what is told a run's events: the progress shown on stderr, and the --on-event hook.
type runTold struct {
	progress *progress
	hook     *hook.Hook
}

// tellRun sets cfg's Log and Events to show the run's progress on stderr (o.quiet: none) and
// to tell the --on-event hook (runManifest checked its command line).
func tellRun(o *runOptions, stderr io.Writer, cfg *swarmrun.Config) *runTold {
	p, ok := stderr.(*progress) // runManifest's, which the hosts' log writes to already
	if !ok {
		p = newProgress(stderr, o.quiet)
	}
	t := &runTold{progress: p}
	t.hook, _ = hook.New(o.onEvent)
	t.hook.Warn = func(err error) { fmt.Fprintf(t.progress, "swarm: warning: %v\n", err) }
	cfg.Log = prefixed{w: t.progress}
	cfg.Events = func(e runevents.Event) {
		t.progress.Event(e)
		t.hook.Send(runevents.HookEvent(e))
	}
	return t
}

// closeHook gives the hook hookDrain to be told the events still queued.
func (t *runTold) closeHook() {
	if !t.hook.CloseWithin(hookDrain) {
		fmt.Fprintf(t.progress, "swarm: warning: the --on-event hook was not told the run's last events within %s: stopped\n", hookDrain)
	}
}
