package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary the tasks' supervisor too: the runner starts it as
// "BINARY __supervise --state-dir DIR --handoff H BEAD", as ralph's `queue __supervise` verb.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
		}))
	}
	if len(os.Args) > 1 && os.Args[1] == CheckpointVerb {
		os.Exit(checkpointMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == killedHostsRunnerVerb {
		os.Exit(killedHostsRunnerMain(os.Args[2:]))
	}
	os.Exit(sweep.Guard(m).Run())
}

// logWatch is a run's log, which a test can wait on.
type logWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logWatch) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the log has a line matching re.
func (l *logWatch) waitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile("(?m)" + re)
	deadline := time.After(60 * time.Second)
	for {
		l.mu.Lock()
		ok, ch := rx.Match(l.buf.Bytes()), l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the run's log has no line matching %q after 60 s:\n%s", re, l.String())
		}
	}
}

// waitUntil polls cond (a state on disk or of a process) until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not after 60 s", what)
}

// world is a runner's surroundings: a repository with its queue of plan p, a state directory,
// the stand-in agent (testdata/agent.sh) as agent "fake".
type world struct {
	t        *testing.T
	tmp      string
	repo     string
	stateDir string
	store    *store.Store
	profile  *agent.Profile
}

// newWorld queues tasks, each "id: description (after deps)" as a plan's markdown line.
func newWorld(t *testing.T, tasks ...string) *world {
	t.Helper()
	tmp := t.TempDir()
	w := &world{t: t, tmp: tmp, repo: filepath.Join(tmp, "repo"), stateDir: filepath.Join(tmp, "state")}
	for _, d := range []string{w.repo, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	agentSh, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := agent.Parse(fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, agentSh))
	if err != nil {
		t.Fatal(err)
	}
	if w.profile, err = cfg.Lookup("fake"); err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	for _, task := range tasks {
		fmt.Fprintf(&doc, "- [ ] %s\n", task)
	}
	parsed, err := plan.Parse("p.md", []byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	w.store = store.New(store.In(w.repo), "p")
	now := record.FormatTime(time.Now())
	err = w.store.Update(context.Background(), func(tx *store.Tx) error {
		q := store.NewQueue("p", now, nil)
		for _, task := range parsed {
			q.Put(store.Task{ID: task.ID, Description: task.Description, Status: store.Pending,
				Dependencies: append([]string{}, task.Dependencies...), CreatedAt: now})
		}
		tx.SetQueue(q)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			w.dumpLogs()
		}
		w.killSupervisors()
	})
	return w
}

// config is a run of agents agents with maxRetries attempts a task, logging to log.
func (w *world) config(agents, maxRetries int, log *logWatch) Config {
	return Config{Store: w.store, Agents: agents, Profile: w.profile, AgentName: "fake",
		Model: w.profile.Model("", func(string) string { return "" }), MaxRetries: maxRetries,
		Repo: w.repo, StateDir: w.stateDir, Self: []string{os.Args[0], supervise.SuperviseVerb, "--state-dir", w.stateDir},
		Env: os.Environ(), Timeout: time.Minute, KillGrace: time.Second, MinFreeMB: 1, Log: log}
}

// run runs cfg holding the runner lock, as ralph queue run does.
func (w *world) run(ctx context.Context, cfg Config) *Result {
	w.t.Helper()
	res, err := w.runE(ctx, cfg)
	if err != nil {
		w.t.Fatalf("Run: %v\n%s", err, cfg.Log)
	}
	return res
}

// runE is run for a goroutine of the test's: it reports its error.
func (w *world) runE(ctx context.Context, cfg Config) (*Result, error) {
	unlock, err := w.store.Dir.LockRunner(context.Background())
	if err != nil {
		return nil, err
	}
	defer unlock()
	return Run(ctx, cfg)
}

func (w *world) task(id string) store.Task {
	w.t.Helper()
	q, err := w.store.View()
	if err != nil {
		w.t.Fatal(err)
	}
	task, ok := q.Get(id)
	if !ok {
		w.t.Fatalf("no task %s", id)
	}
	return task
}

// attempts is the attempt number and status of every run record of task id's bead, by number.
func (w *world) attempts(id string) map[int]string {
	bead := plan.Bead("p", id)
	paths, _ := filepath.Glob(filepath.Join(w.stateDir, "attempts", bead, "run-*.json"))
	paths = append(paths, filepath.Join(w.stateDir, "runs", bead+".json"))
	out := map[int]string{}
	for _, p := range paths {
		if r, err := record.ReadRun(p); err == nil {
			out[r.Attempt] = r.Status
		}
	}
	return out
}

// valid checks every file of the queue's directory against its schema.
func (w *world) valid() {
	w.t.Helper()
	names, _ := filepath.Glob(filepath.Join(w.store.Dir.Root, "*.json"))
	for _, name := range names {
		base := filepath.Base(name)
		for _, kind := range []string{store.KindTaskQueue, store.KindRetryQueue, store.KindProgress, store.KindAgentState} {
			if strings.HasPrefix(base, kind+"-") {
				doc, _ := os.ReadFile(name)
				if err := store.Check(kind, doc); err != nil {
					w.t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
}

// noSupervisors checks that no supervisor of the state directory is alive.
func (w *world) noSupervisors() {
	w.t.Helper()
	layout := supervise.Layout{Dir: w.stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			w.t.Errorf("the supervisor of %s is alive after the run", name)
		}
	}
}

func (w *world) killSupervisors() {
	layout := supervise.Layout{Dir: w.stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
		}
	}
}

// dumpLogs prints every attempt's output, for a failed test.
func (w *world) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(w.stateDir, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		w.t.Logf("%s:\n%s", l, b)
	}
}

// TestRunAgents: N agents work at once, never more: the first N tasks each wait until N agents
// are at work at once, and every task counts the agents at work as it starts.
func TestRunAgents(t *testing.T) {
	const n = 3
	tmp := t.TempDir()
	gate := filepath.Join(tmp, "at-work")
	var tasks []string
	for i := 1; i <= 2*n; i++ {
		word := "count"
		if i <= n {
			word = "gate"
		}
		tasks = append(tasks, fmt.Sprintf("t%d: task %d %s:%d:%s", i, i, word, n, gate))
	}
	w := newWorld(t, tasks...)
	log := newLogWatch()
	res := w.run(context.Background(), w.config(n, 1, log))
	if res.Counts[store.Done] != 2*n || res.Interrupted || res.BudgetReached {
		t.Errorf("Run = %+v, want %d tasks done\n%s", res, 2*n, log)
	}
	if _, err := os.Stat(gate + ".over"); err == nil {
		t.Errorf("more than %d agents were at work at once", n)
	}
	p, err := w.store.ViewProgress()
	if err != nil {
		t.Fatal(err)
	}
	worked := 0
	for _, a := range p.Agents {
		if a.Status != store.AgentCompleted {
			t.Errorf("%s ended %s, want completed", a.ID, a.Status)
		}
		worked += a.Tasks
	}
	if len(p.Agents) != n || worked != 2*n || p.AgentsTotal != n || p.AgentsCompleted != n {
		t.Errorf("progress: %d agents (total %d, completed %d) ran %d tasks; want %d agents, %d tasks", len(p.Agents), p.AgentsTotal, p.AgentsCompleted, worked, n, 2*n)
	}
	for i := 1; i <= n; i++ {
		if a, err := w.store.ReadAgentState(AgentID(i)); err != nil || a != nil {
			t.Errorf("agent-%d's state file is left (%v, %v): a completed agent's goes", i, a, err)
		}
	}
	w.valid()
	w.noSupervisors()
}

// TestRunRetries: a failed attempt is retried until the task succeeds or runs out of
// attempts; then it is failed, what depends on it blocked, and the rest still runs.
func TestRunRetries(t *testing.T) {
	w := newWorld(t,
		"flaky: fails once flaky:2",
		"doomed: always fail",
		"child: needs doomed (after doomed)",
		"grandchild: needs child (after child)",
		"free: independent")
	log := newLogWatch()
	res := w.run(context.Background(), w.config(2, 2, log))
	want := map[string]int{store.Done: 2, store.Failed: 1, store.Blocked: 2, store.Pending: 0, store.Claimed: 0}
	for status, n := range want {
		if res.Counts[status] != n {
			t.Errorf("%s: %d tasks, want %d (counts %v)\n%s", status, res.Counts[status], n, res.Counts, log)
		}
	}
	tests := []struct {
		id       string
		status   string
		retries  int
		attempts map[int]string
	}{
		{"flaky", store.Done, 1, map[int]string{1: record.StatusFailed, 2: record.StatusDone}},
		{"doomed", store.Failed, 1, map[int]string{1: record.StatusFailed, 2: record.StatusFailed}},
		{"child", store.Blocked, 0, map[int]string{}},
		{"grandchild", store.Blocked, 0, map[int]string{}},
		{"free", store.Done, 0, map[int]string{1: record.StatusDone}},
	}
	for _, tt := range tests {
		task := w.task(tt.id)
		if task.Status != tt.status || task.Retries != tt.retries {
			t.Errorf("%s: %s with %d retries, want %s with %d", tt.id, task.Status, task.Retries, tt.status, tt.retries)
		}
		if got := w.attempts(tt.id); fmt.Sprint(got) != fmt.Sprint(tt.attempts) {
			t.Errorf("%s's attempts: %v, want %v", tt.id, got, tt.attempts)
		}
	}
	if doomed := w.task("doomed"); doomed.Error != "agent-exit-3" {
		t.Errorf("doomed's error = %q, want agent-exit-3", doomed.Error)
	}
	rq, err := w.store.ViewRetry()
	if err != nil {
		t.Fatal(err)
	}
	if len(rq.Retries) != 0 {
		t.Errorf("retry queue after the run: %+v, want none (one done, one out of retries)", rq.Retries)
	}
	w.valid()
	w.noSupervisors()
}

// TestRunBudget: once the plan's cost reaches the budget no agent claims a task; with a hard
// budget the agents at work are stopped too, and their tasks are pending again, no attempt
// counted against them.
func TestRunBudget(t *testing.T) {
	t.Run("soft", func(t *testing.T) {
		w := newWorld(t, "t1: one cost:0.6", "t2: two cost:0.6", "t3: three cost:0.6")
		log := newLogWatch()
		cfg := w.config(1, 3, log)
		budget := 1.0
		cfg.Budget = &budget
		res := w.run(context.Background(), cfg)
		if !res.BudgetReached || res.CostUSD != 1.2 || res.Counts[store.Done] != 2 || res.Counts[store.Pending] != 1 {
			t.Errorf("Run = %+v, want the budget reached at $1.20 with t3 pending\n%s", res, log)
		}
		if t3 := w.task("t3"); t3.Status != store.Pending || len(w.attempts("t3")) != 0 {
			t.Errorf("t3: %s, attempts %v; want pending, never started", t3.Status, w.attempts("t3"))
		}
		p, _ := w.store.ViewProgress()
		if p.TotalCostUSD != 1.2 || p.BudgetLimitUSD == nil || *p.BudgetLimitUSD != 1 || p.Agents[0].Status != store.AgentBudget {
			t.Errorf("progress: $%v of %v, agent %+v", p.TotalCostUSD, p.BudgetLimitUSD, p.Agents)
		}
		w.valid()
		w.noSupervisors()
	})
	t.Run("hard", func(t *testing.T) {
		tmp := t.TempDir()
		gate := filepath.Join(tmp, "hanging")
		w := newWorld(t, "t1: spends it until:"+gate+" cost:2", "t2: hangs touch:"+gate+" hang")
		log := newLogWatch()
		cfg := w.config(2, 3, log)
		budget := 1.0
		cfg.Budget, cfg.HardBudget = &budget, true
		res := w.run(context.Background(), cfg)
		if !res.BudgetReached || res.CostUSD != 2 {
			t.Errorf("Run = %+v, want the budget reached at $2\n%s", res, log)
		}
		if t1 := w.task("t1"); t1.Status != store.Done {
			t.Errorf("t1: %s, want done", t1.Status)
		}
		t2 := w.task("t2")
		if t2.Status != store.Pending || t2.Retries != 0 || !strings.Contains(t2.Error, "budget") {
			t.Errorf("t2: %s with %d retries (%q), want pending with 0, stopped by the budget", t2.Status, t2.Retries, t2.Error)
		}
		if got := w.attempts("t2"); len(got) != 1 || got[1] == record.StatusRunning {
			t.Errorf("t2's attempts: %v, want one, ended", got)
		}
		rq, _ := w.store.ViewRetry()
		if len(rq.Retries) != 0 {
			t.Errorf("retry queue: %+v, want none (a stop is no failure)", rq.Retries)
		}
		w.valid()
		w.noSupervisors()
	})
}

// TestHardBudgetStopsALaterAttempt: --hard-budget stops an attempt that starts after the budget
// stopped the run's attempts: its task was claimed before the budget was reached, and its
// attempt was still being prepared then. (Before, it was not at work at the stop, so it ran to
// its end.) t2's worktree merges t0's commit; the repository's post-merge hook, in t2's
// worktree only, lets t1 end (its cost reaches the budget) and waits until t1's agent ended
// stopped by the budget, which it does after the stop: t2's attempt starts after it. t2's agent
// waits for a file no one makes (30 s at most, then fails): stopped, it never ends on its own.
func TestHardBudgetStopsALaterAttempt(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	w := gitWorld(t, "t0: base commit:zero.txt", "t1: spends until:"+release+" cost:2 (after t0)", "t2: later until:"+release+".never (after t0)")
	hook := fmt.Sprintf(`#!/bin/sh
case "$PWD" in */p-t2) ;; *) exit 0 ;; esac
: > %q
i=0
until grep -q '"status": *"budget"' %q 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 600 ] && exit 0
	sleep 0.05
done
`, release, w.store.Dir.Progress("p"))
	if err := os.WriteFile(filepath.Join(w.repo, ".git", "hooks", "post-merge"), []byte(hook), 0o700); err != nil {
		t.Fatal(err)
	}
	log := newLogWatch()
	cfg := w.config(2, 3, log)
	budget := 1.0
	cfg.Budget, cfg.HardBudget, cfg.Worktree = &budget, true, true
	res := w.run(context.Background(), cfg)
	if !res.BudgetReached || res.CostUSD != 2 {
		t.Errorf("Run = %+v, want the budget reached at $2\n%s", res, log)
	}
	t2 := w.task("t2")
	if t2.Status != store.Pending || t2.Retries != 0 || !strings.Contains(t2.Error, "budget") {
		t.Errorf("t2: %s with %d retries (%q), want pending with 0, stopped by the budget\n%s", t2.Status, t2.Retries, t2.Error, log)
	}
	w.valid()
	w.noSupervisors()
}

// TestRunInterruptedStopsItsAgents: a run interrupted while its agent works stops the agent (its
// supervisor records the end) and puts its task back to pending, no retry counted, as swarm run
// does (taskgraph's meaning of interrupted; the queue left the agent at work for the next run to
// adopt). Nothing is lost: the next run's attempt works in the worktree the first left, and
// finds what it wrote there.
func TestRunInterruptedStopsItsAgents(t *testing.T) {
	tmp := t.TempDir()
	started := filepath.Join(tmp, "started")
	// Attempt 1 writes left.1 into its worktree and works until stopped; attempt 2 needs left.1.
	w := gitWorld(t, "t1: mark:left mark:"+started+" hangbefore:2 check:left.1 cost:0.25", "t2: after it (after t1)")
	ctx, cancel := context.WithCancel(context.Background())
	log1 := newLogWatch()
	cfg := w.config(1, 1, log1)
	cfg.Worktree = true
	done := make(chan ran, 1)
	go func() {
		res, err := w.runE(ctx, cfg)
		done <- ran{res, err}
	}()
	waitUntil(t, "the agent started", func() bool { _, err := os.Stat(started + ".1"); return err == nil })
	cancel()
	e := <-done
	if e.err != nil || !e.res.Interrupted {
		t.Fatalf("Run = %+v, %v; want interrupted\n%s", e.res, e.err, log1)
	}
	log1.waitFor(t, `^agent-1: t1 \(attempt 1\): interrupted: its agent was stopped; pending again$`)
	if t1 := w.task("t1"); t1.Status != store.Pending || t1.Retries != 0 || t1.ClaimedBy != nil {
		t.Fatalf("t1 after the interrupt: %+v, want pending, no retry counted", t1)
	}
	w.noSupervisors()

	cfg.Log = newLogWatch()
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 || res.CostUSD != 0.25 {
		t.Errorf("the second run = %+v, want both tasks done, $0.25\n%s", res, cfg.Log)
	}
	if got := w.attempts("t1"); got[2] != record.StatusDone {
		t.Errorf("t1's attempts: %v, want attempt 2 done (in the worktree attempt 1 left)", got)
	}
	rq, _ := w.store.ViewRetry()
	if len(rq.Retries) != 0 {
		t.Errorf("retry queue: %+v, want none (an interrupt is no failure)", rq.Retries)
	}
	w.valid()
	w.noSupervisors()
}

// TestRunNamesCurrentTask: while an agent works, the progress file names its task
// (agents[].task_id; it named none, issue 19); once the agent is done with it, none.
func TestRunNamesCurrentTask(t *testing.T) {
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	w := newWorld(t, fmt.Sprintf("t1: work touch:%s until:%s", started, release))
	log := newLogWatch()
	done := make(chan error, 1)
	go func() {
		_, err := w.runE(context.Background(), w.config(1, 1, log))
		done <- err
	}()
	waitUntil(t, "t1 at work", func() bool { _, err := os.Stat(started); return err == nil })
	p, err := w.store.ViewProgress()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Agents) != 1 || p.Agents[0].TaskID == nil || *p.Agents[0].TaskID != "t1" {
		t.Errorf("progress while t1 runs: %+v, want agent-1 on t1", p.Agents)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	if p, err = w.store.ViewProgress(); err != nil || len(p.Agents) != 1 || p.Agents[0].TaskID != nil {
		t.Errorf("progress after the run: %+v (%v), want agent-1 on no task", p.Agents, err)
	}
	w.valid()
}

// TestRunNoFalseStuck: agents that start together on a chain (t2 after t1) never say "tasks
// pending behind claims no agent holds" and then run the task anyway: the claim of t1 is held
// from its transaction on (another agent counted it unheld in between, issue 19).
func TestRunNoFalseStuck(t *testing.T) {
	for trial := 0; trial < 8; trial++ {
		w := newWorld(t, "t1: first", "t2: second (after t1)", "t3: third (after t2)")
		log := newLogWatch()
		res := w.run(context.Background(), w.config(4, 1, log))
		if strings.Contains(log.String(), "no agent holds") || res.Counts[store.Done] != 3 {
			t.Fatalf("trial %d: Run = %+v\n%s", trial, res, log)
		}
		w.valid()
	}
}
