package attempt

import (
	"context"
	"errors"
	"fmt"

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
// run record as well, for records no registry knows (written by other tools, or by
// dispatch.sh).
func Reconcile(ctx context.Context, d Dir, sessions *tmux.Client, all bool) ([]supervise.Lost, error) {
	beads := d.Layout.Registered(validBead)
	if all {
		names, _ := statedir.Beads(d.State().Runs(), ".json")
		for _, bead := range names {
			if run, err := record.ReadRun(d.Store.RunPath(bead)); err == nil && run.Status == record.StatusRunning {
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

// ReconcileBead is Reconcile for one bead; it returns nil when there was nothing to close.
func ReconcileBead(ctx context.Context, d Dir, sessions *tmux.Client, bead string) (*supervise.Lost, error) {
	return d.Layout.Reconcile(ctx, sessions, bead, Session(bead), &Recorder{Dir: d})
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
