// Package supervise is the mechanism every tool runs its agents with. A supervisor is the
// agent's parent: it starts the agent on a pseudo-terminal of its own (or on pipes), relays its
// output to the supervisor's terminal (a tmux pane, or no one) and to a log, relays keys typed
// into the pane to the agent, waits for it, enforces the timeout and the free-disk floor, stops
// it (TERM, then KILL after a grace period) when told to, reaps every process the agent left
// behind, and reports how the attempt ended, with a reason that says how the outcome was
// decided.
//
// The supervisor knows nothing of any tool's records: it reports started and finished to a
// Recorder the tool provides (dispatch's writes run and result records, swarm's updates its
// worker state, ralph's its loop state), and Reconcile reports a supervisor found dead to the
// tool's Recorder as lost. One Supervisor can run several attempts in sequence (ralph's
// iterations), each with its own outcome. While it lives it serves a control socket (send
// text, send keys, read the screen, stop) and a registry entry says where it is.
package supervise

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"
)

// Reasons an outcome records, besides "agent-exit-<code>", "agent-signal-<SIG>",
// "watch-timeout-<N>s" and whatever a Watch says.
const (
	ReasonStartFailed   = "agent-start-failed"
	ReasonDiskExhausted = "disk-space-exhausted"
	ReasonSessionKilled = "session-killed" // SIGHUP: the tmux session or server went away
	ReasonKilled        = "killed"         // SIGUSR1 or the control socket's stop
	ReasonLost          = "supervisor-lost"
)

// Statuses of an outcome. They are the records' words, so that a recorder rarely translates.
const (
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusTimeout = "timeout"
)

// SignalKill is what a tool sends a supervisor to stop its agent and record "killed".
const SignalKill = syscall.SIGUSR1

// Attempt is one run of an agent: what to start, where its output goes and how it is watched.
type Attempt struct {
	// Name is the bead, worker or loop the attempt belongs to; Number counts its attempts (or
	// iterations). Both are reported to the recorder and kept in the registry entry.
	Name   string `json:"name"`
	Number int    `json:"number"`

	Dir  string   `json:"dir"` // the agent's working directory
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// Prompt goes on the agent's stdin (then EOF, as `echo "$prompt" | claude -p` did) when
	// Stdin is set, and into PromptFile (0600) when that is set.
	Prompt     string `json:"prompt,omitempty"`
	Stdin      bool   `json:"stdin,omitempty"`
	PromptFile string `json:"prompt_file,omitempty"`
	// Terminal starts the agent on a pseudo-terminal of its own, as a tmux pane would; false
	// keeps plain pipes (an agent profile's "terminal": false).
	Terminal bool `json:"terminal"`

	Timeout time.Duration `json:"timeout"` // 0: none
	// Inactivity stops the agent (status timeout, exit 124) once it has printed nothing for
	// that long; 0: never.
	Inactivity time.Duration `json:"inactivity,omitempty"`
	KillGrace  time.Duration `json:"kill_grace"` // between TERM and KILL
	// MinFreeMB stops the agent when a file system of DiskDirs has less free space.
	MinFreeMB int64    `json:"min_free_mb"`
	DiskDirs  []string `json:"disk_dirs,omitempty"`

	// LogPath receives the agent's output, raw, as the terminal showed it.
	LogPath string `json:"log_path"`

	// Watch, when set, is called when the screen changes and every WatchEvery.
	Watch      Watch         `json:"-"`
	WatchEvery time.Duration `json:"-"`
}

// Outcome is how an attempt ended.
type Outcome struct {
	Status   string
	ExitCode int64
	// UnknownExit is set when the exit code cannot be known (the agent never started, the
	// supervisor was lost).
	UnknownExit bool
	Reason      string
	Started     time.Time
	Finished    time.Time
	// Summary is the last 500 characters of the output, control sequences removed.
	Summary string
	// Stragglers counts the processes the agent left behind that the supervisor stopped.
	Stragglers int
}

// ExitReason reports whether the outcome was decided by the agent's own exit (not a timeout,
// a kill or a watch), which is when a tool runs its verification.
func (o *Outcome) ExitReason() bool {
	return len(o.Reason) > len("agent-exit-") && o.Reason[:len("agent-exit-")] == "agent-exit-"
}

// Recorder is a tool's side of the contract: the supervisor tells it an attempt started and
// how it finished, and Reconcile tells it an attempt was lost. It is the only place a tool's
// records are written from.
type Recorder interface {
	// Started is told the agent runs, with its pid. An error is shown, not fatal.
	Started(ctx context.Context, a *Attempt, pid int) error
	// Finished records the outcome durably. console is where the agent's output went, for
	// whatever the recorder runs before writing (a verification). The supervisor keeps its
	// registry entry, with the outcome in it, until Finished succeeds, retrying, so a failed
	// write is finished later by Reconcile instead of lost.
	Finished(ctx context.Context, a *Attempt, out *Outcome, console io.Writer) error
	// Lost records an attempt whose supervisor died: out is the outcome the supervisor kept
	// but could not write, or "supervisor-lost" with the best known finish time. It is called
	// with the name's lock held (the recorder must not take it) and reports whether it closed
	// anything (false: the records were already final).
	Lost(ctx context.Context, e *Entry, out *Outcome) (bool, error)
}

// Annotator is a Recorder that also keeps the notes a Watch makes (ready, busy).
type Annotator interface {
	Annotate(ctx context.Context, a *Attempt, note string)
}

// Watch looks at the agent's screen when it changes and on a tick, and may end or annotate
// the attempt. It runs on the supervisor's loop: it must return quickly.
type Watch func(s *WatchState) Verdict

// WatchState is what a Watch sees.
type WatchState struct {
	// Screen is the agent's screen as a person would see it, last line last.
	Screen func(lines int) []string
	// Changed is set when the screen changed since the last call.
	Changed bool
	// SinceChange is how long the screen has not changed; Elapsed is the attempt's age.
	SinceChange, Elapsed time.Duration
	// WaitingInput: the agent waits for input (its output quiet after a prompt, with the
	// cursor on it, and it is blocked reading its terminal). The Watch is also called when
	// this changes.
	WaitingInput bool
}

// Verdict is a Watch's decision. A Reason with Stop ends the attempt (Status, default
// "done"); a Note without Stop is passed to the recorder.
type Verdict struct {
	Stop   bool
	Status string
	Reason string
	Note   string
}

func exitReason(code int64) string { return fmt.Sprintf("agent-exit-%d", code) }
