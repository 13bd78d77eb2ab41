package aiwg

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Statuses of a loop, as seed 003 names them.
const (
	StatusRunning    = "running"
	StatusPaused     = "paused"
	StatusCompleting = "completing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusAborted    = "aborted"
	StatusCrashed    = "crashed"
)

// transitions is seed 003's state_transitions table, and the only way a status changes
// (Transition). The four terminal statuses have no way out.
var transitions = map[string][]string{
	StatusRunning:    {StatusPaused, StatusCompleting, StatusAborted, StatusCrashed, StatusFailed},
	StatusPaused:     {StatusRunning, StatusAborted},
	StatusCompleting: {StatusCompleted, StatusFailed, StatusCrashed},
	StatusCompleted:  nil,
	StatusFailed:     nil,
	StatusAborted:    nil,
	StatusCrashed:    nil,
}

// Terminal reports whether status has no transition out.
func Terminal(status string) bool {
	next, ok := transitions[status]
	return ok && len(next) == 0
}

// CanTransition reports whether seed 003's table allows from → to.
func CanTransition(from, to string) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ErrTransition is returned (wrapped) for a status change the table does not allow.
var ErrTransition = errors.New("not an allowed status change")

// Pause reasons (State.PauseReason): who paused the loop decides who resumes it.
const (
	PauseUser        = "user"        // ralph pause: only ralph resume continues it
	PauseUsageLimit  = "usage-limit" // the agent's limit: the loop continues at resume_at by itself
	PauseInterrupted = "interrupted" // SIGINT or SIGTERM to the controller
)

// State is a loop's state.json: seed 003's v2 schema (the embedded loop-state schema, which
// every write is validated against), and a few members of ours the schema allows
// (additionalProperties), each documented where it is declared.
type State struct {
	Version            string        `json:"version"`
	LoopID             string        `json:"loop_id"`
	Status             string        `json:"status"`
	Iteration          int           `json:"iteration"`
	Task               string        `json:"task"`
	CompletionCriteria string        `json:"completion_criteria"`
	StartedAt          string        `json:"started_at"`
	LastUpdated        string        `json:"last_updated"`
	CompletedAt        *string       `json:"completed_at"`
	Owner              string        `json:"owner"`
	PID                *int          `json:"pid"`
	WorkingDirectory   string        `json:"working_directory"`
	Configuration      Configuration `json:"configuration"`
	Progress           Progress      `json:"progress"`
	Metrics            Metrics       `json:"metrics"`
	LastCheckpoint     *string       `json:"last_checkpoint"`
	ErrorContext       *ErrorContext `json:"error_context"`

	// Ours. Agent is the agent as --agent gave it (claude, claude:sonnet).
	Agent string `json:"agent"`
	// PIDStart is the controller's start time (clock ticks after boot, /proc/PID/stat), so a
	// pid reused by another process is never taken for the controller.
	PIDStart uint64 `json:"pid_start,omitempty"`
	// TimeoutSeconds is --timeout exactly (configuration.timeout_minutes is whole minutes).
	TimeoutSeconds int64 `json:"timeout_seconds,omitempty"`
	// StateDir is where each iteration's run and result records go (bead <loop_id>-<i>).
	StateDir string `json:"state_dir"`
	// StartCommit is HEAD when the loop started ("" outside git), and StartStash the
	// uncommitted changes then (git stash create; "" for none), for abort --revert.
	StartCommit string `json:"start_commit,omitempty"`
	StartStash  string `json:"start_stash,omitempty"`
	// TimeoutFrom is when the timeout's clock started: started_at, moved on by the time the
	// loop spent paused (a usage limit's hours do not use up the loop's time).
	TimeoutFrom string `json:"timeout_from,omitempty"`
	// PausedAt is when the loop was paused.
	PausedAt *string `json:"paused_at,omitempty"`
	// PauseReason says why a paused loop is paused; ResumeAt when a usage-limit pause ends.
	PauseReason string  `json:"pause_reason,omitempty"`
	ResumeAt    *string `json:"resume_at,omitempty"`
	// ExitReason says why a loop ended: completed, max-iterations, timeout, aborted, crashed.
	ExitReason string `json:"exit_reason,omitempty"`
	// Iterations is one entry per iteration run, for report.
	Iterations []Iteration `json:"iterations"`
	// NoProgress is the no-progress breaker's N (nil: breaker.DefaultThreshold; 0: off), and
	// Breaker its count so far (breaker.State).
	NoProgress *int           `json:"no_progress,omitempty"`
	Breaker    *breaker.State `json:"breaker,omitempty"`
	// Rails are the loop's other rails (rails.go), shown here: the controller takes them from
	// the loop's seal, outside the workspace, and puts them back when they are changed here.
	Rails *rails.Rails `json:"rails,omitempty"`
}

// NoProgressN is the loop's no-progress threshold (0: the breaker is off).
func (st *State) NoProgressN() int {
	if st.NoProgress == nil {
		return breaker.DefaultThreshold
	}
	return *st.NoProgress
}

// Configuration is seed 003's LoopConfiguration.
type Configuration struct {
	MaxIterations      int    `json:"max_iterations"`
	TimeoutMinutes     *int64 `json:"timeout_minutes"`
	Interactive        bool   `json:"interactive"`
	AutoTest           bool   `json:"auto_test"`
	CheckpointInterval int    `json:"checkpoint_interval"`
	ExecutionMode      string `json:"execution_mode"`
}

// Progress is seed 003's ProgressTracking. EstimatedCompletion is when a running loop will
// have ended at the latest, at its average pace (EstimateCompletion); null when that cannot be
// told (no iteration counted yet, or the loop is not running).
type Progress struct {
	CompletionChecks    []Check `json:"completion_checks"`
	LastCompletionCheck *Check  `json:"last_completion_check"`
	EstimatedCompletion *string `json:"estimated_completion"`
}

// EstimateCompletion is seed 003's progress.estimated_completion for st at now: a loop ends
// when its completion command passes, which no one can predict, so this is the latest end its
// caps allow at its pace so far: now plus the iterations left under max_iterations times the
// average iteration's time, or the timeout's end when that comes first. Nil while the loop is
// not running or has no counted iteration (no pace to go by).
func EstimateCompletion(st *State, now time.Time) *string {
	m := st.Metrics
	if st.Status != StatusRunning || m.TotalIterations == 0 || m.AverageIterationTimeSeconds <= 0 {
		return nil
	}
	left := st.Configuration.MaxIterations - m.TotalIterations
	if left < 0 {
		left = 0
	}
	end := now.Add(time.Duration(float64(left) * m.AverageIterationTimeSeconds * float64(time.Second)))
	if st.TimeoutSeconds > 0 {
		from := st.TimeoutFrom
		if from == "" {
			from = st.StartedAt
		}
		if t, ok := parseStamp(from); ok {
			if deadline := t.Add(time.Duration(st.TimeoutSeconds) * time.Second); deadline.Before(end) {
				end = deadline
			}
		}
	}
	if end.Before(now) {
		end = now
	}
	s := stamp(end)
	return &s
}

// Check is one run of the completion command. ExitCode and DurationSeconds are ours.
type Check struct {
	Iteration       int     `json:"iteration"`
	Timestamp       string  `json:"timestamp"`
	Passed          bool    `json:"passed"`
	Output          string  `json:"output"`
	ExitCode        int     `json:"exit_code"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// Metrics is seed 003's LoopMetrics. A usage-limited or interrupted iteration is not counted:
// it is run again.
type Metrics struct {
	TotalIterations             int     `json:"total_iterations"`
	SuccessfulIterations        int     `json:"successful_iterations"`
	FailedIterations            int     `json:"failed_iterations"`
	TotalTokens                 int64   `json:"total_tokens"`
	TotalCostUSD                float64 `json:"total_cost_usd"`
	TotalDurationSeconds        int64   `json:"total_duration_seconds"`
	AverageIterationTimeSeconds float64 `json:"average_iteration_time_seconds"`
}

// ErrorContext is seed 003's error_context.
type ErrorContext struct {
	ErrorMessage      string `json:"error_message"`
	ErrorTimestamp    string `json:"error_timestamp"`
	RecoveryAttempted bool   `json:"recovery_attempted"`
}

// Iteration is one run of the agent (ours): its bead in the state directory, how it ended, and
// what it spent. Outcome is done or failed (counted), usage-limit, interrupted or rolled-back
// (run again).
type Iteration struct {
	Number          int      `json:"number"`
	Bead            string   `json:"bead"`
	Attempt         int      `json:"attempt"`
	StartedAt       string   `json:"started_at"`
	FinishedAt      string   `json:"finished_at"`
	DurationSeconds float64  `json:"duration_seconds"`
	Outcome         string   `json:"outcome"`
	Reason          string   `json:"reason"`
	ExitCode        *int64   `json:"exit_code"`
	CostUSD         *float64 `json:"cost_usd"`
	InputTokens     int64    `json:"input_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
}

// Iteration outcomes.
const (
	OutcomeDone        = "done"
	OutcomeFailed      = "failed"
	OutcomeUsageLimit  = "usage-limit"
	OutcomeInterrupted = "interrupted"
	// OutcomeRolledBack is an iteration after the checkpoint a crashed loop was restored from.
	OutcomeRolledBack = "rolled-back"
)

// Transition changes st's status to to, if seed 003's table allows it.
func (st *State) Transition(to string) error {
	if st.Status == to {
		return nil
	}
	if !CanTransition(st.Status, to) {
		return fmt.Errorf("loop %s is %s: %s → %s is %w (%s)", st.LoopID, st.Status, st.Status, to, ErrTransition, allowed(st.Status))
	}
	st.Status = to
	if Terminal(to) {
		if to == StatusCompleted {
			now := stamp(time.Now())
			st.CompletedAt = &now
		}
		st.PID, st.PIDStart = nil, 0
	}
	now := time.Now()
	if to == StatusPaused {
		s := stamp(now)
		st.PausedAt = &s
	} else {
		if at, ok := parseStamp(deref(st.PausedAt)); ok {
			from := st.TimeoutFrom
			if from == "" {
				from = st.StartedAt
			}
			if t, ok := parseStamp(from); ok && now.After(at) {
				st.TimeoutFrom = stamp(t.Add(now.Sub(at).Truncate(time.Second)))
			}
		}
		st.PauseReason, st.ResumeAt, st.PausedAt = "", nil, nil
	}
	return nil
}

func allowed(from string) string {
	next := transitions[from]
	if len(next) == 0 {
		return from + " is final"
	}
	return "from " + from + ": " + strings.Join(next, ", ")
}

// Registry is .aiwg/ralph/registry.json as AIWG writes it. Active loops are those not in a
// terminal status; an entry leaves when its loop ends (aborted ones too, unlike AIWG's, where
// they kept counting toward the limit).
type Registry struct {
	Version            string          `json:"version"`
	MaxConcurrentLoops int             `json:"max_concurrent_loops"`
	UpdatedAt          string          `json:"updated_at"`
	ActiveLoops        []RegistryEntry `json:"active_loops"`
	TotalActive        int             `json:"total_active"`
	TotalCompleted     int             `json:"total_completed"`
	TotalAborted       int             `json:"total_aborted"`
	// Ours: AIWG counted every other end as completed.
	TotalFailed  int `json:"total_failed"`
	TotalCrashed int `json:"total_crashed"`
}

// RegistryEntry is one active loop in the registry.
type RegistryEntry struct {
	LoopID             string   `json:"loop_id"`
	TaskSummary        string   `json:"task_summary"`
	Status             string   `json:"status"`
	StartedAt          string   `json:"started_at"`
	Owner              string   `json:"owner"`
	PID                *int     `json:"pid"`
	Iteration          int      `json:"iteration"`
	MaxIterations      int      `json:"max_iterations"`
	CompletionCriteria string   `json:"completion_criteria"`
	Priority           string   `json:"priority"`
	Tags               []string `json:"tags"`
	// LastActive is ours: the loop's heartbeat (seed 003's update_registry_heartbeat), the
	// time of its last state update, and while an iteration runs its controller's beat
	// (Runtime.Heartbeat), so a loop whose controller is stuck or gone shows its age here.
	LastActive string `json:"last_active,omitempty"`
}

// MaxConcurrent is AIWG's limit of active loops per workspace (REF-088).
const MaxConcurrent = 4

// Workspace is a directory whose loops live in .aiwg/ralph: it names their files.
type Workspace struct{ Root string }

// Dir is .aiwg/ralph.
func (w Workspace) Dir() string { return filepath.Join(w.Root, ".aiwg", "ralph") }

// RegistryPath is .aiwg/ralph/registry.json.
func (w Workspace) RegistryPath() string { return filepath.Join(w.Dir(), "registry.json") }

// LockPath is the lock every change of the registry and of the loops' states is made under,
// AIWG's registry.json.lock (here a flock on a file that stays).
func (w Workspace) LockPath() string { return fsx.LockPath(w.RegistryPath()) }

// LoopDir is .aiwg/ralph/loops/<id>.
func (w Workspace) LoopDir(id string) string { return filepath.Join(w.Dir(), "loops", id) }

// StatePath is a loop's state.json.
func (w Workspace) StatePath(id string) string { return filepath.Join(w.LoopDir(id), "state.json") }

// CheckpointRel is a checkpoint's path as last_checkpoint keeps it: relative to the workspace,
// as AIWG's example has it.
func CheckpointRel(id string, n int) string {
	return filepath.Join(".aiwg", "ralph", "loops", id, "checkpoints", fmt.Sprintf("iteration-%03d.json.gz", n))
}

// DefaultStateDir is where the iterations' records go without STATE_DIR.
func (w Workspace) DefaultStateDir() string { return filepath.Join(w.Dir(), "state") }

// maxState bounds what is read of a state file: completion checks keep 4 KB of output each,
// so a loop of 200 iterations is about a megabyte.
const maxState = 16 << 20

// ReadState reads a loop's state.json: a regular file, never through a link.
func (w Workspace) ReadState(id string) (*State, error) {
	b, err := statedir.ReadFile(w.StatePath(id), maxState)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(fsx.StripBOM(b), &st); err != nil {
		return nil, fmt.Errorf("%s: %w; it is not a loop's state: move it away", w.StatePath(id), err)
	}
	if st.LoopID != id {
		return nil, fmt.Errorf("%s names loop %q, not %q", w.StatePath(id), st.LoopID, id)
	}
	return &st, nil
}

var (
	loopSchemaOnce sync.Once
	loopSchema     *schema.Schema
	loopSchemaErr  error
)

// Encode validates st against the embedded loop-state schema and returns its JSON: nothing is
// written that validate-state --kind loop-state would refuse.
func Encode(st *State) ([]byte, error) {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	loopSchemaOnce.Do(func() { loopSchema, loopSchemaErr = schema.Load("loop-state", "") })
	if loopSchemaErr != nil {
		return nil, loopSchemaErr
	}
	problems, err := loopSchema.Validate(b)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("loop %s: the state would not validate (%s); nothing written", st.LoopID, problems[0])
	}
	return b, nil
}

// writeState writes st (validated) atomically; the caller holds the workspace's lock.
func (w Workspace) writeState(st *State) error {
	now := time.Now()
	st.LastUpdated = stamp(now)
	st.Progress.EstimatedCompletion = EstimateCompletion(st, now)
	b, err := Encode(st)
	if err != nil {
		return err
	}
	if err := statedir.MkdirFor(w.StatePath(st.LoopID)); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(w.StatePath(st.LoopID), b, 0o600)
}

// readRegistry reads the registry (an empty one when there is none).
func (w Workspace) readRegistry() (*Registry, error) {
	reg := &Registry{Version: "2.0.0", MaxConcurrentLoops: MaxConcurrent, ActiveLoops: []RegistryEntry{}}
	b, err := statedir.ReadFile(w.RegistryPath(), maxState)
	if errors.Is(err, os.ErrNotExist) {
		return reg, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(fsx.StripBOM(b), reg); err != nil {
		return nil, fmt.Errorf("%s: %w; repair it or move it away (the loops' states are in %s)", w.RegistryPath(), err, filepath.Join(w.Dir(), "loops"))
	}
	if reg.ActiveLoops == nil {
		reg.ActiveLoops = []RegistryEntry{}
	}
	return reg, nil
}

func (w Workspace) writeRegistry(reg *Registry) error {
	reg.UpdatedAt = stamp(time.Now())
	reg.TotalActive = len(reg.ActiveLoops)
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(w.RegistryPath(), append(b, '\n'), 0o600)
}

// entryOf is st's registry entry.
func entryOf(st *State) RegistryEntry {
	return RegistryEntry{LoopID: st.LoopID, TaskSummary: OneLine(st.Task, 80), Status: st.Status, StartedAt: st.StartedAt,
		Owner: st.Owner, PID: st.PID, Iteration: st.Iteration, MaxIterations: st.Configuration.MaxIterations,
		CompletionCriteria: st.CompletionCriteria, Priority: "medium", Tags: []string{}, LastActive: st.LastUpdated}
}

// syncRegistry brings st's registry entry up to date: added or changed while it is active,
// removed, and counted, when it ends.
func (reg *Registry) sync(st *State) {
	idx := -1
	for i, e := range reg.ActiveLoops {
		if e.LoopID == st.LoopID {
			idx = i
		}
	}
	if Terminal(st.Status) {
		if idx < 0 {
			return
		}
		reg.ActiveLoops = append(reg.ActiveLoops[:idx], reg.ActiveLoops[idx+1:]...)
		switch st.Status {
		case StatusCompleted:
			reg.TotalCompleted++
		case StatusAborted:
			reg.TotalAborted++
		case StatusFailed:
			reg.TotalFailed++
		case StatusCrashed:
			reg.TotalCrashed++
		}
		return
	}
	if idx < 0 {
		reg.ActiveLoops = append(reg.ActiveLoops, entryOf(st))
		return
	}
	reg.ActiveLoops[idx] = entryOf(st)
}

// Checkpoint writes st, gzipped, as checkpoints/iteration-NNN.json.gz and records it as the
// last checkpoint. The caller holds the workspace's lock.
func (w Workspace) checkpoint(st *State, n int) error {
	rel := CheckpointRel(st.LoopID, n)
	st.LastCheckpoint = &rel
	st.LastUpdated = stamp(time.Now())
	b, err := Encode(st)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return err
	}
	path := filepath.Join(w.Root, rel)
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, buf.Bytes(), 0o600)
}

// readCheckpoint reads the state a checkpoint holds (a regular file under the loop's
// checkpoints/, at most maxState bytes uncompressed).
func (w Workspace) readCheckpoint(st *State) (*State, error) {
	if st.LastCheckpoint == nil || *st.LastCheckpoint == "" {
		return nil, os.ErrNotExist
	}
	rel := filepath.Clean(*st.LastCheckpoint)
	want := filepath.Join(".aiwg", "ralph", "loops", st.LoopID, "checkpoints")
	if filepath.Dir(rel) != want {
		return nil, fmt.Errorf("last_checkpoint %q is not in %s", rel, want)
	}
	b, err := statedir.ReadFile(filepath.Join(w.Root, rel), maxState)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", rel, err)
	}
	doc, err := io.ReadAll(io.LimitReader(zr, maxState+1))
	if err != nil || len(doc) > maxState {
		return nil, fmt.Errorf("checkpoint %s: not a loop's state (%v)", rel, err)
	}
	var cp State
	if err := json.Unmarshal(doc, &cp); err != nil || cp.LoopID != st.LoopID {
		return nil, fmt.Errorf("checkpoint %s: not loop %s's state (%v)", rel, st.LoopID, err)
	}
	return &cp, nil
}

// stamp is the time format of the state files (RFC 3339, UTC, seconds).
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func parseStamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// OneLine is s on one line, at most n runes (the last one an ellipsis when it is cut).
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
