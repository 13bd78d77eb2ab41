// Package swarmrun executes a work.yaml manifest (package manifest): its tasks run in
// parallel on executors' slots (this machine's, Local; a remote host is another Executor),
// each on a branch and a git worktree of its own made from the base branch with the branches of
// the tasks it depends on merged in, each attempt one of dispatch's (package attempt: bead
// <execution>-<task>, run and result records, the supervisor detached so that it outlives the
// run), its commit carrying the Swarm-Execution-ID, Swarm-Task-ID and Swarm-Agent trailers.
//
// .swarm/state.json at the top of the repository is seed 001's execution state, written
// atomically after every change and checked against the embedded execution schema first; at
// the end it is copied to .swarm/history/<id>.json with a markdown report beside it, and its
// summary holds the counts, the parallel speedup, the pull requests and a merge order checked
// with git merge-tree. A run killed at any point is finished by a run with Resume: attempts
// still at work are waited for, ended ones judged by their records, the rest run again.
package swarmrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/taskgraph"
)

// Config is what a run needs.
type Config struct {
	Manifest *manifest.Manifest
	// ManifestPath is the manifest as the state names it.
	ManifestPath string
	// Repo is the repository's top directory (absolute); the manifest's repo as the state
	// names it is RepoName.
	Repo, RepoName string
	// Executors run the attempts; every slot of every executor is an agent.
	Executors []Executor
	// MaxParallel caps how many attempts run at once (0: one per slot).
	MaxParallel int
	// Resume continues the current execution: what did not complete runs (again).
	Resume bool
	// Retry and Skip name tasks to run again (with their blocked dependents) and to skip.
	Retry, Skip []string
	// Halt stops the run on failures, as GNU parallel's --halt.
	Halt Halt
	// Joblog, when set, gets a line per attempt in GNU parallel's --joblog format.
	Joblog string
	// Forge opens a pull request for each completed task (nil: none).
	Forge *Forge
	// Log gets the run's warnings, and a line per task's transition unless Events is set
	// (then its consumer has them).
	Log io.Writer
	// Events, when set, is told each event of the run (package runevents), in order, from a
	// goroutine of its own: it may be slow, but the events that come while runevents.Buffer
	// of them wait are dropped (their count logged at the end), and at the end it is given a
	// few seconds to take those waiting. The events file keeps them all whatever it does.
	Events func(runevents.Event)
	// PID is the running process's id, which --abort signals.
	PID int
	// Checkpoint, when set, is called at each named step of the run, from the goroutine taking
	// it (several at once): "opened" (the state written, nothing started), "assigned" (tasks
	// assigned to slots, the state written), "registered" (a task's worktree registered, not
	// checked out), "launching" (the state names the attempt, its
	// supervisor not started), "launched" (the supervisor has its spec), "ended" (the attempt
	// ended and is recorded, the state not written yet), "committed" (the task's commit made,
	// the state not written yet), "final-state" (the final state written, not its history
	// copy) and "history" (the history copy written, not the report). Tests stop the process
	// there (SIGKILL) to check that --resume finishes the run whatever the step.
	Checkpoint func(step string)
}

// Halt is GNU parallel's --halt: when Fail failures (Percent: Fail percent of the tasks)
// happened, stop starting tasks (soon) or stop the running ones too (Now).
type Halt struct {
	Now     bool
	Fail    int
	Percent bool
}

// ParseHalt reads --halt: never, soon,fail=N, soon,fail=N%, now,fail=N, now,fail=N%.
func ParseHalt(s string) (Halt, error) {
	if s == "" || s == "never" {
		return Halt{}, nil
	}
	when, v, _ := strings.Cut(s, ",fail=")
	h := Halt{Now: when == "now"}
	v, h.Percent = strings.CutSuffix(v, "%")
	// N as written: no sign, no leading zero.
	if n, err := strconv.Atoi(v); (h.Now || when == "soon") && err == nil && strconv.Itoa(n) == v && n > 0 && (!h.Percent || n <= 100) {
		h.Fail = n
		return h, nil
	}
	return Halt{}, fmt.Errorf("--halt %q: give never, soon,fail=N, soon,fail=N%%, now,fail=N or now,fail=N%%", s)
}

// Result is how a run ended.
type Result struct {
	State *State
	// Interrupted: ctx ended, the execution is paused; Resume continues it.
	Interrupted bool
	// Halted: the halt condition was met.
	Halted bool
}

// ErrBusy is another run of the repository holding its lock.
var ErrBusy = errors.New("another swarm run is running in this repository")

// UsageError is a run refused before anything was written (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// runner is one run's shared state; mu guards st and everything below it.
type runner struct {
	cfg   Config
	paths Paths

	// gitMu serializes the registrations of the tasks' worktrees (git worktree add): one add
	// reads every worktree's administrative files, and fails on one being written at the same
	// moment ("failed to read .git/worktrees/X/commondir"). The checkouts and the merges run
	// outside it (gitx.MergeSpec).
	gitMu sync.Mutex
	// baseSHA is the base branch's commit, read once: every task starts from it. ident
	// prefixes the run's commit commands (identityFor).
	baseSHA string
	ident   []string
	// fullCommit: every task's commit is git commit's, as the repository asks for a signature
	// or has commit hooks (commitAsks).
	fullCommit bool
	// checkoutHook: the repository has a post-checkout hook, so each worktree is made by one
	// git worktree add under gitMu, which runs it as git always did (gitx.MergeSpec.Hooked).
	checkoutHook bool

	// writeMu orders the state's writes: a write holds it from taking the state's bytes to
	// the rename, so a later write never lands before an earlier one. dirty says the state
	// changed since the last write; kick wakes the writer.
	writeMu sync.Mutex
	dirty   bool
	kick    chan struct{}
	// gen counts the changes asked to be written (under mu); written is the gen of the last
	// state written, writeErr that write's error, writes how many writes were made (under
	// writeMu: set by the write, read by the next one or after it). A flush
	// whose change a write that began after it has written already returns at once: changes
	// made while a write is under way share the next one (group commit).
	gen, written uint64
	writeErr     error
	writes       int
	// enc encodes the state as the tasks that changed (under mu, and writeMu).
	enc stateEncoder
	// trees are the slots' worktrees (under mu).
	trees slotTrees
	// refsAtStart are the repository's refs when the first task claimed its branch
	// (claimBranch); refs is their set once read (under mu), and claimedAt the generation of the
	// state's write that names each branch claimed ahead (claimAhead, under mu).
	refsAtStart func() (map[string]bool, error)
	refs        map[string]bool
	claimedAt   map[string]uint64

	mu    sync.Mutex
	st    *State
	tries map[string]int // attempts of this run per task
	adopt map[string]int
	// sched schedules the tasks on the slots (taskgraph.Scheduler, the runner its Policy:
	// loop) over set, the ready set of the state's tasks (sched.Set): which tasks wait,
	// which are ready and in what order, which are held until a time (a task re-queued from an
	// offline host, until the attempt's deadline there has passed), and the blocked ones.
	// slots are the slots it starts with.
	sched *taskgraph.Scheduler[Slot]
	set   *taskgraph.Set
	slots []Slot
	// tasks is the attempts' context: the run's, which stopTasks (a halt now) ends too.
	tasks     context.Context
	stopTasks func()
	// execOf is each slot's executor (by agent id); gone are the executors whose host went
	// offline: their slots get no more tasks.
	execOf  map[string]Executor
	gone    map[Executor]bool
	failed  int
	halted  bool
	joblog  *os.File
	seq     int
	started time.Time
	// events are the run's events (package runevents), told under mu.
	events *runevents.Log
	// activeBefore is how long the execution's earlier runs were at work (State.ActiveSeconds
	// when this run began): this run's time is added to it at each write.
	activeBefore float64
}

// Run runs (or resumes) the execution of cfg.Manifest until every task has ended, the halt
// condition is met, or ctx ends (then the attempts at work are stopped and the state is
// paused).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Executors) == 0 {
		return nil, errors.New("no executor")
	}
	r := &runner{cfg: cfg, paths: Paths{Root: cfg.Repo}, tries: map[string]int{}, adopt: map[string]int{},
		execOf: map[string]Executor{}, gone: map[Executor]bool{},
		kick: make(chan struct{}, 1), started: time.Now()}
	if err := statedir.Mkdir(r.paths.Dir()); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	unlock, err := fsx.LockFile(lctx, r.paths.Lock())
	cancel()
	if errors.Is(err, fsx.ErrLocked) {
		return nil, fmt.Errorf("%w; wait for it, or stop it with 'swarm run --abort'", ErrBusy)
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkWorktreesDir(r.paths); err != nil {
		return nil, err
	}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	r.excludeSwarmDir(ctx)
	r.checkpoint("opened")
	if r.baseSHA, err = gitCmd(ctx, cfg.Repo, "rev-parse", "--verify", "refs/heads/"+r.cfg.Manifest.BaseBranch+"^{commit}"); err != nil {
		return nil, fmt.Errorf("reading the base branch %s: %w", r.cfg.Manifest.BaseBranch, err)
	}
	r.ident = identityFor(ctx, cfg.Repo)
	r.fullCommit = commitAsks(ctx, cfg.Repo)
	r.checkoutHook = gitx.Repo{Dir: cfg.Repo}.HasHook(ctx, "post-checkout")
	if cfg.Joblog != "" {
		if r.joblog, err = openJoblog(cfg.Joblog); err != nil {
			return nil, err
		}
		defer r.joblog.Close()
	}
	return r.loop(ctx)
}

// newID is YYYY-MM-DD-<slug>-<4 hex>.
func newID(m *manifest.Manifest, t time.Time) string {
	return fmt.Sprintf("%s-%s-%04x", t.UTC().Format("2006-01-02"), m.Slug(), rand.N(1<<16))
}

// open reads or makes the execution's state and sets the tasks up for this run.
func (r *runner) open(ctx context.Context) error {
	cur, err := ReadState(r.paths.State())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	resume := r.cfg.Resume || len(r.cfg.Retry) > 0 || len(r.cfg.Skip) > 0
	switch {
	case resume && cur == nil:
		return usagef("no execution to resume in %s; start one without --resume", r.paths.Dir())
	case resume && cur.ManifestName != r.cfg.Manifest.Name:
		return usagef("the current execution %s is of manifest %q, not %q; run that manifest, or start afresh without --resume", cur.ExecutionID, cur.ManifestName, r.cfg.Manifest.Name)
	case resume:
		r.st = cur
		r.activeBefore = activeSoFar(cur)
		err = r.reconcileManifest(ctx)
	case cur != nil && (cur.Status == ExecRunning || cur.Status == ExecPaused):
		return usagef("execution %s is unfinished (%s); continue it with --resume, or end it with --abort", cur.ExecutionID, cur.Status)
	default:
		err = r.fresh(ctx)
	}
	if err != nil {
		return err
	}
	// The manifest's tasks: the execution's take its prompt, priority and dependencies, the
	// new ones are added.
	for _, mt := range r.cfg.Manifest.Tasks {
		deps := append([]string{}, mt.DependsOn...)
		if t := r.st.Tasks[mt.ID]; t != nil {
			t.Prompt, t.Priority, t.DependsOn = mt.Prompt, mt.Priority, deps
			continue
		}
		r.st.Tasks[mt.ID] = &Task{ID: mt.ID, Prompt: mt.Prompt, Branch: mt.Branch, Priority: mt.Priority, DependsOn: deps, Status: Pending}
		r.st.Order = append(r.st.Order, mt.ID)
	}
	for _, id := range r.cfg.Skip {
		t := r.st.Tasks[id]
		if t == nil {
			return usagef("--skip %s: no such task in execution %s", id, r.st.ExecutionID)
		}
		if t.Status == Completed {
			return usagef("--skip %s: the task is completed already", id)
		}
		t.Status, t.Error = Skipped, nil
	}
	for _, id := range r.cfg.Retry {
		t := r.st.Tasks[id]
		if t == nil {
			return usagef("--retry %s: no such task in execution %s", id, r.st.ExecutionID)
		}
		rerun(t)
	}
	// What did not complete runs again; an attempt an earlier run left at work is adopted.
	for _, t := range r.st.Tasks {
		switch t.Status {
		case Failed, Blocked:
			rerun(t)
		case Queued, Assigned, Running:
			if t.Trace != nil && t.Trace.Attempt > 0 {
				r.adopt[t.ID] = t.Trace.Attempt
			}
			t.Status = Pending
		}
	}
	r.st.Status, r.st.CompletedAt, r.st.Summary, r.st.RunnerPID = ExecRunning, nil, nil, r.cfg.PID
	// The agents of an earlier run (their completed tasks) are kept, offline until this run's
	// executors name them again (ReadState and fresh give the map).
	for _, a := range r.st.Agents {
		a.Status, a.CurrentTask = AgentOffline, nil
	}
	max := r.cfg.MaxParallel
	for _, e := range r.cfg.Executors {
		for _, s := range e.Slots() {
			a := r.st.Agents[s.ID]
			if a == nil {
				a = &Agent{ID: s.ID, TasksCompleted: []string{}}
				r.st.Agents[s.ID] = a
			}
			a.Host, a.Port, a.Status, a.CurrentTask = s.Host, s.Port, AgentIdle, nil
			r.execOf[s.ID] = e
			if max <= 0 || len(r.slots) < max {
				r.slots = append(r.slots, s)
			}
		}
	}
	return r.flush()
}

// activeSoFar is how long the runs of a state written earlier were at work: its ActiveSeconds,
// or for a state written before it was kept, the time from its start to the last end it
// records.
func activeSoFar(st *State) float64 {
	start, ok := record.ParseTime(st.StartedAt)
	if st.ActiveSeconds > 0 || !ok {
		return max(st.ActiveSeconds, 0)
	}
	last := start
	for _, t := range st.Tasks {
		if t.Trace == nil || t.Trace.CompletedAt == nil {
			continue
		}
		if end, ok := record.ParseTime(*t.Trace.CompletedAt); ok && end.After(last) {
			last = end
		}
	}
	return last.Sub(start).Seconds()
}

// rerun makes task t pending with no error, to run again by --retry or a resume, counting a
// retry when an attempt of it ran (a task blocked before it ever ran is not retried: it runs
// for the first time). Seed 001's retry_count is how many times the task was retried, by hand
// or not.
func rerun(t *Task) {
	if t.Status != Pending && t.Trace != nil && t.Trace.Attempt > 0 {
		t.Trace.RetryCount++
	}
	t.Status, t.Error = Pending, nil
}

// fresh makes a new execution's state; every task's branch must be new.
func (r *runner) fresh(ctx context.Context) error {
	if !(gitx.Repo{Dir: r.cfg.Repo}).HasBranch(ctx, r.cfg.Manifest.BaseBranch) {
		return usagef("base branch %q does not exist in %s", r.cfg.Manifest.BaseBranch, r.cfg.Repo)
	}
	refs, err := refNames(ctx, r.cfg.Repo)
	if err != nil {
		return err
	}
	for _, t := range r.cfg.Manifest.Tasks {
		if refs["refs/heads/"+t.Branch] {
			return usagef("%s:%d: branch %q of task %q exists already; delete it (git branch -D %s) or give the task another branch", r.cfg.Manifest.Path, t.Line, t.Branch, t.ID, t.Branch)
		}
		// The run names the branch in full; a person or a forge that types the name gets
		// what git reads first: refs/<name>, then the tag, then the branch.
		for _, other := range []string{"refs/" + t.Branch, "refs/tags/" + t.Branch} {
			if refs[other] {
				return usagef("%s:%d: branch %q of task %q is also the name of %s, which git reads first; give the task another branch", r.cfg.Manifest.Path, t.Line, t.Branch, t.ID, other)
			}
		}
	}
	t := time.Now()
	r.st = &State{ExecutionID: newID(r.cfg.Manifest, t), ManifestName: r.cfg.Manifest.Name, ManifestPath: r.cfg.ManifestPath, Repo: r.cfg.RepoName,
		BaseBranch: r.cfg.Manifest.BaseBranch, StartedAt: record.FormatTime(t), Status: ExecRunning, Tasks: map[string]*Task{}, Agents: map[string]*Agent{},
		BranchesMade: []string{}}
	return nil
}

// reconcileManifest checks a resumed execution's tasks against the manifest: new tasks are
// each given the start's check (its branch must not exist yet); a task the manifest no longer
// has, a task whose branch changed and a changed base branch are refused (the execution's
// branches and commits are those it started with).
func (r *runner) reconcileManifest(ctx context.Context) error {
	if r.st.BaseBranch != r.cfg.Manifest.BaseBranch {
		return usagef("%s: base_branch is %q, but execution %s started from %q; put it back, or start afresh", r.cfg.Manifest.Path, r.cfg.Manifest.BaseBranch, r.st.ExecutionID, r.st.BaseBranch)
	}
	for _, id := range r.st.Order {
		if r.cfg.Manifest.Task(id) == nil {
			return usagef("task %q of execution %s is no longer in %s; put it back, or start afresh", id, r.st.ExecutionID, r.cfg.Manifest.Path)
		}
	}
	for _, mt := range r.cfg.Manifest.Tasks {
		t := r.st.Tasks[mt.ID]
		switch {
		case t != nil && t.Branch != mt.Branch:
			return usagef("%s:%d: task %q has the branch %q in execution %s, not %q; put it back, or start afresh", r.cfg.Manifest.Path, mt.Line, mt.ID, t.Branch, r.st.ExecutionID, mt.Branch)
		case t == nil && gitx.Repo{Dir: r.cfg.Repo}.HasBranch(ctx, mt.Branch):
			return usagef("%s:%d: branch %q of task %q (new to execution %s) exists already; delete it (git branch -D %s) or give the task another branch", r.cfg.Manifest.Path, mt.Line, mt.Branch, mt.ID, r.st.ExecutionID, mt.Branch)
		}
	}
	// A state an older version wrote has no branches_made: the branches of the tasks that were
	// ever assigned are the execution's (it made them with -B then).
	if r.st.BranchesMade == nil {
		r.st.BranchesMade = []string{}
		for _, id := range r.st.Order {
			if t := r.st.Tasks[id]; t.Trace != nil {
				r.st.BranchesMade = append(r.st.BranchesMade, t.Branch)
			}
		}
	}
	return nil
}

// checkpoint calls cfg.Checkpoint.
func (r *runner) checkpoint(step string) {
	if r.cfg.Checkpoint != nil {
		r.cfg.Checkpoint(step)
	}
}

// flush writes the state as it is now (not under mu). It returns once a write that began
// after the call has ended: when one did while this call waited for the previous write to end,
// its result is this call's, and nothing is written again. So the writes asked for while one
// is under way (several attempts launched at once) are made in one.
func (r *runner) flush() error {
	r.mu.Lock()
	r.gen++
	want := r.gen
	r.mu.Unlock()
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if r.written >= want {
		return r.writeErr
	}
	r.mu.Lock()
	// How long the execution's runs have been at work, this one until now: each write stamps
	// it, so a run killed outright has its time counted up to its last write.
	r.st.ActiveSeconds = r.activeBefore + time.Since(r.started).Seconds()
	b, err := r.enc.encode(r.st)
	r.written = r.gen
	r.dirty = false
	r.mu.Unlock()
	if err == nil {
		err = writeStateBytes(r.paths.State(), b)
	}
	r.writeErr = err
	r.writes++
	return err
}

// flushSince returns once a state write that took the state at generation gen or later has
// ended (flush), writing the state itself when none has: the change asked for may have been
// written by the writer already.
func (r *runner) flushSince(gen uint64) error {
	r.writeMu.Lock()
	done := r.written >= gen && r.writeErr == nil
	r.writeMu.Unlock()
	if done {
		return nil
	}
	return r.flush()
}

// writeOrLog marks the state changed (under mu): the writer writes it soon, coalescing the
// changes made meanwhile. What such a change records is never lost to a crash: an ended
// attempt is judged again by its records, its commit found by its trailer.
func (r *runner) writeOrLog() {
	r.dirty = true
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// writer writes the state whenever it changed, until stop is closed (finish then writes the
// state the run ends with).
func (r *runner) writer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-r.kick:
		case <-stop:
			return
		}
		r.mu.Lock()
		dirty := r.dirty
		r.mu.Unlock()
		if dirty {
			if err := r.flush(); err != nil {
				r.logf("writing the state: %v", err)
			}
		}
	}
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, format+"\n", args...)
	}
}

// loop schedules the tasks until none can run any more: the runner is swarm run's part in
// the scheduling (taskgraph.Policy): the halt rules, the state's queued and assigned tasks
// (written as they change), an adopted attempt's host, and the attempts, run under r.tasks,
// which a halt now stops.
func (r *runner) loop(ctx context.Context) (*Result, error) {
	r.tasks, r.stopTasks = context.WithCancel(ctx)
	defer r.stopTasks()
	stopWriter, writerDone := make(chan struct{}), make(chan struct{})
	go r.writer(stopWriter, writerDone)
	r.mu.Lock()
	r.events = runevents.Open(r.paths.Root, r.st.ExecutionID, runevents.Options{Consumer: r.cfg.Events, Logf: r.logf, Drain: eventDrain})
	r.events.RunStart(len(r.st.Tasks), len(r.slots), r.eventCounts())
	r.openSet()
	r.sched = taskgraph.NewScheduler(r.set, r.slots)
	r.mu.Unlock()
	r.sched.Loop(ctx, &r.mu, r)
	close(stopWriter)
	<-writerDone
	defer r.events.Close()
	return r.finish(ctx)
}

// Stopping: no task starts once the run's context ended or the halt condition was met; a halt
// now stops the attempts at work too (tasks ends with the run's context, or by a halt).
func (r *runner) Stopping() bool {
	if r.halted && r.cfg.Halt.Now {
		r.stopTasks()
	}
	return r.tasks.Err() != nil || r.halted
}

// Launched is the "assigned" checkpoint: the state names the tasks assigned.
func (r *runner) Launched([]taskgraph.Placed[Slot]) { r.checkpoint("assigned") }

// Run runs task i in slot (runTask).
func (r *runner) Run(i int, slot Slot) { r.runTask(r.tasks, r.set.Graph().ID(i), slot) }

// openSet makes the ready set of the state's tasks, in the state's order and ranked by
// priority (under mu). open made every task that did not complete or was not skipped pending:
// none is failed, blocked or at work, so none is blocked at the start.
func (r *runner) openSet() {
	nodes := make([]taskgraph.Node, len(r.st.Order))
	for i, id := range r.st.Order {
		t := r.st.Tasks[id]
		nodes[i] = taskgraph.Node{ID: id, Deps: t.DependsOn, Rank: manifest.Rank(t.Priority)}
	}
	r.set, _ = taskgraph.NewSet(taskgraph.New(nodes), func(i int) taskgraph.State {
		if s := r.st.Tasks[r.st.Order[i]].Status; s == Completed || s == Skipped {
			return taskgraph.Done
		}
		return taskgraph.Waiting
	})
}

// index is task id's position in the ready set.
func (r *runner) index(id string) int {
	i, _ := r.set.Graph().Index(id)
	return i
}

// markBlocked records the tasks the ready set blocked (under mu), each with the dependency
// that blocks it: the first of its dependencies failed or blocked by then, as the blocked tasks
// were named when they were found by scanning the tasks in order.
func (r *runner) markBlocked(blocked []taskgraph.Blocking) {
	g := r.set.Graph()
	for _, b := range blocked {
		t, d := r.st.Tasks[g.ID(b.Task)], g.ID(b.By)
		for _, dep := range t.DependsOn {
			if s := r.st.Tasks[dep].Status; s == Failed || s == Blocked {
				d = dep
				break
			}
		}
		t.Status = Blocked
		r.enc.mark(t.ID)
		t.Error = &TaskError{Type: ErrDependency, Message: fmt.Sprintf("depends on %s, which is %s", d, r.st.Tasks[d].Status), Timestamp: now(), Recoverable: true}
		r.events.TaskBlocked(t.ID, t.Error.Message)
	}
}

// Queued marks queued the pending tasks among those that became ready (under mu).
func (r *runner) Queued(ready []int) {
	for _, i := range ready {
		if t := r.st.Tasks[r.set.Graph().ID(i)]; t.Status == Pending {
			t.Status = Queued
			r.enc.mark(t.ID)
			r.writeOrLog()
		}
	}
}

// Assign records each task placed assigned to its slot (under mu).
func (r *runner) Assign(placed []taskgraph.Placed[Slot]) {
	ts := now()
	for _, pl := range placed {
		t, slot := r.st.Tasks[r.set.Graph().ID(pl.Task)], pl.Slot
		a := r.st.Agents[slot.ID]
		a.Status, a.CurrentTask, a.LastHeartbeat = AgentBusy, strp(t.ID), strp(ts)
		prev := cmp.Or(t.Trace, &Trace{})
		// An adopted attempt works in the worktree made from base_sha: kept, never made again
		// under it.
		base := ""
		if r.adopt[t.ID] > 0 {
			base = prev.BaseSHA
		}
		// The error of an earlier attempt (or of an interrupt, a halt, an offline host) is not
		// the task's any more: seed 001's error is null unless the task failed.
		t.Status, t.Error = Assigned, nil
		r.enc.mark(t.ID)
		r.claimAhead(t)
		t.Trace = &Trace{AgentID: slot.ID, AgentHost: strp(slot.Host), AgentPort: slot.Port, AssignedAt: strp(ts),
			RetryCount: prev.RetryCount, Bead: r.st.ExecutionID + "-" + t.ID, Attempt: r.adopt[t.ID], Worktree: r.worktreeFor(slot, t), BaseSHA: base,
			Requeued: prev.Requeued}
		r.writeOrLog()
	}
}

// Place is the index in free of the slot task i (taken) starts in, -1 when none may now
// (under mu). An attempt an earlier run left at work on a host is adopted there: the task
// waits for a slot of that host (its own first), unless this run reaches that host no more.
func (r *runner) Place(i int, free []Slot) int {
	t := r.st.Tasks[r.set.Graph().ID(i)]
	if r.adopt[t.ID] == 0 || t.Trace == nil || t.Trace.AgentHost == nil {
		return 0
	}
	host := *t.Trace.AgentHost
	reached := slices.ContainsFunc(r.cfg.Executors, func(e Executor) bool {
		return !r.gone[e] && slices.ContainsFunc(e.Slots(), func(s Slot) bool { return s.Host == host })
	})
	if !reached {
		// This run does not reach where the attempt ran (hosts.yaml changed, or --hosts given
		// or dropped): it may still run there until its deadline, counted from its start.
		if nb := r.leaseEnd(t); time.Now().Before(nb) {
			if r.set.NotBefore(i).IsZero() {
				r.logf("%s: attempt %d of an earlier run was on %s, which this run does not reach: held until %s, its deadline there", t.ID, r.adopt[t.ID], host, record.FormatTime(nb))
			}
			r.set.Hold(i, nb)
			return -1
		}
		delete(r.adopt, t.ID) // not to be looked for here: the task starts afresh
		return 0
	}
	if at := slices.IndexFunc(free, func(s Slot) bool { return s.ID == t.Trace.AgentID }); at >= 0 {
		return at
	}
	return slices.IndexFunc(free, func(s Slot) bool { return s.Host == host })
}

// leaseEnd is when task t's attempt of an earlier run has surely ended where it ran: its start
// (the state's, else now) plus its timeout (else a remote attempt's default lease), the
// default kill grace and the margin (under mu; t is adopted, so it has a trace).
func (r *runner) leaseEnd(t *Task) time.Time {
	start := time.Now()
	if t.Trace.StartedAt != nil {
		if s, ok := record.ParseTime(*t.Trace.StartedAt); ok {
			start = s
		}
	}
	// A manifest's timeout is positive, or 0 for none.
	return start.Add(cmp.Or(r.cfg.Manifest.Task(t.ID).Timeout, time.Hour) + 10*time.Second + leaseMargin)
}

// release gives slot back to the scheduler, its agent's status status and its task none,
// unless its executor's host went offline: then its agent is offline (under mu).
func (r *runner) release(slot Slot, status string) {
	a := r.st.Agents[slot.ID]
	a.Status, a.CurrentTask = status, nil
	gone := r.gone[r.execOf[slot.ID]]
	if gone {
		a.Status = AgentOffline
	}
	r.sched.Free(slot, gone)
}

// offline takes a task back from a host that went offline: it goes back to the queue, held
// until the attempt's deadline there has passed, its trace saying so; the host's agents are
// offline and get no more tasks.
func (r *runner) offline(id string, slot Slot, exec Executor, out Outcome) {
	r.keepWorktree(id, slot)
	r.mu.Lock()
	defer r.mu.Unlock()
	o := out.Offline
	t := r.st.Tasks[id]
	var hb *string
	if !o.LastHeartbeat.IsZero() {
		hb = strp(record.FormatTime(o.LastHeartbeat))
		r.st.Agents[slot.ID].LastHeartbeat = hb
	}
	msg := fmt.Sprintf("host %s went offline during attempt %d (%s); re-queued", o.Host, out.Attempt, out.Reason)
	if time.Now().Before(o.NotBefore) {
		msg += fmt.Sprintf(", to run elsewhere after %s, when the attempt's deadline there has passed", record.FormatTime(o.NotBefore))
		r.set.Hold(r.index(id), o.NotBefore)
	} else {
		r.set.Requeue(r.index(id))
	}
	t.Status = Queued
	r.enc.mark(id)
	t.Error = &TaskError{Type: ErrOffline, Message: msg, Timestamp: now(), Recoverable: true}
	t.Trace.Requeued = append(t.Trace.Requeued, Requeue{AgentID: slot.ID, AgentHost: o.Host, Attempt: out.Attempt, At: now(),
		LastHeartbeat: hb, NotBefore: record.FormatTime(o.NotBefore), Reason: out.Reason})
	if !r.gone[exec] {
		r.events.HostOffline(o.Host, out.Reason)
	}
	r.gone[exec] = true
	r.release(slot, AgentOffline)
	r.events.TaskRequeued(runevents.At{Task: id, Attempt: out.Attempt, Agent: slot.ID, Host: o.Host}, msg)
	for _, s := range r.sched.Retire(func(s Slot) bool { return r.execOf[s.ID] == exec }) {
		r.st.Agents[s.ID].Status = AgentOffline
	}
	r.logTransition("%s: %s: %s", slot.ID, id, msg)
	r.writeOrLog()
}

// taskRun is what runTask's steps share about the task it runs: read under mu when it starts.
// The task's id and trace, and the execution's id, do not change while it runs; nor does its
// worktree until the task ends (keepWorktree).
type taskRun struct {
	t    *Task
	slot Slot
	mt   *manifest.Task
	wt   string // the task's worktree
	base string // the commit the task's branch starts from
}

// runTask runs task id in slot until it completes, fails for good, is blocked, or ctx ends.
func (r *runner) runTask(ctx context.Context, id string, slot Slot) {
	exec := r.execOf[slot.ID]
	r.mu.Lock()
	t := r.st.Tasks[id]
	tk := &taskRun{t: t, slot: slot, mt: r.cfg.Manifest.Task(id), wt: t.Trace.Worktree, base: t.Trace.BaseSHA}
	adopt := r.adopt[id]
	delete(r.adopt, id)
	// The branches merged into the task's: its completed dependencies'.
	var deps []string
	for _, d := range t.DependsOn {
		if dt := r.st.Tasks[d]; dt.Status == Completed {
			deps = append(deps, dt.Branch)
		}
	}
	r.mu.Unlock()

	if (adopt == 0 || tk.base == "") && !r.prepareWorktree(ctx, tk, deps) {
		return
	}
	job := r.taskJob(tk, adopt)
	if adopt > 0 {
		r.adopted(tk, adopt)
	} else if err := r.checkWorktree(tk.wt); err != nil {
		r.end(id, slot, Failed, &TaskError{Type: ErrSetup, Message: "starting the agent: " + oneLine(err), Timestamp: now()})
		return
	}
	out := exec.Run(ctx, slot, job)
	r.checkpoint("ended")
	r.jobline(exec.Host(), id, out)
	if out.Interrupted {
		r.interrupted(id, slot)
		return
	}
	if out.Offline != nil {
		r.offline(id, slot, exec, out)
		return
	}
	tries := r.traceEnd(t, out)
	// The agent (or another task's) may have put a link in place of the worktree: git -C would
	// bring branches and commit wherever it points.
	worktreeErr := r.checkWorktree(tk.wt)
	var ws worktreeStatus
	if out.Status == record.StatusDone && worktreeErr == nil {
		out, ws = r.onTaskBranch(ctx, tk, out)
	}
	if out.Status == record.StatusDone {
		r.completed(ctx, tk, out, ws, worktreeErr)
		return
	}
	r.attemptFailed(tk, out, tries)
}

// prepareWorktree claims the task's branch and makes its worktree, setting tk.base; when it
// cannot, it ends the task (failed, blocked on a conflict, or interrupted) and says false.
func (r *runner) prepareWorktree(ctx context.Context, tk *taskRun, deps []string) bool {
	id, slot, t := tk.t.ID, tk.slot, tk.t
	newBranch, err := r.claimBranch(ctx, t)
	if err != nil {
		r.end(id, slot, Failed, &TaskError{Type: ErrSetup, Message: oneLine(err), Timestamp: now()})
		return false
	}
	// The slot's worktree re-pointed, or registered one at a time (gitMu), checked out and
	// merged at once; nothing below the repository's top is resolved through a link.
	tk.base, err = r.makeWorktree(ctx, slot, t, tk.wt, deps, newBranch)
	if errors.Is(err, gitx.ErrBranchExists) {
		err = r.unclaimBranch(t, err)
	}
	var conflict *gitx.ConflictError
	switch {
	case errors.As(err, &conflict):
		r.end(id, slot, Blocked, &TaskError{Type: ErrConflict, Message: conflict.Error(), Files: conflict.Files, Timestamp: now()})
	case err != nil && ctx.Err() != nil:
		r.interrupted(id, slot)
	case err != nil:
		r.end(id, slot, Failed, &TaskError{Type: ErrSetup, Message: "making the task's worktree: " + oneLine(err), Timestamp: now()})
	}
	return err == nil
}

// taskJob is the job the executor runs for the task, attempt adopt of an earlier run to be
// waited for (0: none), its hooks recording the launch and the heartbeats in the state.
func (r *runner) taskJob(tk *taskRun, adopt int) Job {
	id, slot, t, mt, execID := tk.t.ID, tk.slot, tk.t, tk.mt, r.st.ExecutionID
	job := Job{Task: id, Bead: t.Trace.Bead, Agent: mt.Agent, Model: mt.Model, Prompt: mt.Prompt, Dir: tk.wt,
		Branch: t.Branch, Timeout: mt.Timeout, MaxAttempts: mt.Retries + 1, Adopt: adopt,
		Env: []string{"SWARM_EXECUTION_ID=" + execID, "SWARM_TASK_ID=" + id, "SWARM_BRANCH=" + t.Branch, "SWARM_BASE_BRANCH=" + r.cfg.Manifest.BaseBranch}}
	job.Launched = func(n int) {
		r.mu.Lock()
		t.Status = Running
		t.Trace.Attempt, t.Trace.BaseSHA, t.Trace.StartedAt = n, tk.base, strp(now())
		r.enc.mark(id)
		r.events.TaskStart(runevents.At{Task: id, Attempt: n, Agent: slot.ID, Host: slot.Host}, "")
		r.mu.Unlock()
		// Written before the supervisor starts: a resume must know the attempt to adopt.
		if err := r.flush(); err != nil {
			r.logf("writing the state: %v", err)
		}
		r.checkpoint("launching")
	}
	job.Checkpoint = r.cfg.Checkpoint
	job.Heartbeat = func(at time.Time) {
		r.mu.Lock()
		r.st.Agents[slot.ID].LastHeartbeat = strp(record.FormatTime(at))
		r.writeOrLog()
		r.mu.Unlock()
	}
	return job
}

// adopted marks the task running again, waiting for attempt adopt that an earlier run started.
func (r *runner) adopted(tk *taskRun, adopt int) {
	id, slot := tk.t.ID, tk.slot
	r.mu.Lock()
	tk.t.Status, tk.t.Trace.BaseSHA = Running, tk.base
	r.enc.mark(id)
	r.events.TaskStart(runevents.At{Task: id, Attempt: adopt, Agent: slot.ID, Host: slot.Host}, "adopted: started by an earlier run")
	r.writeOrLog()
	r.mu.Unlock()
	r.logTransition("%s: %s: waiting for attempt %d, from an earlier run", slot.ID, id, adopt)
}

// completed commits the work of an attempt that ended well (failing the task when it cannot,
// or when worktreeErr says the worktree is not one to commit in), opens its pull request when
// a forge is set, and ends the task completed.
func (r *runner) completed(ctx context.Context, tk *taskRun, out Outcome, ws worktreeStatus, worktreeErr error) {
	id, slot := tk.t.ID, tk.slot
	sha, err := "", worktreeErr
	if err == nil {
		sha, err = commitTask(context.WithoutCancel(ctx), tk.wt, ws, tk.base, r.st.ExecutionID, id, slot.ID, commitTitle(id, tk.mt.Prompt), r.ident, r.fullCommit)
	}
	if err != nil {
		r.end(id, slot, Failed, &TaskError{Type: ErrSetup, Message: "committing the task's work: " + oneLine(err), Timestamp: now()})
		return
	}
	r.slotCommitted(slot, tk.wt, ws.ignored)
	r.checkpoint("committed")
	r.mu.Lock()
	tk.t.Trace.CommitSHA = &sha
	r.enc.mark(id)
	r.mu.Unlock()
	if r.cfg.Forge != nil {
		r.openPR(ctx, tk)
	}
	r.logTransition("%s: %s: completed (attempt %d, %s)", slot.ID, id, out.Attempt, sha)
	r.end(id, slot, Completed, nil)
}

// openPR opens the task's pull request on the forge and records it in the trace; a forge's
// error is logged and leaves the task completed.
func (r *runner) openPR(ctx context.Context, tk *taskRun) {
	id, t, mt, execID := tk.t.ID, tk.t, tk.mt, r.st.ExecutionID
	body := fmt.Sprintf("%s\n\n%s\n", strings.TrimSpace(mt.Prompt), strings.Join(trailers(execID, id, tk.slot.ID), "\n"))
	n, url, err := r.cfg.Forge.Open(context.WithoutCancel(ctx), PRRequest{Dir: tk.wt, Branch: t.Branch, Base: r.cfg.Manifest.BaseBranch,
		Title: commitTitle(id, mt.Prompt), Body: body, TaskID: id, Execution: execID})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.logf("%s: pull request: %v", id, err)
		return
	}
	t.Trace.PRNumber, t.Trace.PRURL = n, &url
	r.enc.mark(id)
}

// attemptFailed puts the task back in the queue when it has tries left (its worktree kept,
// its slot freed), else ends it failed.
func (r *runner) attemptFailed(tk *taskRun, out Outcome, tries int) {
	id, slot, t := tk.t.ID, tk.slot, tk.t
	kind := ErrExecution
	if out.Status == record.StatusTimeout {
		kind = ErrTimeout
	}
	var logs *string
	if out.Logs != "" {
		logs = &out.Logs
	}
	msg := fmt.Sprintf("attempt %d: %s", out.Attempt, out.Reason)
	retry := tries < tk.mt.Retries+1
	te := &TaskError{Type: kind, Message: msg, AgentLogs: logs, Timestamp: now(), Recoverable: retry}
	if !retry {
		r.logTransition("%s: %s: failed: %s", slot.ID, id, msg)
		r.end(id, slot, Failed, te)
		return
	}
	r.keepWorktree(id, slot)
	r.mu.Lock()
	t.Trace.RetryCount++
	r.requeue(t, slot, Queued, te, AgentFailed)
	r.events.TaskRetry(runevents.At{Task: id, Attempt: out.Attempt, Agent: slot.ID, Host: slot.Host}, msg, valueOr(t.Trace.DurationSeconds, 0))
	r.mu.Unlock()
	r.logTransition("%s: %s: %s; retrying", slot.ID, id, msg)
}

// onTaskBranch brings the commits of an agent that switched to a branch of its own back onto
// the task's branch before the task's commit is made (gitx.Repo.ReturnToBranch), so that the
// commit recorded, the merge order and the pull request are the task's branch's. When they
// cannot be brought back by a fast-forward, the attempt that ended well is failed, the reason
// naming both branches. It returns the worktree's status (one git status, which the commit
// uses; none when git status failed): an agent that stayed on the task's branch costs nothing
// more.
func (r *runner) onTaskBranch(ctx context.Context, tk *taskRun, out Outcome) (Outcome, worktreeStatus) {
	ws, err := readStatus(context.WithoutCancel(ctx), tk.wt)
	if err == nil && ws.branch == tk.t.Branch {
		return out, ws
	}
	from, err := gitx.Repo{Dir: tk.wt}.ReturnToBranch(context.WithoutCancel(ctx), tk.t.Branch)
	switch {
	case err != nil:
		out.Status, out.Reason = record.StatusFailed, oneLine(err)
	case from != "":
		r.logf("%s: %s: the agent worked on %s; its commits are brought onto %s", tk.slot.ID, tk.t.ID, from, tk.t.Branch)
	}
	return out, ws
}

// traceEnd fills the trace with the attempt's end, and counts it among the task's tries in
// this run: it returns how many there were.
func (r *runner) traceEnd(t *Task, out Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	tr := t.Trace
	r.enc.mark(t.ID)
	tr.CompletedAt = strp(record.FormatTime(out.Finished))
	if !out.Started.IsZero() {
		tr.StartedAt = strp(record.FormatTime(out.Started))
		d := max(out.Finished.Sub(out.Started).Seconds(), 0)
		tr.DurationSeconds = &d
	}
	// An attempt numbered (never below 0) is the one that ended; 0: none was launched.
	tr.ExitCode = out.ExitCode
	tr.Attempt = cmp.Or(out.Attempt, tr.Attempt)
	r.tries[t.ID]++
	return r.tries[t.ID]
}

// end records a task's final status and frees its slot.
func (r *runner) end(id string, slot Slot, status string, te *TaskError) {
	if status != Completed {
		r.keepWorktree(id, slot)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.st.Tasks[id]
	t.Status, t.Error = status, te
	r.enc.mark(id)
	r.taskEnded(t, slot)
	a := r.st.Agents[slot.ID]
	a.LastHeartbeat = strp(now())
	a.TotalExecutionTime += valueOr(t.Trace.DurationSeconds, 0)
	agent := AgentIdle
	switch status {
	case Completed:
		r.set.Done(r.index(id))
		a.TasksCompleted = append(a.TasksCompleted, id)
	case Failed:
		r.markBlocked(r.set.Fail(r.index(id)))
		agent = AgentFailed // until it takes its next task
		r.failed++
		h := r.cfg.Halt
		if h.Fail > 0 && ((h.Percent && r.failed*100 >= h.Fail*len(r.st.Tasks)) || (!h.Percent && r.failed >= h.Fail)) && !r.halted {
			r.halted = true
			r.logf("halting: %d tasks failed (--halt)", r.failed)
		}
	case Blocked:
		r.markBlocked(r.set.Block(r.index(id)))
		r.logTransition("%s: blocked: %s", id, te.Message)
	}
	r.release(slot, agent)
	r.writeOrLog()
}

// interrupted puts a task stopped by the run's end back to pending: --resume runs it again.
func (r *runner) interrupted(id string, slot Slot) {
	r.keepWorktree(id, slot)
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.st.Tasks[id]
	why := "stopped by an interrupt (SIGINT or SIGTERM); 'swarm run --resume' runs it again"
	kind := ErrStopped
	if r.halted {
		why, kind = "stopped by --halt now", ErrHalted
	}
	r.requeue(t, slot, Pending, &TaskError{Type: kind, Message: why, Timestamp: now(), Recoverable: true}, AgentIdle)
}

// requeue puts task t back in the ready set, its status and error those given, and frees its
// slot, its agent's status agent (under mu): a retry and an interrupted task run again.
func (r *runner) requeue(t *Task, slot Slot, status string, te *TaskError, agent string) {
	t.Status, t.Error = status, te
	r.enc.mark(t.ID)
	r.set.Requeue(r.index(t.ID))
	r.release(slot, agent)
	r.writeOrLog()
}

// commitTitle is the first line of the task's commit and pull request.
func commitTitle(id, prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if len(line) > 60 {
		line = line[:57] + "..."
	}
	return fmt.Sprintf("%s: %s", id, line)
}

// finish ends the run: paused when interrupted; else the summary, the history file and the
// report. Every task that ran has freed its agent (release): none is busy any more.
func (r *runner) finish(ctx context.Context) (*Result, error) {
	r.releaseSlots(context.WithoutCancel(ctx))
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &Result{State: r.st, Halted: r.halted, Interrupted: ctx.Err() != nil}
	r.st.RunnerPID = 0
	r.st.ActiveSeconds = r.activeBefore + time.Since(r.started).Seconds()
	var err error
	if res.Interrupted {
		r.st.Status = ExecPaused
		r.mu.Unlock()
		err = r.flush()
		r.mu.Lock()
	} else {
		err = finalize(context.WithoutCancel(ctx), r.paths, r.cfg.Repo, r.st, r.checkpoint)
	}
	// Told once the state is final: a reader of the events file that sees the run's end
	// finds the state (or its history copy) saying so.
	r.events.RunEnd(r.st.Status, r.halted, r.eventCounts())
	return res, err
}

// finalize writes the summary, the final state, its history copy and the report.
// checkpoint (nil: none) is called once the state is written and once its history copy is.
func finalize(ctx context.Context, p Paths, repo string, st *State, checkpoint func(string)) error {
	if checkpoint == nil {
		checkpoint = func(string) {}
	}
	t := time.Now()
	st.CompletedAt = strp(record.FormatTime(t))
	c := st.counts()
	st.Status = ExecCompleted
	if c[Failed]+c[Blocked]+c[Pending]+c[Queued] > 0 {
		st.Status = ExecFailed
	}
	sum := &Summary{TotalTasks: len(st.Tasks), Completed: c[Completed], Failed: c[Failed], Skipped: c[Skipped], Blocked: c[Blocked],
		Pending: c[Pending] + c[Queued] + c[Assigned] + c[Running], AgentsUsed: []string{}, PRsCreated: []PR{}, SuggestedMergeOrder: []string{}}
	if started, ok := record.ParseTime(st.StartedAt); ok {
		sum.TotalDurationSeconds = t.Sub(started).Seconds()
	}
	busy := 0.0
	used := map[string]bool{}
	for _, id := range st.Order {
		task := st.Tasks[id]
		if task.Trace == nil {
			continue
		}
		busy += valueOr(task.Trace.DurationSeconds, 0)
		if task.Status == Completed || task.Status == Failed {
			used[task.Trace.AgentID] = true
		}
		if task.Trace.PRURL != nil {
			sum.PRsCreated = append(sum.PRsCreated, PR{TaskID: id, PRNumber: task.Trace.PRNumber, PRURL: *task.Trace.PRURL})
		}
	}
	sum.AgentsUsed = append(sum.AgentsUsed, slices.Sorted(maps.Keys(used))...)
	// The wall time is the time the runs were at work: an execution continued later (--resume,
	// --retry) did not work while no run was there. A state of before ActiveSeconds has only
	// its duration.
	wall := st.ActiveSeconds
	if wall <= 0 {
		wall = sum.TotalDurationSeconds
	}
	if wall > 0 {
		sum.ParallelSpeedup = float64(int(busy/wall*100+0.5)) / 100
	}
	if order := mergeCandidates(st); len(order) > 0 {
		branch, deps := map[string]string{}, map[string][]string{}
		for _, id := range order {
			branch[id], deps[id] = st.Tasks[id].Branch, st.Tasks[id].DependsOn
		}
		mo, conflict, err := mergeOrder(ctx, repo, st.BaseBranch, order, branch, deps)
		if err != nil {
			return fmt.Errorf("checking the merge order: %w", err)
		}
		sum.SuggestedMergeOrder, sum.MergeConflict = mo, conflict
	}
	st.Summary = sum
	if err := st.writeFile(p.State()); err != nil {
		return err
	}
	checkpoint("final-state")
	if err := st.writeFile(p.History(st.ExecutionID)); err != nil {
		return err
	}
	checkpoint("history")
	return fsx.WriteFileAtomic(p.Report(st.ExecutionID), []byte(Report(st)), 0o600)
}

// mergeCandidates are the completed tasks in a topological order: dependencies first, then
// priority, then manifest order. A dependency that did not complete is not waited for.
func mergeCandidates(st *State) []string {
	var nodes []taskgraph.Node
	for _, id := range st.Order {
		if t := st.Tasks[id]; t.Status == Completed {
			deps := slices.DeleteFunc(slices.Clone(t.DependsOn), func(d string) bool { return st.Tasks[d].Status != Completed })
			nodes = append(nodes, taskgraph.Node{ID: id, Deps: deps, Rank: manifest.Rank(t.Priority)})
		}
	}
	var out []string
	for _, i := range taskgraph.New(nodes).Order() {
		out = append(out, nodes[i].ID)
	}
	return out
}
