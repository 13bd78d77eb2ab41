package top

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// swarmRows: the workers of state.json, and the swarm loops with their current worker folded in.
func (m *Model) swarmRows(ctx context.Context, now time.Time) ([]*Row, error) {
	st, err := m.sw.Load(ctx)
	if err != nil {
		return nil, err
	}
	layout := supervise.Layout{Dir: m.sw.Dir().Supervise()}
	byName := map[string]*Row{}
	var rows []*Row
	lives := m.sw.LiveAll(ctx, st.Workers) // the lost ones closed in one write
	for i, w := range st.Workers {
		r := m.workerRow(w, lives[i], layout, now)
		if r == nil {
			continue
		}
		byName[w.Name] = r
		rows = append(rows, r)
	}
	listed, err := m.loops.Loops(ctx)
	if err != nil {
		return rows, err
	}
	for _, l := range listed {
		r, folded := loopRow(l.State, byName[l.State.WorkerName])
		if folded != nil {
			rows = slices.DeleteFunc(rows, func(x *Row) bool { return x == folded })
		}
		if m.loopEndedLongAgo(l.State, r, now) {
			continue
		}
		rows = append(rows, r)
	}
	// A loop worker whose loop is gone (cleaned) stays a worker, unless it ended long ago.
	rows = slices.DeleteFunc(rows, func(x *Row) bool {
		return x.Kind == KindWorker && !x.Live && x.ExitCode == nil && x.Reason == "" && x.Started.Before(now.Add(-m.src.Recent))
	})
	return rows, nil
}

// workerRow is worker w's row, nil when it ended long ago and is no loop's (swarm ls has it).
func (m *Model) workerRow(w *worker.Worker, live swarm.Liveness, layout supervise.Layout, now time.Time) *Row {
	r := &Row{Kind: KindWorker, Name: w.Name, Status: worker.StatusStopped, Live: live.Running,
		Tags: w.Tags, worker: w}
	if live.Running {
		r.Status = worker.StatusRunning
	}
	if t, ok := worker.ParseTimestamp(w.Started); ok {
		r.Started = t
	}
	o := live.Outcome
	if o == nil {
		if e, ok := w.Ended(); ok {
			o = e
		}
	}
	if o != nil && !live.Running {
		r.ExitCode, r.Reason = o.ExitCode, o.Reason
	}
	if !live.Running && !recent(o, r.Started, now, m.src.Recent) {
		// Ended long ago: not listed (swarm ls has it).
		if !w.Meta("ralph", new(bool)) {
			return nil
		}
	}
	if live.Running {
		if a, ok := w.Activity(); ok {
			r.recAct = &a
		}
		r.WaitingInput = live.WaitingInput
		if w.Supervised() {
			r.Control = controlOf(w, layout)
		}
	}
	if w.Tmux != nil {
		p := &Pane{Session: w.Tmux.Session, Window: w.Tmux.Window}
		if w.Tmux.Socket != nil {
			p.Socket, p.Named = *w.Tmux.Socket, true
		}
		r.Tmux = p
		r.Log = m.sw.LogPath(w.Name)
	} else {
		r.Log = m.sw.Dir().StdoutLog(w.Name)
	}
	return r
}

// controlOf is the control socket of supervised worker w: its entry's, else the layout's
// path for it; "" when it has no entry.
func controlOf(w *worker.Worker, layout supervise.Layout) string {
	e, _ := layout.ReadEntry(w.Name)
	if e == nil {
		return ""
	}
	if e.Control != "" {
		return e.Control
	}
	return layout.SocketPath(w.Name)
}

// loopRow is swarm loop s's row; when w, the row of its worker, is a loop's current iteration
// it is folded into the loop's and returned, to be taken out of the rows.
func loopRow(s *loop.State, w *Row) (r *Row, folded *Row) {
	r = &Row{Kind: KindLoop, Source: "swarm", Name: s.WorkerName, Status: s.Status,
		Iteration: s.CurrentIteration, MaxIterations: s.MaxIterations, ExitCode: s.LastExitCode}
	if s.ExitReason != nil {
		r.Reason = *s.ExitReason
	}
	if t, ok := worker.ParseTimestamp(s.Started); ok {
		r.Started = t
	}
	if w == nil || !w.worker.Meta("ralph", new(bool)) {
		return r, nil
	}
	// The loop's current iteration: its row becomes the loop's.
	r.Live, r.Control, r.Tmux, r.Log, r.Tags, r.recAct = w.Live, w.Control, w.Tmux, w.Log, w.Tags, w.recAct
	r.WaitingInput = w.WaitingInput
	r.worker = w.worker
	if w.Live && r.ExitCode == nil {
		r.ExitCode = nil
	}
	return r, w
}

// loopEndedLongAgo reports whether loop s, whose row is r, ended (and its worker with it)
// longer ago than the recent window: its last iteration's end, else its start.
func (m *Model) loopEndedLongAgo(s *loop.State, r *Row, now time.Time) bool {
	ended := s.Status != "running" && s.Status != "paused"
	if !ended || r.Live {
		return false
	}
	end, ok := worker.ParseTimestamp(s.LastIterationEnded)
	if !ok {
		end = r.Started
	}
	return now.Sub(end) > m.src.Recent
}

// recent reports whether an ended worker ended within d (its finish time, else its start).
func recent(o *worker.Outcome, started, now time.Time, d time.Duration) bool {
	end := started
	if o != nil {
		if t, ok := worker.ParseTimestamp(o.Finished); ok {
			end = t
		}
	}
	return !end.IsZero() && now.Sub(end) <= d
}

// dispatchRows: the registered beads of StateDir, and those whose results ended within Recent.
func (m *Model) dispatchRows(ctx context.Context, now time.Time, owned map[string]bool) []*Row {
	dir, err := filepath.Abs(m.src.StateDir)
	if err != nil {
		return nil
	}
	d := attempt.NewDir(dir)
	// Supervisors that died are closed at the first refresh, as dispatch ps does, so a row
	// never says running for an agent that is gone; later refreshes do not write (bead says
	// supervisor-lost for one that died since).
	if !m.reconciled {
		attempt.Reconcile(ctx, d, nil, false)
		m.reconciled = true
	}
	beads := map[string]bool{}
	var rows []*Row
	add := func(bead string) {
		if beads[bead] || owned[dir+"\x00"+bead] {
			return
		}
		beads[bead] = true
		run, err := readCached(&m.files, d.Store.RunPath(bead), record.ReadRun)
		if err != nil {
			return
		}
		r := &Row{Kind: KindDispatch, Name: bead, Bead: bead, StateDir: dir, Status: run.Status, Attempt: run.Attempt,
			ExitCode: run.ExitCode, Log: d.Layout.LogPath(bead)}
		if t, ok := record.ParseTime(run.StartedAt); ok {
			r.Started = t
		}
		if run.FailureReason != nil {
			r.Reason = *run.FailureReason
		}
		if res, err := readCached(&m.files, d.Store.ResultPath(bead), record.ReadResult); err == nil && res.Attempt == run.Attempt && res.Status != record.StatusRunning {
			r.Reason = res.Reason
		}
		m.bead(r, d.Layout, run.Agent)
		if !r.Live && r.entry != nil && run.Status == record.StatusRunning && r.Reason == "" {
			r.Reason = supervise.ReasonLost
		}
		if !r.Live && run.Status != record.StatusRunning {
			end := r.Started
			if run.FinishedAt != nil {
				if t, ok := record.ParseTime(*run.FinishedAt); ok {
					end = t
				}
			}
			if now.Sub(end) > m.src.Recent {
				return
			}
		}
		rows = append(rows, r)
	}
	for bead := range m.registeredIn(d.Layout) {
		add(bead)
	}
	// Ended ones: results written within Recent (a stat each; only those are read).
	results := d.Store.Paths().Results()
	names, _ := fsx.Names(results, func(n string) (string, bool) {
		bead, ok := strings.CutSuffix(n, ".json")
		return bead, ok && !strings.HasSuffix(bead, "-verify") && record.CheckBead(bead) == nil
	})
	for _, bead := range names {
		if beads[bead] {
			continue
		}
		fi, err := os.Lstat(filepath.Join(results, bead+".json"))
		if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) > m.src.Recent {
			continue
		}
		add(bead)
	}
	return rows
}

// bead fills in what a bead's supervisor says (live, control socket, tmux session) and the cost
// its log reports, read as the agent's profile reads it.
func (m *Model) bead(r *Row, l supervise.Layout, agentName string) {
	var e *supervise.Entry
	if m.registeredIn(l)[r.Bead] {
		e, _ = readCached(&m.files, l.EntryPath(r.Bead), func(string) (*supervise.Entry, error) { return l.ReadEntry(r.Bead) })
	}
	if e != nil {
		r.entry = e
		if supervise.SupervisorAlive(e.PID, r.Bead) {
			r.Live = true
			r.Control = e.Control
			if r.Control == "" {
				r.Control = l.SocketPath(r.Bead)
			}
			if e.Backend == supervise.BackendTmux && e.Session != "" {
				r.Tmux = &Pane{Socket: e.Socket, Session: e.Session}
			}
		}
	}
	if r.Log == "" {
		r.Log = l.LogPath(r.Bead)
	}
	if r.Cost == nil {
		if c, ok := m.logCost(r.Log, agentName); ok {
			r.Cost = &c
		}
	}
}

// registeredIn is the set of beads registered in l at this refresh (read once a refresh).
func (m *Model) registeredIn(l supervise.Layout) map[string]bool {
	if set, ok := m.registered[l.Dir]; ok {
		return set
	}
	set := map[string]bool{}
	for _, b := range l.Registered(func(s string) bool { return record.CheckBead(s) == nil }) {
		set[b] = true
	}
	m.registered[l.Dir] = set
	return set
}

// usageTail is how much of a log's end is read for the agent's report of its cost: claude
// prints its result last.
const usageTail = 16 << 10

// logCost is the cost the agent reported at the end of its log, parsed again only when the log
// changed.
func (m *Model) logCost(path, agentName string) (float64, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	m.mu.Lock()
	c, ok := m.usage[path]
	m.mu.Unlock()
	if ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.cost, c.hasCost
	}
	b, err := fsx.ReadTail(path, usageTail)
	if err != nil {
		return 0, false
	}
	p := agent.Generic()
	if prof, err := agent.Builtin().Lookup(agentName); err == nil && agentName != "" {
		p = prof
	}
	u := p.ParseUsage(b)
	m.mu.Lock()
	m.usage[path] = usageCache{size: fi.Size(), mtime: fi.ModTime(), cost: u.CostUSD, hasCost: u.HasCost}
	m.mu.Unlock()
	return u.CostUSD, u.HasCost
}

// aiwgRows: the workspace's AIWG loops, not ended or ended within Recent.
func (m *Model) aiwgRows(ctx context.Context, now time.Time, owned map[string]bool) []*Row {
	ws := aiwg.FindWorkspace(m.src.Workspace)
	var rows []*Row
	for _, id := range ws.Loops() {
		st, err := readCached(&m.files, ws.StatePath(id), func(string) (*aiwg.State, error) { return ws.ReadState(id) })
		if err != nil {
			continue
		}
		r := &Row{Kind: KindLoop, Source: "aiwg", Name: id, Status: st.Status, Iteration: st.Iteration,
			MaxIterations: st.Configuration.MaxIterations, Reason: st.ExitReason, loopWS: ws.Root, aiwg: true,
			StateDir: st.StateDir}
		cost := st.Metrics.TotalCostUSD
		r.Cost = &cost
		if t, ok := record.ParseTime(st.StartedAt); ok {
			r.Started = t
		}
		if n := len(st.Iterations); n > 0 {
			r.ExitCode = st.Iterations[n-1].ExitCode
		}
		if aiwg.Terminal(st.Status) {
			end := r.Started
			if st.CompletedAt != nil {
				if t, ok := record.ParseTime(*st.CompletedAt); ok {
					end = t
				}
			} else if t, ok := record.ParseTime(st.LastUpdated); ok {
				end = t
			}
			if now.Sub(end) > m.src.Recent {
				continue
			}
		}
		if st.StateDir != "" && st.Iteration > 0 {
			r.Bead = aiwg.Bead(id, st.Iteration)
			owned[st.StateDir+"\x00"+r.Bead] = true
			cost := r.Cost
			m.bead(r, supervise.Layout{Dir: st.StateDir}, st.Agent)
			r.Cost = cost
		}
		rows = append(rows, r)
	}
	return rows
}

// taskRows: the tasks of the workspace's queues that are claimed, or ended within Recent; each
// claim is a bead in StateDir.
func (m *Model) taskRows(ctx context.Context, now time.Time, owned map[string]bool) []*Row {
	d := store.In(aiwg.FindWorkspace(m.src.Workspace).Root)
	plans, _ := fsx.Names(d.Root, func(n string) (string, bool) {
		id, ok := strings.CutPrefix(n, "task-queue-")
		if id, ok2 := strings.CutSuffix(id, ".json"); ok && ok2 && id != "" {
			return id, true
		}
		return "", false
	})
	stateDir, _ := filepath.Abs(m.src.StateDir)
	var rows []*Row
	for _, planID := range plans {
		q, err := store.New(d, planID).View()
		if err != nil {
			continue
		}
		for _, t := range q.Tasks() {
			r := &Row{Kind: KindTask, Source: planID, Name: t.ID, Status: t.Status, Attempt: t.Attempt, Reason: t.Error}
			if t.CostUSD > 0 || t.Status == store.Done {
				c := t.CostUSD
				r.Cost = &c
			}
			if t.ClaimedAt != nil {
				if tm, ok := record.ParseTime(*t.ClaimedAt); ok {
					r.Started = tm
				}
			}
			switch t.Status {
			case store.Claimed:
			case store.Done, store.Failed:
				if t.CompletedAt == nil {
					continue
				}
				if tm, ok := record.ParseTime(*t.CompletedAt); !ok || now.Sub(tm) > m.src.Recent {
					continue
				}
			default:
				continue // pending, blocked, skipped: no agent
			}
			if m.src.StateDir != "" {
				r.Bead, r.StateDir = plan.Bead(planID, t.ID), stateDir
				owned[stateDir+"\x00"+r.Bead] = true
				if run, err := record.ReadRun(record.Store{Dir: stateDir}.RunPath(r.Bead)); err == nil && run.Attempt == t.Attempt {
					r.ExitCode = run.ExitCode
				}
				cost := r.Cost
				m.bead(r, supervise.Layout{Dir: stateDir}, "")
				if cost != nil {
					r.Cost = cost
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// errNoSupervisor: the row has no supervisor whose screen top can ask for.
var errNoSupervisor = errors.New("no supervisor to ask")

// screenOf reads n lines of r's screen (0: all) from its supervisor's screen model; a worker
// the Python swarm started, from its pane.
func (m *Model) screenOf(ctx context.Context, r *Row, n int) ([]string, error) {
	a, err := m.screenAnswer(ctx, r, n)
	return a.lines, err
}

// screenAnswer is what r's supervisor says of its agent's screen: the lines, and since when
// the agent waits for input (as the supervisor decides it, waiting.go; zero when it does not,
// or when the screen is a pane's).
type screenAnswer struct {
	lines   []string
	waiting time.Time
}

// screenAnswer reads r's screen and whether its agent waits for input (screenOf).
func (m *Model) screenAnswer(ctx context.Context, r *Row, n int) (screenAnswer, error) {
	if r.Control == "" {
		if r.worker != nil && m.sw != nil && !r.worker.Supervised() && r.Live {
			text, err := m.sw.Screen(ctx, r.worker, max(n, 50))
			if err != nil {
				return screenAnswer{}, err
			}
			return screenAnswer{lines: strings.Split(strings.TrimRight(text, "\n"), "\n")}, nil
		}
		return screenAnswer{}, fmt.Errorf("%s: %w", r.Name, errNoSupervisor)
	}
	c, err := supervise.DialControl(r.Control, m.Timeout)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			return screenAnswer{}, errNoAnswer
		}
		return screenAnswer{}, err
	}
	defer c.Close()
	// The whole read within Timeout: a supervisor that accepts and says nothing is let go of
	// (Do alone waits 10 s).
	var late atomic.Bool
	t := time.AfterFunc(m.Timeout, func() { late.Store(true); c.Close() })
	defer t.Stop()
	resp, err := c.Do(supervise.Request{Op: supervise.OpScreen, Lines: n})
	if err != nil {
		if late.Load() {
			return screenAnswer{}, errNoAnswer
		}
		return screenAnswer{}, err
	}
	return screenAnswer{lines: resp.Screen, waiting: resp.WaitingInput}, nil
}

// Screen is r's screen now, from its supervisor's screen model: what a person would see, blank
// lines at the end left out.
func (m *Model) Screen(ctx context.Context, r *Row) ([]string, error) {
	lines, err := m.screenOf(ctx, r, 0)
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines, err
}
