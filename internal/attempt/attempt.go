// Package attempt is the lifecycle of one dispatched attempt, on the shared supervisor: open
// it (take the bead's lock, stop or refuse a live predecessor, archive the previous attempt,
// count, refuse one over the limit), launch it (register, write the running records, start a
// supervisor in tmux or detached and hand it its spec), record its end (Recorder: the run and
// result records, with the verification and the retry rule, and the workspace's hooks around
// them, see package workspace), and close the records of one whose supervisor was lost
// (Reconcile).
//
// dispatch calls it for every launch; swarm and ralph call it to dispatch agents as a library
// call, so whatever starts an agent headless on a task leaves run and result records.
package attempt

import (
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// Tool is the name attempts are registered under, for Reconcile.
const Tool = "dispatch"

// Reasons the lifecycle records, besides the supervisor's.
const (
	ReasonMaxRetries   = "max-retries-reached"
	ReasonLaunchFailed = "tmux-launch-failed"
	ReasonDispatched   = "dispatched"
)

// Session is the tmux session of bead's supervisor: record.SessionName ("agent-<bead>", which the
// records keep), as tmux stores it (a '.' becomes '_', as it did under dispatch.sh).
func Session(bead string) string { return statedir.TmuxName(record.SessionName(bead)) }

// Dir is a state directory as the attempt lifecycle sees it: the records and the supervisors.
type Dir struct {
	Store  record.Store
	Layout supervise.Layout
	// LegacyMaxRetries is the max_retries a legacy record that has none is closed with:
	// DISPATCH_MAX_RETRIES as the command read it; 0 is dispatch.sh's default, 2.
	LegacyMaxRetries int
}

// NewDir returns the Dir of the state directory dir (absolute).
func NewDir(dir string) Dir {
	return Dir{Store: record.Store{Dir: dir}, Layout: supervise.Layout{Dir: dir}}
}

// Path is the state directory.
func (d Dir) Path() string { return d.Store.Dir }

// State names the state directory's files.
func (d Dir) State() statedir.Dir { return statedir.Dir{Root: d.Store.Dir} }

// Spec is what a supervisor is handed for one dispatched attempt: the attempt to run, where
// it runs, and the running run record that its outcome completes.
type Spec struct {
	Attempt supervise.Attempt `json:"attempt"`
	Backend string            `json:"backend"`
	Socket  string            `json:"socket,omitempty"`
	Session string            `json:"session,omitempty"`
	// Verify is a shell command from the user's config or flags, run in the agent's directory
	// after the agent exited on its own; its outcome fills verification.
	Verify        string     `json:"verify,omitempty"`
	VerifyTimeout int64      `json:"verify_timeout,omitempty"` // seconds
	Run           record.Run `json:"run"`
	// Hooks are the workspace's hooks and dispatch.sh's relay and Truthsayer integrations,
	// which the recorder runs around the final records; nil runs none.
	Hooks *workspace.Hooks `json:"hooks,omitempty"`
	// HookEnv is the environment of what runs around the agent (the hooks, the relay, the
	// verification command): dispatch's own, as dispatch.sh's watcher had it, where the agent
	// has the tmux server's (Attempt.Env). nil: the agent's.
	HookEnv []string `json:"hook_env,omitempty"`
}

// hookEnv is the environment of the hooks and the verification command (HookEnv).
func (s *Spec) hookEnv(a *supervise.Attempt) []string {
	if s != nil && s.HookEnv != nil {
		return s.HookEnv
	}
	return a.Env
}

// Complete fills a running run record with an outcome and builds the matching result record,
// with dispatch's retry rule: any outcome but done is retried while attempts remain.
func Complete(run record.Run, out *supervise.Outcome, v *record.Verification) (record.Run, record.Result) {
	finished := record.FormatTime(out.Finished)
	var duration *int64
	if d, ok := record.Seconds(run.StartedAt, finished); ok {
		duration = &d
	}
	run.FinishedAt = &finished
	run.DurationSeconds = duration
	run.Status = out.Status
	var exit *int64
	if !out.UnknownExit {
		exit = record.Int(out.ExitCode)
	}
	run.ExitCode = exit
	summary := out.Summary
	run.OutputSummary = &summary
	run.FailureReason = nil
	if out.Status == record.StatusFailed || out.Status == record.StatusTimeout {
		run.FailureReason = record.Str(out.Reason)
	}
	run.Verification = v
	res := record.Result{
		SchemaVersion: record.SchemaVersion, Bead: run.Bead, Agent: run.Agent, Status: out.Status,
		Reason: out.Reason, StartedAt: run.StartedAt, FinishedAt: &finished, DurationSeconds: duration,
		Attempt: run.Attempt, MaxRetries: run.MaxRetries,
		WillRetry: out.Status != record.StatusDone && run.Attempt < run.MaxRetries,
		ExitCode:  exit, SessionName: run.SessionName, OutputSummary: &summary,
		Verification: v,
	}
	return run, res
}
