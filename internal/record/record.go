// Package record reads and writes the run and result records of dispatch: state/runs/<bead>.json
// and state/results/<bead>.json.
//
// Two forms exist side by side in users' state directories: the full records of schema version 1
// and the legacy minimal records older dispatchers wrote (bead, agent, model, repo, started_at,
// attempt, prompt; results with bead, status, finished_at, attempt), some with the literal
// placeholder '$START' as started_at. Reading accepts both, with or without a UTF-8 BOM, and
// timestamps with fractional seconds or an offset. Writing produces full records only: each is
// checked against the embedded schema, then written atomically under its lock in locks/.
package record

import (
	"encoding/json"
	"path/filepath"

	"github.com/agentfleet/fleet/internal/statedir"
)

// SchemaVersion is the version of the full records this package writes.
const SchemaVersion = 1

// Statuses of a run or result record.
const (
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
	StatusTimeout = "timeout"
)

// MaxSize is the largest record file read. Records are a few kilobytes; a file beyond this is
// a mistake (a log written into the state directory, say) and is refused, not loaded.
const MaxSize = 16 << 20

// Verification is the outcome of the checks run after an agent finished.
type Verification struct {
	Lint        string          `json:"lint,omitempty"`  // pass, fail or skipped
	Tests       string          `json:"tests,omitempty"` // pass, fail or skipped
	UBS         string          `json:"ubs,omitempty"`   // clean, issues or skipped
	LintDetails json.RawMessage `json:"lint_details,omitempty"`
	Overall     string          `json:"overall,omitempty"` // pass or fail
}

// Run is a run record: what was started, for which bead, and (once it ended) how it went.
// Pointer fields are the schema's nullable ones; they marshal as null when nil.
type Run struct {
	SchemaVersion   int           `json:"schema_version"`
	Bead            string        `json:"bead"`
	Agent           string        `json:"agent"`
	Model           string        `json:"model"`
	Repo            string        `json:"repo"`
	Prompt          string        `json:"prompt"` // the first 200 characters of PromptFull
	PromptHash      string        `json:"prompt_hash"`
	StartedAt       string        `json:"started_at"`
	FinishedAt      *string       `json:"finished_at"`
	DurationSeconds *int64        `json:"duration_seconds"`
	Status          string        `json:"status"`
	Attempt         int           `json:"attempt"`
	MaxRetries      int           `json:"max_retries"`
	SessionName     string        `json:"session_name"`
	ResultFile      string        `json:"result_file"`
	ExitCode        *int64        `json:"exit_code"`
	OutputSummary   *string       `json:"output_summary"`
	FailureReason   *string       `json:"failure_reason"`
	TemplateName    *string       `json:"template_name"`
	PromptFull      string        `json:"prompt_full"`
	Verification    *Verification `json:"verification"` // null when nothing was verified, as dispatch.sh wrote it
}

// Result is a result record: the outcome of a bead's latest attempt.
type Result struct {
	SchemaVersion   int           `json:"schema_version"`
	Bead            string        `json:"bead"`
	Agent           string        `json:"agent"`
	Status          string        `json:"status"`
	Reason          string        `json:"reason"`
	StartedAt       string        `json:"started_at"`
	FinishedAt      *string       `json:"finished_at"`
	DurationSeconds *int64        `json:"duration_seconds"`
	Attempt         int           `json:"attempt"`
	MaxRetries      int           `json:"max_retries"`
	WillRetry       bool          `json:"will_retry"`
	ExitCode        *int64        `json:"exit_code"`
	SessionName     string        `json:"session_name"`
	OutputSummary   *string       `json:"output_summary"`
	Verification    *Verification `json:"verification"`
}

// Kind names which of the two records a file holds.
type Kind string

// The two kinds of record, named as validate-state's --kind names them.
const (
	KindRun    Kind = "run"
	KindResult Kind = "result"
)

// CheckBead returns an error unless id is a bead id that is safe as a file name, a tmux session
// name and a git branch name: statedir.CheckName's rule for beads ([A-Za-z0-9][A-Za-z0-9._-]*, at
// most 128 characters, no "..", no final '.' or ".lock", not "HEAD", not ending in "-verify").
func CheckBead(id string) error { return statedir.CheckName(statedir.KindBead, id) }

// SessionName is the tmux session dispatch runs bead in.
func SessionName(bead string) string { return "agent-" + bead }

// DefaultTemplate is the template_name of a run dispatched without a template, as dispatch.sh
// recorded it (and as analyze-runs and score-templates.sh group a run that names none).
const DefaultTemplate = "custom"

// ResultFile is the result_file a run record names for bead: the result record's absolute path
// in the state directory stateDir, as dispatch.sh wrote it (so that a consumer can open it from
// any directory). A stateDir that cannot be made absolute is kept as given.
func ResultFile(stateDir, bead string) string {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return statedir.Dir{Root: stateDir}.Result(bead)
}

// Str returns a pointer to s, for the nullable string fields.
func Str(s string) *string { return &s }

// Int returns a pointer to n, for the nullable integer fields.
func Int(n int64) *int64 { return &n }
