package swarmrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/lockedbuf"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary the attempts' supervisor too: Local starts it as
// "BINARY __supervise --state-dir DIR --handoff H BEAD", as swarm's `run __supervise` verb.
func TestMain(m *testing.M) {
	verifyWrites = true
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(superviseMain(os.Args[2:]))
	}
	if len(os.Args) > 3 && os.Args[1] == killStarterVerb {
		os.Exit(killStarterMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == killedRunVerb {
		os.Exit(killedRunMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == killedHostsRunVerb {
		os.Exit(killedHostsRunMain(os.Args[2:]))
	}
	os.Exit(sweep.Guard(m).Run())
}

// superviseMain is swarm's `run __supervise` verb on args (after the verb).
func superviseMain(args []string) int {
	return testenv.Supervisor(args, func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
		return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
	})
}

// world is a repository with a main branch, a state directory and the stand-in agent.
type world struct {
	t        testing.TB
	repo     string
	stateDir string
	agents   *agent.Config
	log      *syncBuf
}

// syncBuf is a log written by several goroutines and read while they write.
type syncBuf = lockedbuf.Buffer

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newWorld(t testing.TB) *world {
	t.Helper()
	tmp := t.TempDir()
	w := &world{t: t, repo: filepath.Join(tmp, "repo"), stateDir: filepath.Join(tmp, "state"), log: &syncBuf{}}
	os.MkdirAll(w.repo, 0o700)
	git(t, w.repo, "init", "-q", "-b", "main")
	git(t, w.repo, "config", "user.email", "test@example.com")
	git(t, w.repo, "config", "user.name", "test")
	os.WriteFile(filepath.Join(w.repo, "README"), []byte("base\n"), 0o600)
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "commit", "-q", "-m", "base")
	sh, _ := filepath.Abs("testdata/agent.sh")
	var err error
	w.agents, err = agent.Parse(fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}, "true": {"command": "/bin/true", "terminal": false}}`, sh))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// local is this machine as an executor of n slots. Its slots' supervisors outlive a run, to
// serve the next one: the test lets them go at its end (Close), as swarm run's binary does,
// instead of leaving them to the sweep.
func (w *world) local(n int) *executor.Local {
	self, _ := os.Executable()
	l := &executor.Local{N: n, StateDir: w.stateDir, Self: []string{self, supervise.SuperviseVerb, "--state-dir", w.stateDir},
		Agents: w.agents, KillGrace: 2 * time.Second, HostName: "testhost", Template: Template}
	w.t.Cleanup(l.Close)
	return l
}

func (w *world) config(t testing.TB, doc string, n int) Config {
	t.Helper()
	path := filepath.Join(w.repo, "..", "work.yaml")
	os.WriteFile(path, []byte(doc), 0o600)
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Manifest: m, ManifestPath: path, Repo: w.repo, RepoName: ".", Executors: []Executor{w.local(n)}, Log: w.log}
}

// checkValid checks a state file against the embedded execution schema.
func checkValid(t *testing.T, path string) *State {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sch, _ := schema.Embedded("execution")
	if err := sch.Check(b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var st State
	json.Unmarshal(b, &st)
	return &st
}

// manifest30 is 30 tasks in layers, each writing a file of its own; t07 fails once then
// succeeds (retries: 1), t11 always fails (its dependents t20 and t21 blocked, and t29 after
// t21), t03 commits itself.
func manifest30() string {
	var b strings.Builder
	b.WriteString("name: Thirty tasks\nbase_branch: main\ndefaults: {agent: fake, retries: 1, timeout: 60}\ntasks:\n")
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("t%02d", i)
		words := fmt.Sprintf("write:%s.txt", id)
		switch i {
		case 3:
			words = "commit:t03.txt"
		case 7:
			words += " flaky:2"
		case 11:
			words += " fail"
		}
		var deps []string
		if i >= 10 {
			deps = append(deps, fmt.Sprintf("t%02d", i-10))
		}
		if i >= 20 && i%5 == 0 {
			deps = append(deps, fmt.Sprintf("t%02d", i-9))
		}
		if i == 29 {
			deps = append(deps, "t21")
		}
		prio := []string{"high", "medium", "low"}[i%3]
		fmt.Fprintf(&b, "  - id: %s\n    prompt: %q\n    branch: swarm/%s\n    priority: %s\n    depends_on: [%s]\n", id, words, id, prio, strings.Join(deps, ", "))
	}
	return b.String()
}

func TestRunThirtyTasks(t *testing.T) {
	w := newWorld(t)
	cfg := w.config(t, manifest30(), 4)
	cfg.Joblog = filepath.Join(t.TempDir(), "joblog")
	forge, _ := filepath.Abs("testdata/forge.sh")
	cfg.Forge = &Forge{Argv: []string{forge}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	p := Paths{Root: w.repo}
	st := checkValid(t, p.State())
	hist := checkValid(t, p.History(st.ExecutionID))
	if hist.ExecutionID != st.ExecutionID || res.State.ExecutionID != st.ExecutionID {
		t.Errorf("history %s, state %s", hist.ExecutionID, st.ExecutionID)
	}
	if !strings.HasPrefix(st.ExecutionID, time.Now().UTC().Format("2006-01-02")+"-thirty-tasks-") {
		t.Errorf("execution id %q", st.ExecutionID)
	}
	want := map[string]string{"t07": Completed, "t11": Failed, "t20": Blocked, "t21": Blocked, "t29": Blocked, "t03": Completed}
	for id, s := range want {
		if got := st.Tasks[id].Status; got != s {
			t.Errorf("task %s is %s, want %s (error %+v)", id, got, s, st.Tasks[id].Error)
		}
	}
	if tr := st.Tasks["t07"].Trace; tr.RetryCount != 1 || tr.Attempt != 2 {
		t.Errorf("t07's trace = %+v, want 1 retry, attempt 2", tr)
	}
	if tr := st.Tasks["t11"].Trace; tr.RetryCount != 1 || *tr.ExitCode != 3 || st.Tasks["t11"].Error.Type != ErrExecution {
		t.Errorf("t11's trace = %+v, error %+v", tr, st.Tasks["t11"].Error)
	}
	s := st.Summary
	if s == nil || s.TotalTasks != 30 || s.Completed != 26 || s.Failed != 1 || s.Blocked != 3 ||
		s.Completed+s.Failed+s.Blocked+s.Skipped+s.Pending != s.TotalTasks {
		t.Fatalf("summary = %+v", s)
	}
	if st.Status != ExecFailed || s.ParallelSpeedup <= 0 || len(s.PRsCreated) != 26 {
		t.Errorf("status %s, speedup %v, %d PRs", st.Status, s.ParallelSpeedup, len(s.PRsCreated))
	}
	// Every completed task's commit is on its branch, with its trailers; its PR recorded.
	for id, task := range st.Tasks {
		if task.Status != Completed {
			continue
		}
		tr := task.Trace
		// A task of a fraction of a second still took time (the records' whole seconds made
		// most of them 0 s, and the run's speedup 0).
		if tr.DurationSeconds == nil || *tr.DurationSeconds <= 0 {
			t.Errorf("%s: duration %s, want > 0", id, jsonOf(tr.DurationSeconds))
		}
		if tr.CommitSHA == nil || git(t, w.repo, "rev-parse", "refs/heads/"+task.Branch) != *tr.CommitSHA {
			t.Errorf("%s: commit %v is not the head of %s", id, tr.CommitSHA, task.Branch)
			continue
		}
		msg := git(t, w.repo, "log", "-1", "--format=%B", *tr.CommitSHA)
		for _, tl := range trailers(st.ExecutionID, id, tr.AgentID) {
			if !strings.Contains(msg, tl) {
				t.Errorf("%s: commit message %q lacks %q", id, msg, tl)
			}
		}
		if tr.PRNumber == nil || tr.PRURL == nil || !strings.HasSuffix(*tr.PRURL, fmt.Sprintf("/pull/%d", *tr.PRNumber)) {
			t.Errorf("%s: PR %v %v", id, tr.PRNumber, tr.PRURL)
		}
		// Its dependencies' work is in its branch.
		for _, d := range task.DependsOn {
			if _, err := gitCmd(context.Background(), w.repo, "merge-base", "--is-ancestor", "refs/heads/"+st.Tasks[d].Branch, *tr.CommitSHA); err != nil {
				t.Errorf("%s does not contain its dependency %s", id, d)
			}
		}
	}
	// Each attempt is a dispatched attempt with its records.
	run, err := record.ReadRun(record.Store{Dir: w.stateDir}.RunPath(st.ExecutionID + "-t07"))
	if err != nil || run.Attempt != 2 || run.Status != record.StatusDone || run.TemplateName == nil || *run.TemplateName != Template {
		t.Errorf("t07's run record = %+v, %v", run, err)
	}
	// The merge order merges cleanly, in that order, onto main.
	if len(s.SuggestedMergeOrder) != 26 || s.MergeConflict != nil {
		t.Fatalf("merge order %v, conflict %+v", s.SuggestedMergeOrder, s.MergeConflict)
	}
	git(t, w.repo, "checkout", "-q", "-b", "merged", "main")
	for _, id := range s.SuggestedMergeOrder {
		if _, err := gitCmd(context.Background(), w.repo, "merge", "--no-edit", "-q", "refs/heads/"+st.Tasks[id].Branch); err != nil {
			t.Fatalf("merging %s in the suggested order: %v", id, err)
		}
	}
	// The joblog has parallel's header and one line per attempt (26 + t07's and t11's retries).
	jl, _ := os.ReadFile(cfg.Joblog)
	lines := strings.Split(strings.TrimSpace(string(jl)), "\n")
	if lines[0] != strings.TrimSpace(joblogHeader) || len(lines) != 1+26+1+2 {
		t.Errorf("joblog has %d lines:\n%s", len(lines), jl)
	}
	if rep, err := os.ReadFile(p.Report(st.ExecutionID)); err != nil || !strings.Contains(string(rep), "| t11 | failed |") {
		t.Errorf("report: %v\n%s", err, rep)
	}
}

func TestMergeConflictBlocksAndOrder(t *testing.T) {
	w := newWorld(t)
	doc := `name: conflicts
defaults: {agent: fake}
tasks:
  - {id: a, prompt: "write:same.txt", branch: a}
  - {id: b, prompt: "write:same.txt", branch: b}
  - {id: c, prompt: "write:c.txt", branch: c, depends_on: [a, b]}
`
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatal(err)
	}
	st := res.State
	c := st.Tasks["c"]
	if c.Status != Blocked || c.Error == nil || c.Error.Type != ErrConflict || len(c.Error.Files) != 1 || c.Error.Files[0] != "same.txt" {
		t.Errorf("c = %s, error %+v", c.Status, c.Error)
	}
	s := st.Summary
	if len(s.SuggestedMergeOrder) != 1 || s.MergeConflict == nil || s.MergeConflict.Files[0] != "same.txt" {
		t.Errorf("merge order %v, conflict %+v", s.SuggestedMergeOrder, s.MergeConflict)
	}
}

func TestInterruptAndResume(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "started")
	doc := fmt.Sprintf(`name: interrupted
defaults: {agent: fake}
tasks:
  - {id: a, prompt: "write:a.txt", branch: a}
  - {id: slow, prompt: "touch:%s hang", branch: slow}
  - {id: after, prompt: "write:b.txt", branch: after, depends_on: [slow]}
`, gate)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := w.config(t, doc, 2)
	done := make(chan struct{})
	var res *Result
	var err error
	go func() {
		res, err = Run(ctx, cfg)
		close(done)
	}()
	waitFile(t, gate)
	// a is completed (recorded) before the interrupt, so that --resume must keep it.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := ReadState(Paths{Root: w.repo}.State()); err == nil && st.Tasks["a"].Status == Completed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a not completed after 60 s")
		}
	}
	cancel()
	<-done
	if err != nil || !res.Interrupted {
		t.Fatalf("Run interrupted = %+v, %v", res, err)
	}
	st := checkValid(t, Paths{Root: w.repo}.State())
	if st.Status != ExecPaused || st.Tasks["slow"].Status != Pending || st.Tasks["slow"].Error.Type != ErrStopped {
		t.Fatalf("after the interrupt: %s, slow %s %+v", st.Status, st.Tasks["slow"].Status, st.Tasks["slow"].Error)
	}
	// A fresh run refuses; --resume continues (the slow task no longer hangs).
	if _, err := Run(context.Background(), w.config(t, doc, 2)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a fresh run over a paused one = %v", err)
	}
	doc = strings.Replace(doc, " hang", "", 1)
	cfg = w.config(t, doc, 2)
	cfg.Resume = true
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Status != ExecCompleted || res.State.Summary.Completed != 3 {
		t.Errorf("resumed: %s, %+v", res.State.Status, res.State.Summary)
	}
	if res.State.Tasks["a"].Trace.Attempt != 1 {
		t.Errorf("a ran again on resume: attempt %d", res.State.Tasks["a"].Trace.Attempt)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s not made after 60 s", path)
}

func TestParseHalt(t *testing.T) {
	tests := map[string]Halt{"": {}, "never": {}, "soon,fail=2": {Fail: 2}, "now,fail=10%": {Now: true, Fail: 10, Percent: true}}
	for in, want := range tests {
		if got, err := ParseHalt(in); err != nil || got != want {
			t.Errorf("ParseHalt(%q) = %+v, %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"later,fail=1", "soon,fail=0", "soon,fail=x", "now,fail=101%", "soon,success=1"} {
		if _, err := ParseHalt(in); err == nil {
			t.Errorf("ParseHalt(%q) = nil error", in)
		}
	}
}

func TestHaltSoon(t *testing.T) {
	w := newWorld(t)
	doc := `name: halting
defaults: {agent: fake}
tasks:
  - {id: a, prompt: "fail", branch: a}
  - {id: b, prompt: "write:b.txt", branch: b, depends_on: [a]}
  - {id: c, prompt: "write:c.txt", branch: c, priority: low}
`
	cfg := w.config(t, doc, 1)
	cfg.Halt = Halt{Fail: 1}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Halted || res.State.Tasks["c"].Status != Queued && res.State.Tasks["c"].Status != Pending {
		t.Errorf("halted %v, c %s", res.Halted, res.State.Tasks["c"].Status)
	}
	if res.State.Status != ExecFailed || res.State.Summary.Pending != 1 {
		t.Errorf("status %s, summary %+v", res.State.Status, res.State.Summary)
	}
}

func TestExistingBranchRefused(t *testing.T) {
	w := newWorld(t)
	git(t, w.repo, "branch", "a")
	_, err := Run(context.Background(), w.config(t, "name: x\ndefaults: {agent: fake}\ntasks:\n  - {id: a, prompt: p, branch: a}\n", 1))
	var ue *UsageError
	if err == nil || !strings.Contains(err.Error(), `work.yaml:4: branch "a" of task "a" exists already`) || !asUsage(err, &ue) {
		t.Errorf("Run = %v", err)
	}
	if _, serr := os.Stat(Paths{Root: w.repo}.State()); serr == nil {
		t.Errorf("a refused run left a state file")
	}
}

func asUsage(err error, target **UsageError) bool {
	u, ok := err.(*UsageError)
	*target = u
	return ok
}

// BenchmarkRunOverhead runs b.N independent tasks of an agent that does nothing (/bin/true)
// on one slot (each task's latency) and on four (the throughput) and reports the run's own
// time per task beyond the agent's (a worktree, an attempt launched and recorded, a commit,
// the state written).
func BenchmarkRunOverhead(b *testing.B) {
	for _, slots := range []int{1, 4} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) { benchRun(b, slots) })
	}
}

func benchRun(b *testing.B, slots int) {
	w := newWorld(b)
	var doc strings.Builder
	doc.WriteString("name: bench\ndefaults: {agent: true}\ntasks:\n")
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(&doc, "  - {id: t%d, prompt: nothing, branch: b%d}\n", i, i)
	}
	res, wall := w.timedRun(b, w.config(b, doc.String(), slots))
	agentStart := time.Now()
	for i := 0; i < b.N; i++ {
		exec.Command("/bin/true").Run()
	}
	agentMS := float64(time.Since(agentStart).Microseconds()) / 1000 / float64(b.N)
	perTask := float64(wall.Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(perTask, "ms/task")
	b.ReportMetric(perTask-agentMS/float64(slots), "overhead-ms/task")
	b.ReportMetric(res.State.Summary.ParallelSpeedup, "speedup")
}

// timedRun runs cfg as the benchmark's timed work, which must complete b.N tasks, and
// returns its result and wall time. It also reports the run's own CPU time per task: this
// process's and that of the processes it started and waited for here (git, ssh clients,
// supervisors); a host's side (its sshd, dispatch and agents) is not in it, since on real
// hosts it runs on their processors, not the run's.
func (w *world) timedRun(b *testing.B, cfg Config) (*Result, time.Duration) {
	cpu0 := runCPU()
	b.ResetTimer()
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	b.StopTimer()
	if res.State.Summary.Completed != b.N {
		b.Fatalf("%d of %d completed:%s", res.State.Summary.Completed, b.N, notCompleted(res.State, w.log.String()))
	}
	b.ReportMetric(float64((runCPU()-cpu0).Microseconds())/1000/float64(b.N), "run-cpu-ms/task")
	return res, wall
}

// runCPU is the user and system time of this process and of its children waited for.
func runCPU() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	var d time.Duration
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, children.Utime, children.Stime} {
		d += time.Duration(tv.Nano())
	}
	return d
}

// jsonOf is v as JSON, for messages about optional fields.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
