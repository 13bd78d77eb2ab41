package attempt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
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
// legacy minimal records left running (see closeUnregistered).
func Reconcile(ctx context.Context, d Dir, sessions *tmux.Client, all bool) ([]supervise.Lost, error) {
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
	return reconcileLocked(ctx, d, sessions, bead, Session(bead))
}

// reconcileLocked judges bead under its lock: a registered supervisor by the registry
// (supervise's ReconcileLocked), a record no supervisor of ours registered by closeUnregistered.
func reconcileLocked(ctx context.Context, d Dir, sessions *tmux.Client, bead, session string) (*supervise.Lost, error) {
	if e, err := d.Layout.ReadEntry(bead); err != nil || e != nil {
		return d.Layout.ReconcileLocked(ctx, sessions, bead, session, &Recorder{Dir: d})
	}
	return closeUnregistered(ctx, d, sessions, bead)
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
func closeUnregistered(ctx context.Context, d Dir, sessions *tmux.Client, bead string) (*supervise.Lost, error) {
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
	runPath := d.Store.RunPath(bead)
	doc, err := fsx.ReadFileLimit(runPath, record.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading run record: %w", err)
	}
	resDoc, _ := fsx.ReadFileLimit(d.Store.ResultPath(bead), record.MaxSize)
	m, err := record.MigrateRun(doc, resDoc, record.Defaults{Bead: bead, MaxRetries: maxRetries(), StateDir: d.Path()})
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
	out := &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonLost, UnknownExit: true,
		Finished: lastSign(d, bead, run.StartedAt)}
	if err := (&Recorder{Dir: d}).write(ctx, *run, out, nil); err != nil {
		return nil, err
	}
	return &supervise.Lost{Name: bead, Reason: out.Reason}, nil
}

// lastSign is the last time a lost attempt no supervisor registered was known alive: its log's
// last write when that is after its start, else its start, else (a '$START' placeholder) the
// last write of its run record. Never now: a February record closed in November would otherwise
// claim a nine-month run, and flatten every average.
func lastSign(d Dir, bead, startedAt string) time.Time {
	start, hasStart := record.ParseTime(startedAt)
	if fi, err := os.Lstat(d.State().Log(bead)); err == nil && fi.Mode().IsRegular() && (!hasStart || fi.ModTime().After(start)) {
		return fi.ModTime()
	}
	if hasStart {
		return start
	}
	if fi, err := os.Stat(d.Store.RunPath(bead)); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

// maxRetries is DISPATCH_MAX_RETRIES as dispatch reads it (a positive integer, default 2): the
// max_retries a legacy record that has none is closed with.
func maxRetries() int {
	if n, err := strconv.Atoi(os.Getenv("DISPATCH_MAX_RETRIES")); err == nil && n > 0 {
		return n
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
