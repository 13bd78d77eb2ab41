package attempt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
)

// Reconcile finds beads whose supervisor is gone (its process dead and its tmux session gone)
// while their run record still says "running", and closes them as failed with reason
// supervisor-lost (or with the outcome the supervisor kept but could not write).
//
// It looks at the registry of supervisors only: a bead is registered before its running
// records are written and the entry goes only after the final records are, so every running
// record has an entry, and the cost does not grow with the number of records. all scans every
// run record as well, for records no registry knows: written by other tools, by dispatch.sh, or
// legacy minimal records left running (see closeUnregistered); and every archived attempt, for
// attempts older versions archived while they still said running (see repairArchive).
//
// The state directory is checked first (statedir.Dir.Check): one that is a link or another
// user's is an error, and nothing is touched.
func Reconcile(ctx context.Context, d Dir, sessions *tmux.Client, all bool) ([]supervise.Lost, error) {
	if err := d.State().Check(); err != nil {
		return nil, err
	}
	beads := d.Layout.Registered(validBead)
	if all {
		names, _ := statedir.Beads(d.State().Runs(), ".json")
		for _, bead := range names {
			if leftRunning(d, bead) {
				beads = append(beads, bead)
			}
		}
	}
	var closed []supervise.Lost
	var errs []error
	seen := map[string]bool{}
	for _, bead := range beads {
		if seen[bead] {
			continue
		}
		seen[bead] = true
		// One bead that cannot be judged (an unreadable record, a full disk) must not keep the
		// others from being closed.
		c, err := ReconcileBead(ctx, d, sessions, bead)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bead, err))
			continue
		}
		if c != nil {
			closed = append(closed, *c)
		}
	}
	if all {
		archived, err := repairArchives(ctx, d)
		closed = append(closed, archived...)
		errs = append(errs, err)
	}
	return closed, errors.Join(errs...)
}

// ReconcileBead is Reconcile for one bead; it returns nil when there was nothing to close. A
// bead whose lock is held is being started or recorded right now, and is left alone.
func ReconcileBead(ctx context.Context, d Dir, sessions *tmux.Client, bead string) (*supervise.Lost, error) {
	unlock, err := d.Layout.Lock(ctx, bead, 100*time.Millisecond)
	if errors.Is(err, fsx.ErrLocked) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	return reconcileLocked(ctx, d, sessions, bead, Session(bead), false)
}

// reconcileLocked judges bead under its lock: a registered supervisor by the registry
// (supervise's ReconcileLocked), a record no supervisor of ours registered by closeUnregistered.
// What sits in the registry but is no entry (a link, a named pipe, an older dispatch's orphaned
// hand-over file) is cleared first. replaced says a --force dispatch just stopped the bead's
// supervisor: an attempt it did not record is closed as replaced, ending now.
func reconcileLocked(ctx context.Context, d Dir, sessions *tmux.Client, bead, session string, replaced bool) (*supervise.Lost, error) {
	e, err := d.Layout.ReadEntry(bead)
	if errors.Is(err, supervise.ErrNotEntry) {
		if !d.Layout.ClearNotEntry(bead) {
			return nil, nil // an older dispatch's launch in progress
		}
		e, err = nil, nil
	}
	if err != nil || e != nil {
		var rec supervise.Recorder = &Recorder{Dir: d}
		if replaced {
			rec = replacer{&Recorder{Dir: d}}
		}
		return d.Layout.ReconcileLocked(ctx, sessions, bead, session, rec)
	}
	return closeUnregistered(ctx, d, sessions, bead, replaced)
}

// replacer is the Recorder of a supervisor a --force dispatch stopped that did not record its
// own end: its attempt is closed as replaced, ending now (it ran until it was replaced), unless
// the supervisor kept an outcome it could not write, which stands.
type replacer struct{ *Recorder }

func (r replacer) Lost(ctx context.Context, e *supervise.Entry, out *supervise.Outcome) (bool, error) {
	if out.Reason == supervise.ReasonLost {
		o := *out
		o.Reason, o.Finished = ReasonReplaced, time.Now()
		out = &o
	}
	return r.Recorder.Lost(ctx, e, out)
}

// leftRunning reports whether bead's run record says it is still at work: its status is
// "running", or, for a legacy minimal record (which has no status), its result is missing or
// says "running" (analyze-runs counts both as running).
func leftRunning(d Dir, bead string) bool {
	run, err := record.ReadRun(d.Store.RunPath(bead))
	if err != nil {
		return false
	}
	if run.Status != "" {
		return run.Status == record.StatusRunning
	}
	res, err := record.ReadResult(d.Store.ResultPath(bead))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && res.Status == record.StatusRunning
}

// closeUnregistered closes bead's run record when it was left running and no supervisor of
// ours ever registered it: dispatch.sh's records (full, or the legacy minimal ones of older
// dispatchers). A live tmux session agent-<bead> is dispatch.sh's agent still at work: left
// alone. A legacy record is first completed as validate-state --fix completes it (from its
// result, DISPATCH_MAX_RETRIES for a missing max_retries), so that the closed records satisfy
// the schema; one that cannot be (no agent, say) is an error naming what it lacks. The attempt
// finishes at its last sign of life (lastSign), never now.
func closeUnregistered(ctx context.Context, d Dir, sessions *tmux.Client, bead string, replaced bool) (*supervise.Lost, error) {
	if !leftRunning(d, bead) {
		return nil, nil
	}
	if sessions != nil {
		live, err := sessions.HasSession(ctx, Session(bead))
		if err != nil && !errors.Is(err, tmux.ErrNoTmux) {
			return nil, err
		}
		if live {
			return nil, nil
		}
	}
	// Read as written (statedir.ReadFile): a record that is a link is not closed, since closing
	// it would copy whatever the link points to into the state directory.
	runPath := d.Store.RunPath(bead)
	doc, err := statedir.ReadFile(runPath, record.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading run record: %w", err)
	}
	resDoc, _ := statedir.ReadFile(d.Store.ResultPath(bead), record.MaxSize)
	m, err := record.MigrateRun(doc, resDoc, record.Defaults{Bead: bead, MaxRetries: d.legacyMaxRetries(), StateDir: d.Path()})
	if err != nil {
		return nil, fmt.Errorf("reading run record %s: %w", runPath, err)
	}
	if m.Output != nil {
		doc = m.Output
	}
	if err := record.Check(record.KindRun, doc); err != nil {
		return nil, fmt.Errorf("cannot close %s, left running: %w (add what it lacks, then reconcile again)", runPath, err)
	}
	run, err := record.DecodeRun(doc)
	if err != nil {
		return nil, fmt.Errorf("reading run record %s: %w", runPath, err)
	}
	finished, known := lastSign(d, bead, run.StartedAt)
	out := &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonLost, UnknownExit: true, Finished: finished}
	if replaced {
		out.Reason, out.Finished, known = ReasonReplaced, time.Now(), true
	}
	done, res := Complete(*run, out, nil)
	if !known {
		unknownEnd(&done, &res)
	}
	// No supervisor of ours ran it, so no dispatch --wait --retry is waiting on it: nothing will
	// retry it (a record lost months ago least of all).
	res.WillRetry = false
	if err := (&Recorder{Dir: d}).store(ctx, &done, &res); err != nil {
		return nil, err
	}
	return &supervise.Lost{Name: bead, Reason: out.Reason}, nil
}

// unknownEnd makes the end of a lost attempt unknown in its records: nothing tells when it
// ended (no log, only its start), so its finish and its duration are null, never its start and
// 0 s, which would count as a 0-second run in every average.
func unknownEnd(run *record.Run, res *record.Result) {
	run.FinishedAt, run.DurationSeconds = nil, nil
	res.FinishedAt, res.DurationSeconds = nil, nil
}

// lastSign is the last time a lost attempt no supervisor registered was known alive: its log's
// last write when that is after its start, else (a '$START' placeholder) the last write of its
// run record. Never now: a February record closed in November would otherwise claim a
// nine-month run, and flatten every average. known is false when there is no such sign, only
// the start (returned): the end is unknown.
func lastSign(d Dir, bead, startedAt string) (t time.Time, known bool) {
	return lastSignOf(d.State().Log(bead), d.Store.RunPath(bead), startedAt)
}

// lastSignOf is lastSign for the attempt whose output is log and run record is run.
func lastSignOf(log, run, startedAt string) (time.Time, bool) {
	start, hasStart := record.ParseTime(startedAt)
	if fi, err := os.Lstat(log); err == nil && fi.Mode().IsRegular() && (!hasStart || fi.ModTime().After(start)) {
		return fi.ModTime(), true
	}
	if hasStart {
		return start, false
	}
	if fi, err := os.Lstat(run); err == nil {
		return fi.ModTime(), true
	}
	return time.Time{}, true
}

// repairArchives closes the archived attempts of every bead (attempts/<bead>/) that were
// archived while still running: older versions archived a lost predecessor as it was, so that
// analyze-runs --attempts counted it running for ever. Each bead's are closed under its lock
// (a dispatch archiving at the same time is waited for a moment, else the bead is left for the
// next pass), as supervisor-lost, finished at the last sign of life (repairArchive).
func repairArchives(ctx context.Context, d Dir) ([]supervise.Lost, error) {
	beads, err := fsx.Names(d.State().Attempts(), func(n string) (string, bool) { return n, validBead(n) })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the archived attempts: %w", err)
	}
	var closed []supervise.Lost
	var errs []error
	for _, bead := range beads {
		c, err := repairBead(ctx, d, bead)
		closed = append(closed, c...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bead, err))
		}
	}
	return closed, errors.Join(errs...)
}

func repairBead(ctx context.Context, d Dir, bead string) ([]supervise.Lost, error) {
	sd := d.State()
	runs, err := fsx.Names(sd.AttemptDir(bead), func(n string) (string, bool) {
		kind, _, ok := statedir.AttemptFile(n)
		return n, ok && kind == "run"
	})
	if err != nil || len(runs) == 0 {
		return nil, nil // not a directory of attempts, or none archived
	}
	unlock, err := d.Layout.Lock(ctx, bead, 100*time.Millisecond)
	if errors.Is(err, fsx.ErrLocked) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := statedir.CheckDir(sd.AttemptDir(bead)); err != nil {
		return nil, err
	}
	var closed []supervise.Lost
	var errs []error
	for _, name := range runs {
		_, n, _ := statedir.AttemptFile(name)
		c, err := repairArchive(d, bead, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("attempt %d: %w", n, err))
		}
		if c != nil {
			closed = append(closed, *c)
		}
	}
	return closed, errors.Join(errs...)
}

// repairArchive closes bead's archived attempt n if it was archived running: its run record
// says running (or, a legacy minimal one, has no status and no final result). It is completed
// as closeUnregistered completes a record, closed as supervisor-lost at its last sign of life
// (its archived output's last write, else its start), and both archived records are rewritten
// (checked against the schema, renamed into place).
func repairArchive(d Dir, bead string, n int) (*supervise.Lost, error) {
	sd := d.State()
	runPath, resPath := sd.AttemptRun(bead, n), sd.AttemptResult(bead, n)
	doc, err := statedir.ReadFile(runPath, record.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", runPath, err)
	}
	resDoc, _ := statedir.ReadFile(resPath, record.MaxSize)
	run, err := record.DecodeRun(doc)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", runPath, err)
	}
	switch {
	case run.Status == record.StatusRunning:
	case run.Status != "":
		return nil, nil
	case resDoc != nil:
		if res, err := record.DecodeResult(resDoc); err != nil || res.Status != record.StatusRunning {
			return nil, nil
		}
	}
	m, err := record.MigrateRun(doc, resDoc, record.Defaults{Bead: bead, MaxRetries: d.legacyMaxRetries(), StateDir: d.Path()})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", runPath, err)
	}
	if m.Output != nil {
		doc = m.Output
	}
	if err := record.Check(record.KindRun, doc); err != nil {
		return nil, fmt.Errorf("cannot close %s, archived running: %w (add what it lacks, then reconcile --all again)", runPath, err)
	}
	if run, err = record.DecodeRun(doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", runPath, err)
	}
	finished, known := lastSignOf(sd.AttemptOutput(bead, n), runPath, run.StartedAt)
	out := &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonLost, UnknownExit: true, Finished: finished}
	done, res := Complete(*run, out, nil)
	if !known {
		unknownEnd(&done, &res)
	}
	for _, w := range []struct {
		kind record.Kind
		path string
		v    any
	}{{record.KindRun, runPath, &done}, {record.KindResult, resPath, &res}} {
		b, err := record.Marshal(w.v)
		if err == nil {
			err = record.Check(w.kind, b)
		}
		if err == nil {
			err = fsx.WriteFileAtomic(w.path, b, 0o600)
		}
		if err != nil {
			return nil, fmt.Errorf("closing %s: %w", w.path, err)
		}
	}
	return &supervise.Lost{Name: bead, Reason: out.Reason, Attempt: n}, nil
}

// legacyMaxRetries is the max_retries a legacy record that has none is closed with.
func (d Dir) legacyMaxRetries() int {
	if d.LegacyMaxRetries > 0 {
		return d.LegacyMaxRetries
	}
	return 2
}

// Running returns the run records of the registered beads that say "running", in bead order:
// the agents at work now. Like Reconcile it reads the registry, never the whole history.
func Running(d Dir) []*record.Run {
	var runs []*record.Run
	for _, bead := range d.Layout.Registered(validBead) {
		if r, err := record.ReadRun(d.Store.RunPath(bead)); err == nil && r.Status == record.StatusRunning {
			runs = append(runs, r)
		}
	}
	return runs
}

func validBead(name string) bool { return record.CheckBead(name) == nil }
