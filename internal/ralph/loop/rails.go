package loop

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/fsx"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/checkpoint"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/statedir"
)

// A loop's rails, as spawn sets them (SpawnSpec.Rails, kept in state.json's "rails"):
//
//   - a budget: the loop ends (stopped, reason budget) once the cost its agent reported
//     (agent.ParseUsage on each iteration's output) reaches it, checked before each iteration
//     starts, so the budget is passed by at most the last iteration's cost; with HardBudget
//     the running iteration is also stopped as soon as the cost it reports so far reaches it;
//   - at most MaxCallsPerHour iteration starts in any hour (Options.CallWindow): the loop waits,
//     it does not fail;
//   - an --on-event hook (internal/ralph/hook, the queue's event format, kind "loop"): told of
//     the loop's start, its end (end; failure when it failed; breaker when the no-progress
//     breaker ended it), and each limit it waits for (limit); it is run by the monitor, bounded
//     in time, and its failure changes nothing;
//   - CommitEach: a git commit of the working tree after each iteration, trailers naming the
//     loop and the iteration.
//
// The agent works in its directory or worktree; state.json is in the swarm directory, which
// Spawn refuses to have inside that tree when a budget or a hook is set. The agent still knows
// $SWARM_DIR: so the monitor takes the rails and the cost so far from the state when it starts,
// holds them, and writes them back whenever the state says otherwise (a line in iterations.log
// says so). A monitor started again (resume) takes them from the state as it then is.

// ReasonBudget: the loop's budget was reached (stopped).
const ReasonBudget = "budget"

// A loop's budget, call limit, hook and commits are a rails.Rails, which AIWG's loops and the
// queue hold too (a swarm loop has no timeouts among them).

// loopRails are r as a swarm loop has them: without the timeouts, which are AIWG's (the Rails
// type is shared; a swarm loop's inactivity timeout is SpawnSpec's own). A state or a seal that
// names them, which only an agent or a person can have written, is read without them, as before
// the type was shared: the ralph-state schema allows no such key in a loop's rails, and a state
// read with them could never be written back.
func loopRails(r *rails.Rails) *rails.Rails {
	if r != nil {
		r.IterationTimeoutSeconds, r.InactivityTimeoutSeconds = 0, 0
	}
	return r
}

// checkLoopRails is Check, with the timeouts a swarm loop does not have refused.
func checkLoopRails(r *rails.Rails) error {
	if r != nil && (r.IterationTimeoutSeconds != 0 || r.InactivityTimeoutSeconds != 0) {
		return fmt.Errorf("a swarm loop's rails have no iteration or inactivity timeout: give SpawnSpec.InactivityTimeout")
	}
	return r.Check()
}

// held is what a loop's monitor holds from its start: the rails and the cost so far, and its
// hook.
type held struct {
	rails *rails.Rails
	cost  float64
	hook  *hook.Hook
	start *startPoint // written back with the rest whenever the seal is
}

// budget is the held budget (nil: none).
func (h *held) budget() *float64 {
	if h == nil || h.rails == nil {
		return nil
	}
	return h.rails.BudgetUSD
}

func (h *held) overBudget() bool { return h != nil && h.rails.Reached(h.cost) }

// seal is a loop's rails.json, beside its state: the rails as spawn set them, the cost the
// monitor counted, and where the loop's tree started. The monitor takes the rails and the cost
// from here, not from state.json, which shows a copy: an agent that rewrites the state (it
// knows $SWARM_DIR) moves neither, even before a monitor holds them (the first iteration's
// agent starts before the monitor). abort --revert takes the start from here alone.
type seal struct {
	Loop    string       `json:"loop"`
	Rails   *rails.Rails `json:"rails"`
	CostUSD float64      `json:"cost_usd"`
	Start   *startPoint  `json:"start,omitempty"`
}

// startPoint is where a loop's working tree started, sealed at the spawn: the tree (Dir),
// HEAD then (Commit) and the snapshot of every file then (Snapshot, "" when none could be
// made), as state.json's start_commit and start_snapshot show them.
type startPoint struct {
	Dir      string `json:"dir"`
	Commit   string `json:"commit"`
	Snapshot string `json:"snapshot,omitempty"`
}

const sealFile = "rails.json"

func (l *app) sealPath() string { return filepath.Join(l.dir.RalphDir(l.st.name), sealFile) }

// writeSeal keeps the rails, the cost and the start in the loop's seal.
func (l *app) writeSeal(r *rails.Rails, cost float64, start *startPoint) error {
	if err := statedir.MkdirFor(l.sealPath()); err != nil {
		return err
	}
	return rails.WriteSeal(l.sealPath(), seal{Loop: l.st.name, Rails: r, CostUSD: cost, Start: start})
}

// readSeal is the loop's seal; false without one (a loop spawned before seals were kept).
func (l *app) readSeal() (seal, bool) {
	var s seal
	found, err := rails.ReadSeal(l.sealPath(), &s)
	loopRails(s.Rails)
	if err != nil || !found || s.Loop != l.st.name || s.Rails.Check() != nil || math.IsNaN(s.CostUSD) || s.CostUSD < 0 {
		if found || err != nil {
			l.warnf("the rails of loop '%s' (%s) cannot be read: taken from its state", l.st.name, l.sealPath())
		}
		return s, false
	}
	return s, true
}

// hold takes the rails and the cost for the monitor (from the seal; from st without one), and
// starts its hook.
func (l *app) hold(st *State) {
	h := &held{rails: st.Rails.Clone(), cost: st.CostUSD}
	if s, ok := l.readSeal(); ok {
		h.rails, h.cost, h.start = s.Rails.Clone(), s.CostUSD, s.Start
	}
	hk, err := h.rails.Hook(st.workDir(), l.environ, func(err error) {
		n := 0
		if st, err := l.st.load(); err == nil {
			n = st.CurrentIteration
		}
		l.st.logEvent("WARN", "iteration %d: %s", n, oneLine(err.Error()))
		l.warnf("%v", err)
	})
	if hk != nil && err == nil {
		hk.Timeout = l.opts.HookTimeout
		h.hook = hk
	}
	l.held = h
}

// keepRails puts what the monitor holds back into st (under the state's lock) when st says
// otherwise, and says so in iterations.log.
func (l *app) keepRails(st *State) {
	h := l.held
	if h == nil {
		return
	}
	if !st.Rails.Equal(h.rails) {
		l.st.logEvent("WARN", "iteration %d: the loop's rails in state.json were changed behind its monitor's back; its own are kept", st.CurrentIteration)
		st.Rails = h.rails.Clone()
	}
	if st.CostUSD != h.cost {
		if st.CostUSD != 0 || h.cost != 0 {
			l.st.logEvent("WARN", "iteration %d: the loop's cost in state.json was changed behind its monitor's back ($%s); its own $%s is kept",
				st.CurrentIteration, rails.Money(st.CostUSD), rails.Money(h.cost))
		}
		st.CostUSD = h.cost
	}
}

// event tells the hook of a transition of the loop (nothing without a hook).
func (l *app) event(name string, n int, status, reason string) {
	if l.held == nil || l.held.hook == nil {
		return
	}
	cost := l.held.cost
	l.held.hook.Send(hook.Event{Kind: "loop", Event: name, Loop: l.st.name, Iteration: n, Status: status, Reason: reason,
		CostUSD: &cost, Log: l.home.LogPath(l.st.name)})
}

// endEvent tells the hook how the loop ended, from its state: failure, breaker (no-progress)
// or end. A monitor that left a loop running or paused, or disconnected from its worker, tells
// nothing.
func (l *app) endEvent(st *State) {
	if st.Status != StatusStopped && st.Status != StatusFailed {
		return
	}
	reason := ""
	if st.ExitReason != nil {
		reason = *st.ExitReason
	}
	switch {
	case reason == ReasonDisconnected:
	case reason == ReasonNoProgress:
		l.event(hook.Breaker, st.CurrentIteration, st.Status, reason)
	case st.Status == StatusFailed:
		l.event(hook.Failure, st.CurrentIteration, st.Status, reason)
	default:
		l.event(hook.End, st.CurrentIteration, st.Status, reason)
	}
}

// profile is the agent profile of the loop's worker (nil: none known).
func (l *app) profile(st *State) *agent.Profile {
	if st == nil || st.Worker == nil {
		return nil
	}
	p, _ := l.home.Profile(st.Worker.Profile, st.Worker.Cmd)
	return p
}

// costTail bounds what is read of an iteration's output for its cost (agent.ParseUsage reads
// the end).
const costTail = 256 << 10

// reportedCost is the cost the agent of iteration it has reported so far, from its output log
// past the typed prompt's echo (0: none, or not a cost).
func (l *app) reportedCost(it *iteration, prof *agent.Profile) float64 {
	path := l.home.LogPath(l.st.name)
	b, err := fsx.ReadTail(path, costTail)
	if err != nil || len(b) == 0 {
		return 0
	}
	if fi, err := os.Lstat(path); err == nil {
		if skip := it.offset - (fi.Size() - int64(len(b))); skip > 0 {
			b = b[min(skip, int64(len(b))):]
		}
	}
	u := prof.ParseUsage(b)
	if !u.HasCost {
		if u.RejectedCost != nil {
			l.st.logEvent("WARN", "iteration %d: its agent reported a cost of %v, which is not a cost; counted as unknown ($0)", it.n, *u.RejectedCost)
		}
		return 0
	}
	return u.CostUSD
}

// account adds the cost iteration it's agent reported to the loop's (once per iteration's
// agent), in the monitor's held total and in the state.
func (l *app) account(ctx context.Context, it *iteration) {
	if it.costed {
		return
	}
	it.costed = true
	st, err := l.st.load()
	if err != nil {
		return
	}
	c := l.reportedCost(it, l.profile(st))
	added := false
	l.st.update(ctx, func(st *State) error {
		if l.held != nil {
			l.keepRails(st)
			if !added {
				l.held.cost += c
				added = true
			}
			st.CostUSD = l.held.cost
		} else {
			st.CostUSD += c
		}
		for len(st.IterationCosts) < it.n {
			st.IterationCosts = append(st.IterationCosts, 0)
		}
		if it.n > 0 {
			st.IterationCosts[it.n-1] += c
		}
		return nil
	})
	if l.held != nil && !added {
		l.held.cost += c
	}
	if l.held != nil && c > 0 {
		if err := l.writeSeal(l.held.rails, l.held.cost, l.held.start); err != nil {
			l.st.logEvent("WARN", "iteration %d: keeping the cost in the loop's seal: %s", it.n, oneLine(err.Error()))
		}
	}
	if c > 0 {
		l.st.logEvent("COST", "iteration %d: $%s, $%s in all", it.n, rails.Money(c), rails.Money(l.totalCost(st, c)))
	}
}

func (l *app) totalCost(st *State, c float64) float64 {
	if l.held != nil {
		return l.held.cost
	}
	return st.CostUSD + c
}

// hardBudgetHit says whether the running iteration's cost so far brings the loop to its budget
// (with HardBudget only).
func (l *app) hardBudgetHit(it *iteration, prof *agent.Profile) bool {
	h := l.held
	return h != nil && h.rails.Hard() && h.rails.Reached(h.cost+l.reportedCost(it, prof))
}

// waitCalls holds the loop while MaxCallsPerHour iterations started in the last hour (the
// window): usage_limit_until says until when, limit_reason why, and the hook is told.
func (l *app) waitCalls(ctx context.Context, wake chan struct{}, rerun bool) error {
	h := l.held
	if h == nil || h.rails == nil || h.rails.MaxCallsPerHour <= 0 {
		return nil
	}
	n := h.rails.MaxCallsPerHour
	var until time.Time
	st, err := l.st.update(ctx, func(st *State) error {
		until = time.Time{}
		if st.Status != StatusRunning || !rerun && st.CurrentIteration >= st.MaxIterations || h.overBudget() {
			return fsx.ErrUnchanged // no iteration starts: nothing to wait for
		}
		calls := l.calls(st)
		var full bool
		if until, full = calls.Full(time.Now()); !full {
			return fsx.ErrUnchanged
		}
		st.LimitedUntil, st.LimitReason = utcISO(until), LimitCalls
		l.st.logEvent("WARN", "iteration %d: %d calls in the last hour (--max-calls-per-hour), waiting until %s",
			st.CurrentIteration+1, calls.Len(), until.Local().Format("2006-01-02T15:04:05"))
		return nil
	})
	if err != nil || until.IsZero() {
		return err
	}
	l.sayf("%d calls in the last hour, waiting until %s", n, until.Local().Format("15:04:05"))
	l.event(hook.Limit, st.CurrentIteration, st.Status, LimitCalls)
	return l.waitLimit(ctx, wake)
}

// LimitCalls is limit_reason while the loop waits for --max-calls-per-hour; LimitUsage while it
// waits for a usage limit to reset.
const (
	LimitCalls = "max-calls-per-hour"
	LimitUsage = "usage-limit"
)

// calls is the loop's calls-per-hour window as its state keeps it (call_times, UTC ISO; a time
// that is none is skipped).
func (l *app) calls(st *State) *rails.Calls {
	c := &rails.Calls{Max: l.held.rails.MaxCallsPerHour, Window: l.opts.CallWindow}
	var times []time.Time
	for _, s := range st.CallTimes {
		if t, ok := parseISO(s); ok {
			times = append(times, t)
		}
	}
	c.Load(times)
	return c
}

// noteCall records an iteration's start for --max-calls-per-hour (the last hour's, at most the
// limit's number).
func (l *app) noteCall(st *State, now time.Time) {
	h := l.held
	if h == nil || h.rails == nil || h.rails.MaxCallsPerHour <= 0 {
		st.CallTimes = nil
		return
	}
	calls := l.calls(st)
	calls.Forget(now)
	calls.Note(now)
	st.CallTimes = nil
	for _, t := range calls.Times() {
		st.CallTimes = append(st.CallTimes, utcISO(t))
	}
}

// commitIteration commits the loop's working tree after iteration n (--commit-each): every
// change (the swarm directory left out when it is inside the tree), with trailers naming the
// loop and the iteration. No change, no commit. A commit that fails is a warning in
// iterations.log; the loop goes on.
func (l *app) commitIteration(ctx context.Context, n int) {
	h := l.held
	if h == nil || h.rails == nil || !h.rails.CommitEach {
		return
	}
	st, err := l.st.load()
	if err != nil || st.workDir() == "" {
		return
	}
	dir := st.workDir()
	if _, err := gitIn(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil {
		l.st.logEvent("WARN", "iteration %d: --commit-each: %s is not in a git repository: no commit", n, dir)
		return
	}
	head, err := rails.Commit(ctx, dir, []string{l.dir.Root}, st.WorkerName, n)
	switch {
	case err != nil:
		l.st.logEvent("WARN", "iteration %d: --commit-each: %s", n, oneLine(err.Error()))
	case head == "":
		l.st.logEvent("COMMIT", "iteration %d: no change, no commit", n)
	default:
		l.st.logEvent("COMMIT", "iteration %d: commit %s", n, head)
	}
}

// gitIn runs git in dir (internal/git's Run, with no input).
func gitIn(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitx.Run(ctx, dir, "", args...)
}

// recordStart keeps where the loop's working tree started, for abort --revert: HEAD, and a
// snapshot of the whole tree then (its tracked and untracked files, ignored ones left out: a
// commit whose parent is HEAD, made through an index of its own, so that nothing of the tree or
// its index changes), kept reachable under refs/ralph/<name>/start. It returns the start for the
// loop's seal, which abort --revert trusts (st shows a copy the agent can write); nil outside git.
func (l *app) recordStart(ctx context.Context, st *State) *startPoint {
	dir := st.workDir()
	if dir == "" {
		return nil
	}
	head, err := gitIn(ctx, dir, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return nil
	}
	st.StartCommit = strings.TrimSpace(string(head))
	if snap, err := snapshot(ctx, dir, st.StartCommit, l.dir.Root); err == nil {
		if _, err := gitIn(ctx, dir, "update-ref", startRef(st.WorkerName), snap); err == nil {
			st.StartSnapshot = snap
		}
	}
	return &startPoint{Dir: dir, Commit: st.StartCommit, Snapshot: st.StartSnapshot}
}

// startRef keeps loop name's start snapshot from git's garbage collection.
func startRef(name string) string { return "refs/ralph/" + name + "/start" }

// snapshot commits the working tree dir as it is (tracked and untracked files, not the ignored
// ones, nor the swarm directory when it is inside), its parent head: the tree is the
// no-progress breaker's (breaker.Fingerprint: git add -A into a copy of the index), so HEAD,
// the index and the files are left as they are.
func snapshot(ctx context.Context, dir, head, swarmDir string) (string, error) {
	fp, err := breaker.Fingerprint(ctx, dir, swarmDir)
	if err != nil {
		return "", err
	}
	f := strings.Fields(fp)
	if len(f) != 2 || f[0] != head {
		return "", fmt.Errorf("the tree of %s moved while it was read", dir)
	}
	out, err := gitIn(ctx, dir, "-c", "user.name=ralph", "-c", "user.email=ralph@localhost",
		"commit-tree", f[1], "-p", head, "-m", "ralph: the working tree when the loop started")
	return strings.TrimSpace(string(out)), err
}

// AbortResult is what Abort did.
type AbortResult struct {
	Stopped     bool   // the loop ran (or was paused) and is now stopped, killed
	Reverted    bool   // its working tree is back where the loop started
	StartCommit string // where it went back to
	Dir         string // the working tree
}

// Abort ends the loop name for good, as Stop does (its monitor gone, then its worker), and with
// revert resets its working tree to where the loop started: HEAD then (git reset --hard: the
// loop's commits, --commit-each's too, are undone), the uncommitted changes then re-applied,
// and the untracked files the loop added removed (the swarm directory, when inside, is never
// touched). A loop that has already ended is reverted as well. A loop whose tree was not a git
// repository with a commit when it started cannot be reverted: an error says so.
func (ls *Loops) Abort(ctx context.Context, name string, revert bool) (AbortResult, error) {
	var res AbortResult
	l, st, err := ls.named(name)
	if err != nil {
		return res, err
	}
	if st.Status == StatusRunning || st.Status == StatusPaused {
		if _, err := ls.Stop(ctx, name, StopOptions{}); err != nil {
			return res, err
		}
		res.Stopped = true
	} else if w, _ := l.home.Worker(name); w != nil && l.home.Live(ctx, w).Running {
		// Ended, but its agent is still there (a monitor that died): it is stopped first, so
		// that nothing changes the tree once this returns.
		l.home.Stop(ctx, w)
	}
	if !revert {
		return res, nil
	}
	if st, err = l.st.load(); err != nil {
		return res, err
	}
	start, err := l.sealedStart(ctx, st)
	if err != nil {
		return res, fmt.Errorf("loop '%s' is ended, but nothing is reverted: %w", name, err)
	}
	res.Dir, res.StartCommit = start.Dir, start.Commit
	if err := l.revertTree(ctx, start); err != nil {
		return res, fmt.Errorf("loop '%s' is ended, but its changes are not reverted: %w", name, err)
	}
	res.Reverted = true
	l.st.logEvent("REVERT", "iteration %d: abort --revert: working tree %s reset to %s, where the loop started", st.CurrentIteration,
		res.Dir, rails.Short(start.Commit))
	return res, nil
}

// sealedStart is where the loop's tree started, as its seal keeps it, once it is checked: the
// agent can write state.json (it knows $SWARM_DIR) and the repository (refs/ralph/NAME/start),
// so a revert believes neither. The state's start_commit, start_snapshot and tree, and the
// snapshot's ref, must be the seal's (else they were rewritten behind ralph's back), the
// snapshot's parent the start, and HEAD must descend from the start. Any doubt refuses the
// revert before anything is touched.
func (l *app) sealedStart(ctx context.Context, st *State) (*startPoint, error) {
	s, ok := l.readSeal()
	if !ok || s.Start == nil {
		if st.StartCommit == "" {
			return nil, fmt.Errorf("its working tree was not a git repository with a commit when it started: nothing to reset to")
		}
		return nil, fmt.Errorf("its start is not sealed in %s (a loop spawned before ralph sealed it, or the seal was removed): reset its tree by hand", l.sealPath())
	}
	sp := s.Start
	if sp.Commit != st.StartCommit || sp.Snapshot != st.StartSnapshot || sp.Dir != st.workDir() {
		return nil, fmt.Errorf("state.json's start (start_commit %q, start_snapshot %q, tree %q) is not the one sealed at the spawn (%s, %s, %s): it was changed behind ralph's back",
			rails.Short(st.StartCommit), rails.Short(st.StartSnapshot), st.workDir(), rails.Short(sp.Commit), rails.Short(sp.Snapshot), sp.Dir)
	}
	if !filepath.IsAbs(sp.Dir) {
		return nil, fmt.Errorf("the sealed tree %q is not an absolute path", sp.Dir)
	}
	if fi, err := os.Stat(sp.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("its working tree %s is gone", sp.Dir)
	}
	if err := checkpoint.CheckStart(ctx, sp.Dir, sp.Commit); err != nil {
		return nil, err
	}
	if sp.Snapshot == "" {
		return sp, nil
	}
	if !checkpoint.ObjectName(sp.Snapshot) {
		return nil, fmt.Errorf("the sealed snapshot %q is not a commit's full name", sp.Snapshot)
	}
	ref, _ := gitIn(ctx, sp.Dir, "rev-parse", "--verify", "-q", startRef(st.WorkerName))
	if strings.TrimSpace(string(ref)) != sp.Snapshot {
		return nil, fmt.Errorf("%s is not the snapshot sealed at the spawn (%s): it was moved or removed", startRef(st.WorkerName), rails.Short(sp.Snapshot))
	}
	parent, _ := gitIn(ctx, sp.Dir, "rev-parse", "--verify", "-q", sp.Snapshot+"^1")
	if strings.TrimSpace(string(parent)) != sp.Commit {
		return nil, fmt.Errorf("the snapshot %s is not of the start %s", rails.Short(sp.Snapshot), rails.Short(sp.Commit))
	}
	return sp, nil
}

// revertTree resets the loop's working tree to its sealed start sp (Abort, once sealedStart
// has checked it).
func (l *app) revertTree(ctx context.Context, sp *startPoint) error {
	dir := sp.Dir
	if _, err := gitIn(ctx, dir, "reset", "-q", "--hard", sp.Commit); err != nil {
		return err
	}
	if sp.Snapshot == "" {
		return nil // HEAD only: the loop was spawned before snapshots were kept
	}
	// The files as they were (the uncommitted changes, the untracked files), the index left at
	// HEAD; then what the loop added and the start did not have goes, and what the start had
	// deleted is deleted again. The swarm directory is never touched.
	had := map[string]bool{}
	out, err := gitIn(ctx, dir, "ls-tree", "-r", "-z", "--name-only", sp.Snapshot)
	if err != nil {
		return err
	}
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			had[string(f)] = true
		}
	}
	if len(had) > 0 { // an empty tree has no file to check out
		if _, err := gitIn(ctx, dir, "checkout", sp.Snapshot, "--", "."); err != nil {
			return err
		}
		if _, err := gitIn(ctx, dir, "reset", "-q"); err != nil {
			return err
		}
	}
	now, err := gitIn(ctx, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	for _, f := range bytes.Split(now, []byte{0}) {
		name := string(f)
		if name == "" || had[name] {
			continue
		}
		path := filepath.Join(dir, name)
		if _, in := rails.Inside(l.dir.Root, path); in {
			continue
		}
		os.Remove(path) // a link is removed, never followed
	}
	return nil
}
