package runner

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// recover finds the claims an earlier runner left (it died: an interrupted one stops its
// attempts and leaves none, but for a claim it could not record) and settles them before any
// new claim: a claim whose attempt's supervisor is alive is returned, by agent, to be waited
// for; one whose attempt ended is judged by its records, as if the runner had seen it end; one
// whose attempt never started (no attempt number, records of an older attempt, or a launch
// cut short: executor.LaunchCut) goes back to pending, its retries unchanged. With hosts, a
// claim whose attempt was started on one of them (hostOf) is returned, by agent, to be looked
// for there (claim.on); one whose host is unknown or not reached goes back to pending, held
// until its deadline there.
func (r *runner) recover(ctx context.Context) (map[string]*claim, error) {
	q, err := r.cfg.Store.View()
	if err != nil {
		return nil, err
	}
	adopted := map[string]*claim{}
	for _, t := range q.Tasks() {
		if t.Status != store.Claimed {
			continue
		}
		c := &claim{task: t, attempt: t.Attempt}
		agentID := ""
		if t.ClaimedBy != nil {
			agentID = *t.ClaimedBy
			if !agentPattern.MatchString(agentID) {
				// Not one of ours (a hand-edited file): its end is recorded under agent-0, so
				// that the files keep to their schemas.
				agentID = "agent-0"
			}
		}
		bead := plan.Bead(r.plan, t.ID)
		launched := t.Attempt > 0 && agentID != "" && adopted[agentID] == nil
		if launched && len(r.cfg.Hosts) > 0 {
			// Its attempt was started on a host its agent's state names: looked for there,
			// even when its records came back here already (its branch may not have): adopted
			// when it runs or has ended, started there when it never arrived.
			if c.on = r.hostOf(agentID, bead, t.Attempt); c.on != nil {
				adopted[agentID] = c
				continue
			}
		}
		// A launch cut short was registered, never handed to a supervisor: its agent never ran
		// (executor.Local's adoption starts such a task again too, no try counted).
		launched = launched && !executor.LaunchCut(ctx, r.dir, bead, t.Attempt)
		if launched {
			// The queue's attempts run without tmux: a live supervisor is all there is to see.
			if live, _ := attempt.Alive(ctx, r.dir, attempt.Where{}, bead); live {
				adopted[agentID] = c
				continue
			}
			if _, err := attempt.ReconcileBead(ctx, r.dir, nil, bead); err != nil {
				return nil, err
			}
			run, err := record.ReadRun(r.dir.Store.RunPath(bead))
			launched = err == nil && run.Attempt >= t.Attempt
		}
		if !launched {
			if err := r.release(ctx, t); err != nil {
				return nil, err
			}
			continue
		}
		end := executor.Judge(ctx, r.dir, bead, t.Attempt)
		out := r.judged(ctx, end, bead, t.Attempt, r.workdir(bead))
		r.logf("recovered: %s (attempt %d) ended while no runner watched it", t.ID, t.Attempt)
		(&agentRun{r: r, id: agentID}).finish(ctx, c, out)
	}
	return adopted, nil
}

// hostOf is the slot, on one of this run's hosts, where an earlier runner's agent started
// bead's attempt n, as the agent's state file names it: the agent's own slot when it is on that
// host, else the host's first. nil when the state names no host for that attempt, or a host
// this run does not reach.
func (r *runner) hostOf(agentID, bead string, n int) *hostSlot {
	st, err := r.cfg.Store.ReadAgentState(agentID)
	if err != nil || st == nil || st.Host == "" || st.Bead != bead || st.Attempt != n {
		return nil
	}
	var first *hostSlot
	for i := range r.slots {
		hs := &r.slots[i]
		if hs.exec.Host() != st.Host || hs.exec.Offline() {
			continue
		}
		if AgentID(i+1) == agentID {
			return hs
		}
		if first == nil {
			first = hs
		}
	}
	return first
}

// release puts a claim whose attempt never started back to pending. With hosts, its attempt
// may run on one (its records come back only at its end): it is held until its deadline there
// has passed, as a task taken back from a host offline.
func (r *runner) release(ctx context.Context, t store.Task) error {
	hold, line := time.Time{}, fmt.Sprintf("recovered: %s back to pending (its attempt never started)", t.ID)
	if len(r.cfg.Hosts) > 0 && t.Attempt > 0 && t.ClaimedAt != nil {
		if at, ok := record.ParseTime(*t.ClaimedAt); ok {
			hold = at.Add(r.cfg.Timeout + r.cfg.KillGrace + executor.LeaseMargin)
		}
		line = fmt.Sprintf("recovered: %s back to pending, held until %s (its attempt %d may still run on a host until its deadline)", t.ID, record.FormatTime(hold), t.Attempt)
	}
	err := r.updateQueue(ctx, func(tx *store.Tx, q *store.Queue) error {
		cur, ok := q.Get(t.ID)
		if !ok || cur.Status != store.Claimed || cur.Attempt != t.Attempt {
			return nil // changed meanwhile: left as it is
		}
		cur.Status, cur.ClaimedBy, cur.ClaimedAt = store.Pending, nil, nil
		if hold.After(time.Now()) {
			cur.HeldUntil = record.FormatTime(hold)
		}
		q.Put(cur)
		tx.ChangedQueue()
		return nil
	})
	if err == nil {
		r.logf("%s", line)
	}
	return err
}

// agentPattern is the seed's agent id: agent-<N>.
var agentPattern = regexp.MustCompile(`^agent-[0-9]+$`)
