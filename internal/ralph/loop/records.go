package loop

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/screen"
)

// Every iteration is also a run record, as dispatch writes them (record.Store: runs/<bead>.json
// and results/<bead>.json, checked against the schemas, written atomically under their locks),
// with the bead "<loop>-<iteration>", so that analyze-runs reports loops beside dispatched work.
// They go to the state directory the loop was spawned with (--state-dir, else $STATE_DIR, else
// $SWARM_DIR/state). A record that cannot be written is a warning in iterations.log: the loop
// goes on.

// recordStore is the loop's run-record store.
func (st *State) recordStore() record.Store { return record.Store{Dir: st.RecordDir} }

func beadOf(name string, n int) string { return fmt.Sprintf("%s-%d", name, n) }

// agentName is what a record says ran: the profile, else the command's program.
func (st *State) agentName() string {
	if st.Worker == nil {
		return "unknown"
	}
	if st.Worker.Profile != "" {
		return st.Worker.Profile
	}
	if len(st.Worker.Cmd) > 0 {
		return filepath.Base(st.Worker.Cmd[0])
	}
	return "unknown"
}

func (st *State) runRecord(it *iteration, prompt string) record.Run {
	bead := beadOf(st.WorkerName, it.n)
	repo := ""
	if st.Worker != nil {
		repo = st.Worker.Cwd
		if st.Worker.Worktree != nil {
			repo = st.Worker.Worktree.Path
		}
	}
	return record.Run{
		SchemaVersion: record.SchemaVersion, Bead: bead, Agent: st.agentName(), Model: "default", Repo: repo,
		Prompt: record.Truncate(prompt, 200), PromptHash: record.PromptHash(prompt), PromptFull: prompt,
		StartedAt: record.FormatTime(it.started), Status: record.StatusRunning, Attempt: 1, MaxRetries: 1,
		SessionName: st.WorkerName, ResultFile: record.ResultFile(st.RecordDir, bead),
		TemplateName: record.Str("ralph"),
	}
}

// beginRecord writes the iteration's run record, running.
func (l *app) beginRecord(ctx context.Context, st *State, it *iteration, prompt string) {
	if st.RecordDir == "" {
		return
	}
	run := st.runRecord(it, prompt)
	if err := st.recordStore().WriteRun(ctx, &run); err != nil {
		l.st.logEvent("WARN", "iteration %d: run record: %v", it.n, err)
	}
}

// endRecord completes the iteration's run record and writes its result record: status done,
// failed or timeout, the agent's exit code, the duration, the end of its output.
func (l *app) endRecord(ctx context.Context, st *State, it *iteration, res result, status string) {
	if st == nil || st.RecordDir == "" {
		return
	}
	prompt, _ := readPrompt(st.PromptFile)
	run := st.runRecord(it, prompt)
	if old, err := record.ReadRun(st.recordStore().RunPath(run.Bead)); err == nil && old.StartedAt != "" {
		run.StartedAt, run.Prompt, run.PromptHash, run.PromptFull = old.StartedAt, old.Prompt, old.PromptHash, old.PromptFull
	}
	now := time.Now()
	finished := record.FormatTime(now)
	var dur *int64
	if d, ok := record.Seconds(run.StartedAt, finished); ok {
		dur = &d
	}
	reason := reasonWord(res)
	summary := screen.Summary(logEnd(l.home.LogPath(st.WorkerName)), 500)
	run.FinishedAt, run.DurationSeconds, run.Status, run.ExitCode, run.OutputSummary = &finished, dur, status, res.exitCode(), &summary
	if status != record.StatusDone {
		run.FailureReason = record.Str(reason)
	}
	result := record.Result{
		SchemaVersion: record.SchemaVersion, Bead: run.Bead, Agent: run.Agent, Status: status, Reason: reason,
		StartedAt: run.StartedAt, FinishedAt: &finished, DurationSeconds: dur, Attempt: 1, MaxRetries: 1,
		ExitCode: run.ExitCode, SessionName: run.SessionName, OutputSummary: &summary,
	}
	s := st.recordStore()
	if err := s.WriteRun(ctx, &run); err != nil {
		l.st.logEvent("WARN", "iteration %d: run record: %v", it.n, err)
		return
	}
	if err := s.WriteResult(ctx, &result); err != nil {
		l.st.logEvent("WARN", "iteration %d: result record: %v", it.n, err)
	}
}

// reasonWord is why an iteration ended, as a record's reason says it.
func reasonWord(res result) string {
	switch res.kind {
	case resDone:
		return "done_pattern"
	case resInactive:
		return fmt.Sprintf("inactivity_timeout_%ds", res.timeout)
	case resCompaction:
		return "compaction"
	case resContext:
		return "context_threshold"
	case resLimited:
		return "usage_limit"
	}
	if res.out != nil && res.out.Reason != "" {
		return res.out.Reason
	}
	return "exited"
}

// logEnd is the last 64 KiB of a worker's log, nil when it cannot be read (fsx.ReadTail: a
// regular file only, never through a link).
func logEnd(path string) []byte {
	b, _ := fsx.ReadTail(path, 64<<10)
	return b
}

// closeLeft makes the current iteration's run record final once the loop's monitor is gone: a
// stop or kill calls it, since an agent's record must be final when the command that stopped it
// returns. The monitor closes the record of an iteration it watched (stopped), but not of one
// it never watched: a stop that came before the monitor recorded its pid (it then refused the
// stopped loop), or in the instant after (its signal ended the monitor's context before its
// first look: run's loop never began), and a monitor that died left the record running. The
// iteration's worker is stopped first, as stopped does, so that the record has its end.
func (l *app) closeLeft(ctx context.Context) {
	st, err := l.st.load()
	if err != nil || st.RecordDir == "" || st.CurrentIteration <= 0 {
		return
	}
	run, err := record.ReadRun(st.recordStore().RunPath(beadOf(st.WorkerName, st.CurrentIteration)))
	if err != nil || run.Status != record.StatusRunning {
		return
	}
	it := &iteration{n: st.CurrentIteration, started: time.Now()}
	if t, ok := parseISO(st.LastIterationStarted); ok {
		it.started = t
	}
	if w, _ := l.home.Worker(l.st.name); w != nil && st.isCurrent(w) {
		it.w = w
		l.stopped(ctx, it)
		return
	}
	l.endRecord(context.WithoutCancel(ctx), st, it, result{kind: resExited}, "failed")
}
