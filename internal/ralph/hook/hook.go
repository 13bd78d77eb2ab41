// Package hook runs a user's command on each transition of ralph's work (a loop or a task
// started, ended, held by a usage limit, stopped by the no-progress breaker, failed), with one
// JSON event on its stdin: `--on-event CMD` of ralph's three kinds of work.
//
// The command is split into words (Split: spaces separate, '…' and "…" group, no expansion)
// and run without a shell; a user who needs one says so (`sh -c 'curl … | …'`). Each run has
// its own process group, killed whole at the bound (Timeout, 10 s by default), its output
// discarded; its failure is reported to the caller as a warning and never changes the outcome
// of the work. Nothing it starts outlives it: what it left behind when it ends, in its group
// or not (a child that called setsid, a daemon that forked twice), is found by a mark in its
// environment and killed (reap.go). Events are run one after another, in order, on a
// goroutine of their own, so a slow hook does not hold the work up; Close waits for those
// queued (each bounded).
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Event names.
const (
	Start   = "start"
	End     = "end"
	Limit   = "limit"
	Breaker = "breaker"
	Failure = "failure"
	// Waiting and Exit are a swarm worker's (swarm spawn --on-event, kind "worker"): its
	// agent started waiting for input; its agent exited (ExitCode).
	Waiting = "waiting"
	Exit    = "exit"
)

// Event is what the hook reads on its stdin, one JSON object and a newline.
type Event struct {
	// Kind is the kind of work: "loop" (swarm's loops), "aiwg" (AIWG's loops), "queue",
	// "worker" (a swarm worker).
	Kind string `json:"kind"`
	// Event is the transition: start, end, limit, breaker, failure; a worker's waiting, exit.
	Event string `json:"event"`
	// Worker names a swarm worker; ExitCode is its agent's exit code (exit; nil: not known).
	Worker   string `json:"worker,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Loop names a loop (its name or loop id), Plan and Task a queue's task.
	Loop string `json:"loop,omitempty"`
	Plan string `json:"plan,omitempty"`
	Task string `json:"task,omitempty"`
	// Branch is the task's branch a merge landed (event "merge": swarm run merge, ralph queue
	// merge).
	Branch string `json:"branch,omitempty"`
	// Execution names a swarm run's execution (kind "run"), Agent the slot a task ran in,
	// Host its host (or the host that went offline), Commit a completed task's commit.
	Execution string `json:"execution_id,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Host      string `json:"host,omitempty"`
	Commit    string `json:"commit,omitempty"`
	// Iteration is the loop's iteration, or the task's attempt.
	Iteration int `json:"iteration,omitempty"`
	// Status is the loop's or task's status after the transition; Reason why.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// CostUSD is the cost so far (nil: not known); Log the agent's output log.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	Log     string   `json:"log,omitempty"`
	// Time is when it happened (RFC 3339, UTC).
	Time string `json:"time"`
	// Tasks and Slots are a swarm run's tasks and slots (run-start); Counts its tasks by where
	// they stand (run-start: what earlier runs ended; run-end: the end); WallSeconds how long
	// the run took (run-end).
	Tasks       int     `json:"tasks,omitempty"`
	Slots       int     `json:"slots,omitempty"`
	Counts      *Counts `json:"counts,omitempty"`
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

// Counts counts a swarm run's tasks (kind "run": run-start and run-end).
type Counts struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Blocked   int `json:"blocked"`
	Skipped   int `json:"skipped"`
	Pending   int `json:"pending"` // not ended: not run, queued or at work
	Retries   int `json:"retries"` // attempts failed with attempts left
}

// DefaultTimeout bounds each run of the hook.
const DefaultTimeout = 10 * time.Second

// Split splits a command line into words: spaces and tabs separate them, '…' and "…" group
// (no escapes inside '…'; \" and \\ inside "…", and a backslash escapes the next character
// outside quotes). Nothing is expanded: no variables, globs or pipes.
func Split(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in := false // a word is under way (an empty "" is a word)
	var quote rune
	esc := false
	for _, c := range s {
		switch {
		case esc:
			w.WriteRune(c)
			esc = false
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteRune(c)
			}
		case quote == '"':
			switch c {
			case '"':
				quote = 0
			case '\\':
				esc = true
			default:
				w.WriteRune(c)
			}
		case c == '\\':
			esc, in = true, true
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(c)
			in = true
		}
	}
	if quote != 0 || esc {
		return nil, errors.New("an unterminated quote or a trailing backslash")
	}
	if in {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

// QueueLen is how many events may wait for a hook that is slower than they come.
const QueueLen = 256

// Hook runs one command per event. The zero Hook (no Argv) runs nothing.
type Hook struct {
	Argv    []string
	Dir     string        // its directory ("" this process's)
	Env     []string      // its environment (nil: this process's)
	Timeout time.Duration // the bound of each run (0: DefaultTimeout)
	// Warn, when set, is told each run that failed (and the hook keeps going).
	Warn func(error)

	once  sync.Once
	queue chan Event // QueueLen events at most wait for their run; Send drops beyond
	done  chan struct{}
	// stop ends the runs (CloseWithin's bound): the one under way is killed, those queued
	// are dropped.
	stop context.CancelFunc
}

// New is a hook running the command line cmd ("" : none).
func New(cmd string) (*Hook, error) {
	if strings.TrimSpace(cmd) == "" {
		return &Hook{}, nil
	}
	argv, err := Split(cmd)
	if err != nil {
		return nil, fmt.Errorf("--on-event %q: %v", cmd, err)
	}
	return &Hook{Argv: argv}, nil
}

// Send queues e for the hook (stamped now when it has no time) and returns at once.
func (h *Hook) Send(e Event) {
	if h == nil || len(h.Argv) == 0 {
		return
	}
	if e.Time == "" {
		e.Time = time.Now().UTC().Format(time.RFC3339)
	}
	h.once.Do(func() {
		h.queue, h.done = make(chan Event, QueueLen), make(chan struct{})
		ctx, stop := context.WithCancel(context.Background())
		h.stop = stop
		go func() {
			defer close(h.done)
			for e := range h.queue {
				if ctx.Err() != nil {
					continue // stopped: the rest are dropped
				}
				if err := h.Run(ctx, e); err != nil && ctx.Err() == nil && h.Warn != nil {
					h.Warn(err)
				}
			}
		}()
	})
	select {
	case h.queue <- e:
	default:
		// The hook is that far behind (a hook that hangs takes its whole bound per event): the
		// event is dropped rather than the loop held, its lock with it, until the hook catches up.
		if h.Warn != nil {
			h.Warn(fmt.Errorf("--on-event: %d events wait for the hook already: %s event dropped", cap(h.queue), e.Event))
		}
	}
}

// Close waits for the events sent so far to have been run (each within its bound).
func (h *Hook) Close() {
	if h == nil || h.queue == nil {
		return
	}
	close(h.queue)
	<-h.done
}

// CloseWithin is Close bounded by d: at d, the run under way is killed (with what it left
// behind) and the events not run yet are dropped. It reports whether every event was run.
// A command that ends once its work is over (swarm run) tells its last events this way: a
// hook that hangs holds it d at most, not its bound for every event still queued.
func (h *Hook) CloseWithin(d time.Duration) bool {
	if h == nil || h.queue == nil {
		return true
	}
	close(h.queue)
	select {
	case <-h.done:
		return true
	case <-time.After(d):
	}
	h.stop()
	<-h.done
	return false
}

// Run runs the hook on e now: e as one line of JSON on its stdin, in its own process group,
// the whole group killed at the bound. Its error says how it failed.
func (h *Hook) Run(ctx context.Context, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	mark := newMark()
	cmd := exec.CommandContext(ctx, h.Argv[0], h.Argv[1:]...)
	cmd.Dir = h.Dir
	cmd.Env = markedEnv(h.Env, mark)
	cmd.Stdin = bytes.NewReader(append(b, '\n'))
	// Stdout and stderr nil: the null device, not a pipe that a child left behind would hold.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child may hold the stdin pipe: Wait gives up on it a moment after the kill.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind in its group
		killLeftBehind(mark)                            // and outside it
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("the --on-event hook (%s event) did not end within %s: killed", e.Event, timeout)
	case err != nil:
		return fmt.Errorf("the --on-event hook (%s event): %v", e.Event, err)
	}
	return nil
}
