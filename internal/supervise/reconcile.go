package supervise

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/tmux"
)

// Lost is a supervisor Reconcile found gone, and what its recorder did of it.
type Lost struct {
	Name   string `json:"bead"`
	Reason string `json:"reason"`
	// Attempt is set for an attempt closed in a tool's archive of earlier attempts (dispatch's
	// attempts/<bead>/run-<N>.json), not in its current records.
	Attempt int `json:"attempt,omitempty"`
}

// Reconcile judges name: when its supervisor is gone (its process dead and its tmux session
// gone), it kills what is left of the agent and hands the attempt to rec as lost, with the
// outcome the supervisor kept in its entry if it had one (it could not write it), else an
// outcome that says "supervisor-lost" and finishes at the last sign of life. A name whose lock
// is held is being started or recorded and is left alone. session is the tmux session to look
// for when there is no entry (a record written by another tool); sessions is the tmux client.
// It returns nil when there was nothing to close.
func (l Layout) Reconcile(ctx context.Context, sessions *tmux.Client, name, session string, rec Recorder) (*Lost, error) {
	unlock, err := l.Lock(ctx, name, 100*time.Millisecond)
	if errors.Is(err, fsx.ErrLocked) {
		return nil, nil // a launch or a supervisor is at work on it right now
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	return l.ReconcileLocked(ctx, sessions, name, session, rec)
}

// ReconcileLocked is Reconcile for a caller that holds name's lock already (a tool about to
// open the next attempt, which must not archive a lost one as still running). What sits at the
// entry's path but is no entry (a link, a named pipe, an orphaned hand-over file: ErrNotEntry)
// is cleared away first, and name is then judged as one with no entry; a hand-over file too
// young to be an orphan leaves name alone for now.
func (l Layout) ReconcileLocked(ctx context.Context, sessions *tmux.Client, name, session string, rec Recorder) (*Lost, error) {
	o, err := l.FindOrphan(ctx, sessions, name, session)
	if o == nil || err != nil {
		return nil, err
	}
	closed, err := rec.Lost(ctx, o.Entry, o.Outcome)
	if err != nil {
		return nil, err
	}
	l.RemoveEntry(name)
	if !closed {
		return nil, nil
	}
	return &Lost{Name: name, Reason: o.Outcome.Reason}, nil
}

// Orphan is an attempt whose supervisor is gone, as FindOrphan judged it: its entry (a bare
// one, of its name alone, when it had none) and the outcome to record.
type Orphan struct {
	Entry   *Entry
	Outcome *Outcome
}

// FindOrphan is the judging half of ReconcileLocked, for a caller that holds name's lock and
// records the end itself (swarm closes all its lost workers in one write of its state): when
// name's supervisor is gone it kills what is left of the agent and its session, and returns
// the attempt with the outcome to record, the entry's or "supervisor-lost". nil when there is
// nothing to close. The caller records the outcome, then removes the entry (RemoveEntry), in
// that order, so that a crash in between leaves the entry for the next look.
func (l Layout) FindOrphan(ctx context.Context, sessions *tmux.Client, name, session string) (*Orphan, error) {
	entry, err := l.ReadEntry(name)
	if errors.Is(err, ErrNotEntry) {
		if !l.ClearNotEntry(name) {
			return nil, nil
		}
		entry, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if entry != nil && SupervisorAlive(entry.PID, name) {
		return nil, nil
	}
	if entry != nil && entry.Session != "" {
		session = entry.Session
	}
	if session != "" && sessions != nil && (entry == nil || entry.Backend == BackendTmux) {
		live, err := sessions.HasSession(ctx, session)
		if err != nil && !errors.Is(err, tmux.ErrNoTmux) {
			return nil, err
		}
		if live {
			// The pane's process is the supervisor, so a live session whose supervisor is
			// gone is a leftover; with no entry at all, the session is the only sign of
			// life: leave it.
			if entry == nil {
				return nil, nil
			}
			sessions.KillSession(ctx, session)
		}
	}
	if entry == nil {
		entry = &Entry{Name: name}
	}
	if entry.AgentPID > 0 {
		// Pdeathsig should have killed the agent with its supervisor; make sure of it, but
		// only if the pid is still that agent's: a pid is reused once its process is gone.
		if start, ok := proc.StartTime(entry.AgentPID); ok && entry.AgentStart != 0 && start == entry.AgentStart {
			syscall.Kill(-entry.AgentPID, syscall.SIGKILL)
		}
	}
	out := entry.Outcome
	if out == nil {
		out = &Outcome{Status: StatusFailed, Reason: ReasonLost, UnknownExit: true, Finished: l.lastSign(name, entry),
			Summary: summarize(lastBytes(l.LogPath(name), 64<<10))}
	}
	return &Orphan{Entry: entry, Outcome: out}, nil
}

// lastSign is the last time an attempt was known alive: its log's last write, else its start.
// Never "now": a record reconciled months after its supervisor died would otherwise claim a
// months-long run.
func (l Layout) lastSign(name string, e *Entry) time.Time {
	var start time.Time
	if e.StartedAt != "" {
		start, _ = time.Parse(time.RFC3339, e.StartedAt)
	}
	if fi, err := os.Lstat(l.LogPath(name)); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(start) {
		return fi.ModTime()
	}
	return start
}

// lastBytes returns up to n bytes from the end of the regular file at path, nil when it cannot
// be read (fsx.ReadTail: never through a link).
func lastBytes(path string, n int64) []byte {
	b, _ := fsx.ReadTail(path, n)
	return b
}
