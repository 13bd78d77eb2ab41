package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/pyjson"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/worker"
)

// Loop statuses and exit reasons, as the Python swarm writes them.
const (
	StatusRunning = "running"
	StatusPaused  = "paused"
	StatusStopped = "stopped"
	StatusFailed  = "failed"

	ReasonDone         = "done_pattern"
	ReasonMax          = "max_iterations"
	ReasonKilled       = "killed"
	ReasonFailed       = "failed"
	ReasonDisconnected = "monitor_disconnected"
	// ReasonNoProgress: the no-progress breaker opened (ours; the loop is failed).
	ReasonNoProgress = breaker.Reason
)

// State is ralph/<name>/state.json: the Python swarm's RalphState, its keys in its order, then
// ours (which it ignores), then any key neither knows, kept. It is written as Python's
// json.dump(indent=2) writes it, so either tool reads the other's.
type State struct {
	WorkerName            string  `json:"worker_name"`
	PromptFile            string  `json:"prompt_file"`
	MaxIterations         int     `json:"max_iterations"`
	CurrentIteration      int     `json:"current_iteration"`
	Status                string  `json:"status"`
	Started               string  `json:"started"`
	LastIterationStarted  string  `json:"last_iteration_started"`
	LastIterationEnded    string  `json:"last_iteration_ended"`
	IterationDurations    []int64 `json:"iteration_durations"`
	ConsecutiveFailures   int     `json:"consecutive_failures"`
	TotalFailures         int     `json:"total_failures"`
	DonePattern           *string `json:"done_pattern"`
	InactivityTimeout     int     `json:"inactivity_timeout"`
	CheckDoneContinuous   bool    `json:"check_done_continuous"`
	ExitReason            *string `json:"exit_reason"`
	PromptBaselineContent string  `json:"prompt_baseline_content"`
	LastScreenChange      *string `json:"last_screen_change"`
	MonitorPID            *int    `json:"monitor_pid"`
	MaxContext            *int    `json:"max_context"`
	ContextNudgeSent      bool    `json:"context_nudge_sent"`

	// Ours. PromptOffset: where in the worker's output log the agent's words begin (after the
	// typed prompt's echo): the done pattern is looked for only beyond it. EndedIter: the last
	// iteration whose end is recorded (a restarted monitor records an end it missed, once).
	// LastExitCode: the
	// agent's exit code of the last iteration that ended (nil: unknown). LimitedUntil: a usage
	// limit holds the loop until then (UTC ISO). RecordDir: the state directory the run records
	// go to. Worker: how each iteration's worker is started.
	PromptOffset int64       `json:"prompt_log_offset,omitempty"`
	EndedIter    int         `json:"ended_iteration,omitempty"`
	LastExitCode *int64      `json:"last_exit_code,omitempty"`
	LimitedUntil string      `json:"usage_limit_until,omitempty"`
	RecordDir    string      `json:"record_state_dir,omitempty"`
	Worker       *WorkerSpec `json:"worker_spec,omitempty"`
	// NoProgress is the no-progress breaker's N (nil: breaker.DefaultThreshold; 0: off), and
	// Breaker its count so far.
	NoProgress *int           `json:"no_progress,omitempty"`
	Breaker    *breaker.State `json:"breaker,omitempty"`
	// Rails are the loop's budget, call limit, hook and commits (rails.go); CostUSD the cost
	// its agent reported in all, IterationCosts each iteration's (iteration 1 first). CallTimes
	// are the starts of the last hour; LimitReason what LimitedUntil waits for.
	// StartEventSent: the hook was told the loop started. StartCommit and StartSnapshot:
	// HEAD and the whole working tree at the spawn, for abort --revert.
	Rails          *rails.Rails `json:"rails,omitempty"`
	CostUSD        float64      `json:"cost_usd,omitempty"`
	IterationCosts []float64    `json:"iteration_costs_usd,omitempty"`
	CallTimes      []string     `json:"call_times,omitempty"`
	LimitReason    string       `json:"limit_reason,omitempty"`
	StartEventSent bool         `json:"start_event_sent,omitempty"`
	StartCommit    string       `json:"start_commit,omitempty"`
	StartSnapshot  string       `json:"start_snapshot,omitempty"`

	extra []member // keys neither tool knows, in their order
}

// NoProgressN is the loop's no-progress threshold (0: the breaker is off).
func (st *State) NoProgressN() int {
	if st.NoProgress == nil {
		return breaker.DefaultThreshold
	}
	return *st.NoProgress
}

// workDir is where the loop's agent works: its worktree, else its directory.
func (st *State) workDir() string {
	if st.Worker == nil {
		return ""
	}
	if st.Worker.Worktree != nil {
		return st.Worker.Worktree.Path
	}
	return st.Worker.Cwd
}

// WorkerSpec is how a loop's worker is started, kept in the loop's state so that a monitor
// restarted after its worker's entry went away can start the next one.
type WorkerSpec struct {
	Cmd      []string  `json:"cmd"`
	Cwd      string    `json:"cwd"`
	Env      []string  `json:"env"`
	Tags     []string  `json:"tags"`
	Session  string    `json:"session"`
	Socket   *string   `json:"socket"`
	Worktree *Worktree `json:"worktree"`
	Profile  string    `json:"profile,omitempty"`
	// The heartbeat started with each iteration's worker (spawn --heartbeat), "" for none.
	Heartbeat        string `json:"heartbeat,omitempty"`
	HeartbeatExpire  string `json:"heartbeat_expire,omitempty"`
	HeartbeatMessage string `json:"heartbeat_message,omitempty"`
}

// Worktree is a loop's worktree, as state.json names a worker's.
type Worktree struct {
	Path     string `json:"path"`
	Branch   string `json:"branch"`
	BaseRepo string `json:"base_repo"`
}

type member struct {
	key   string
	value json.RawMessage
}

// knownKeys are the keys State reads; anything else is kept as it is.
var knownKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"worker_name", "prompt_file", "max_iterations", "current_iteration", "status", "started",
		"last_iteration_started", "last_iteration_ended", "iteration_durations", "consecutive_failures",
		"total_failures", "done_pattern", "inactivity_timeout", "check_done_continuous", "exit_reason",
		"prompt_baseline_content", "last_screen_change", "monitor_pid", "max_context", "context_nudge_sent",
		"prompt_log_offset", "ended_iteration", "last_exit_code", "usage_limit_until", "record_state_dir", "worker_spec",
		"no_progress", "breaker", "rails", "cost_usd", "iteration_costs_usd", "call_times", "limit_reason",
		"start_event_sent", "start_commit", "start_snapshot"} {
		m[k] = true
	}
	return m
}()

// errCorrupt is a state file that is not JSON (the Python swarm resets such a state).
var errCorrupt = errors.New("corrupt ralph state")

// decodeState reads a state file as RalphState.from_dict does: worker_name, prompt_file and
// max_iterations required, the rest defaulted (status running, inactivity_timeout 180). A file
// that is not JSON is errCorrupt; one with a missing key or a wrong type is an error naming it.
func decodeState(b []byte) (*State, error) {
	b = bytes.TrimSpace(fsx.StripBOM(b))
	if !json.Valid(b) {
		return nil, errCorrupt
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	st := &State{Status: StatusRunning, InactivityTimeout: 180}
	var known bytes.Buffer
	known.WriteByte('{')
	seen := map[string]bool{}
	for d.More() {
		kt, err := d.Token()
		if err != nil {
			return nil, err
		}
		k := kt.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		seen[k] = true
		if !knownKeys[k] {
			st.extra = append(st.extra, member{k, v})
			continue
		}
		if known.Len() > 1 {
			known.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		known.Write(kb)
		known.WriteByte(':')
		known.Write(v)
	}
	known.WriteByte('}')
	for _, k := range []string{"worker_name", "prompt_file", "max_iterations"} {
		if !seen[k] {
			return nil, fmt.Errorf("the key %q is missing", k)
		}
	}
	if err := json.Unmarshal(known.Bytes(), st); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%q is a JSON %s, not the %s it must be", te.Field, te.Value, te.Type)
		}
		return nil, err
	}
	if st.Status == "" {
		st.Status = StatusRunning
	}
	loopRails(st.Rails)
	return st, nil
}

// encode writes the state as the Python swarm's json.dump(indent=2) does (no final newline).
func (st *State) encode() []byte {
	x := *st
	if x.IterationDurations == nil {
		x.IterationDurations = []int64{}
	}
	b, err := json.Marshal(&x)
	if err != nil {
		panic(fmt.Sprintf("ralph state: %v", err)) // only plain values
	}
	if len(st.extra) > 0 {
		b = b[:len(b)-1]
		for _, m := range st.extra {
			kb, _ := json.Marshal(m.key)
			b = append(append(append(append(b, ','), kb...), ':'), m.value...)
		}
		b = append(b, '}')
	}
	return pyIndent(b)
}

// pyIndent re-writes a JSON document of ours (json.Marshal's) as Python's json.dumps(indent=2)
// writes it (pyjson.Indent).
func pyIndent(doc []byte) []byte {
	b, err := pyjson.Indent(doc)
	if err != nil {
		panic(fmt.Sprintf("ralph state: re-indenting: %v", err)) // doc came from json.Marshal
	}
	return b
}

// Timestamps as the Python swarm writes them: local naive ISO with microseconds for the loop's
// times, UTC with +00:00 for last_screen_change, local to the second in iterations.log.
func localISO(t time.Time) string { return worker.Timestamp(t) }

func utcISO(t time.Time) string {
	t = t.UTC()
	if us := t.Nanosecond() / 1000; us != 0 {
		return t.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%06d+00:00", us)
	}
	return t.Format("2006-01-02T15:04:05") + "+00:00"
}

func parseISO(s string) (time.Time, bool) { return worker.ParseTimestamp(s) }

// store is one loop's files in the swarm directory.
type store struct {
	dir  statedir.Swarm
	name string
	warn func(format string, args ...any)
}

// stateLimit bounds a loop state file: a few kilobytes, the screen baseline included.
const stateLimit = 4 << 20

// errNoState is a loop without a state file.
var errNoState = errors.New("no ralph state")

// load reads the loop's state without a lock (writers replace it atomically). A file that is not
// JSON is reset as the Python swarm did: a warning, a copy beside it, a default state.
func (s store) load() (*State, error) {
	b, err := statedir.ReadFile(s.dir.RalphState(s.name), stateLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoState
	}
	if err != nil {
		return nil, err
	}
	st, err := decodeState(b)
	if errors.Is(err, errCorrupt) {
		return s.reset(b), nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.dir.RalphState(s.name), err)
	}
	return st, nil
}

func (s store) reset(b []byte) *State {
	if s.warn != nil {
		s.warn("corrupt ralph state for '%s', resetting", s.name)
	}
	fsx.WriteFileAtomic(s.dir.RalphStateCorrupted(s.name), b, 0o600)
	return &State{WorkerName: s.name, PromptFile: "PROMPT.md", Status: StatusRunning, InactivityTimeout: 180}
}

// update is a locked read-modify-write of the loop's state: fn changes only what it means to
// change, on the state as it is on disk now, so nothing another process wrote is lost. fn may
// return fsx.ErrUnchanged. A missing state is errNoState (fn is not called). The result is
// checked against the schema before it is written (checked): refused, the file stays as it was.
func (s store) update(ctx context.Context, fn func(st *State) error) (*State, error) {
	var out *State
	err := fsx.Update(ctx, s.dir.RalphState(s.name), s.dir.RalphStateLock(s.name), func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, errNoState
		}
		st, err := decodeState(old)
		if errors.Is(err, errCorrupt) {
			st = s.reset(old)
		} else if err != nil {
			return nil, fmt.Errorf("%s: %v", s.dir.RalphState(s.name), err)
		}
		out = st
		return st.encodeAfter(fn(st))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (st *State) encodeAfter(err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return st.checked()
}

// stateKind is a loop state's schema kind (state/schemas/ralph-state.schema.json).
const stateKind = "ralph-state"

// checked is the state encoded, after a check against the embedded ralph-state schema: a state
// that does not satisfy it is an error wrapping a *schema.InvalidError (errors.Is
// schema.ErrInvalid), and nothing is written.
func (st *State) checked() ([]byte, error) {
	sc, err := schema.Embedded(stateKind)
	if err != nil {
		return nil, err
	}
	doc := st.encode()
	if err := sc.Check(doc); err != nil {
		return nil, fmt.Errorf("not writing the state of loop '%s': %w", st.WorkerName, err)
	}
	return doc, nil
}

// create writes a new loop's state (replacing any) under the lock, checked as update's are.
func (s store) create(ctx context.Context, st *State) error {
	if err := statedir.MkdirFor(s.dir.RalphStateLock(s.name)); err != nil {
		return err
	}
	return fsx.Update(ctx, s.dir.RalphState(s.name), s.dir.RalphStateLock(s.name), func([]byte) ([]byte, error) {
		return st.checked()
	})
}

// logEvent appends a line to iterations.log as the Python swarm formats it:
// "<local ISO to the second> [EVENT] text". The file is opened without following a link.
func (s store) logEvent(event, format string, args ...any) {
	line := fmt.Sprintf("%s [%s] %s\n", time.Now().Format("2006-01-02T15:04:05"), event, fmt.Sprintf(format, args...))
	path := s.dir.RalphIterations(s.name)
	if statedir.MkdirFor(path) != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return
	}
	f.WriteString(line)
}

// formatDuration is the Python swarm's format_duration: "42s", "5m 30s", "1h 15m".
func formatDuration(secs int64) string {
	switch {
	case secs < 60:
		return fmt.Sprintf("%ds", secs)
	case secs < 3600:
		return fmt.Sprintf("%dm %ds", secs/60, secs%60)
	}
	return fmt.Sprintf("%dh %dm", secs/3600, (secs%3600)/60)
}

func strp(s string) *string { return &s }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// encodeCompact is the state as one compact JSON document, for a list to re-indent whole.
func (st *State) encodeCompact() []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, st.encode()); err != nil {
		panic(err)
	}
	return out.Bytes()
}
