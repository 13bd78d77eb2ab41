package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestQueueScripts runs testdata/queue-*.txtar: ralph queue against real processes, a real git
// repository and the scripted agent testdata/queue-agent.sh.
func TestQueueScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/queue-*.txtar")
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: queueEnv,
		Cmds:  queueCmds,
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// queueEnv gives every script a git repository at $WORK/repo (the queue's .claude/ralph is in
// it), a state directory $WORK/state and the scripted agent as agent "fake" (CONFIG_FILE). (Every
// queue file is checked against its schema before each write, always: a write it refuses fails
// the script.) Any supervisor still registered at the end is killed.
func queueEnv(env *testscript.Env) error {
	testenv.Mark(env)
	agent, err := filepath.Abs("testdata/queue-agent.sh")
	if err != nil {
		return err
	}
	repo := filepath.Join(env.WorkDir, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		return err
	}
	config := filepath.Join(env.WorkDir, "agents.json")
	cfg := map[string]any{
		"fake": map[string]any{"command": agent, "terminal": false, "default_model": "m1",
			"usage_limit": []string{"(?i)usage limit reached"}},
		"aider": map[string]any{"command": agent, "terminal": false, "cost_pattern": `Cost: \$([0-9.]+) session`},
		// A pattern that takes any word for a figure: NaN and Inf parse as numbers.
		"anycost": map[string]any{"command": agent, "terminal": false, "cost_pattern": `Cost: \$(\S+) session`},
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return err
	}
	stateDir := filepath.Join(env.WorkDir, "state")
	env.Setenv("CONFIG_FILE", config)
	env.Setenv("STATE_DIR", stateDir)
	env.Setenv("HOME", env.WorkDir)
	env.Setenv("TMUX_TMPDIR", env.WorkDir)
	env.Cd = repo
	env.Defer(func() { killSupervisors(stateDir) })
	// A failed script shows its agents' logs and the queue's files, before anything is stopped.
	env.Defer(func() { postmortem.OnFailure(env.T().(postmortem.TB), env.WorkDir) })
	return nil
}

// killSupervisors kills every supervisor still registered in stateDir (a failed script's).
func killSupervisors(stateDir string) {
	layout := supervise.Layout{Dir: stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
		}
	}
}

var queueCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// exitcode N CMD ARGS...: CMD must exit with N.
	"exitcode": testenv.ExitCode,
	// smalldisk DIR MB: mount a tmpfs of MB megabytes on DIR (unmounted at the end); needs
	// root (a script skips without it: [!root] skip).
	"smalldisk": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: smalldisk DIR MB")
		}
		dir := ts.MkAbs(args[0])
		ts.Check(os.MkdirAll(dir, 0o700))
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[1]+"m", "tmpfs", dir).CombinedOutput(); err != nil {
			ts.Fatalf("cannot mount a tmpfs: %v: %s", err, out)
		}
		ts.Defer(func() {
			if exec.Command("umount", dir).Run() != nil {
				exec.Command("umount", "-l", dir).Run()
			}
		})
	},
	// waitfile FILE REGEXP [SECONDS]: wait until FILE's content matches (30 s by default).
	"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitfile FILE REGEXP [SECONDS]")
		}
		re := regexp.MustCompile(args[1])
		limit := 30 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		var last []byte
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if last, _ = os.ReadFile(ts.MkAbs(args[0])); re.Match(last) {
				return
			}
		}
		ts.Fatalf("%s does not match %q after %s:\n%s", args[0], args[1], limit, last)
	},
	// nosupervisors: no supervisor registered in $STATE_DIR is alive, and none is registered.
	"nosupervisors": func(ts *testscript.TestScript, neg bool, args []string) {
		layout := supervise.Layout{Dir: ts.Getenv("STATE_DIR")}
		if names := layout.Registered(func(string) bool { return true }); len(names) > 0 {
			ts.Fatalf("supervisors still registered: %v", names)
		}
	},
	// validqueue: every file of .claude/ralph/ validates against its kind's embedded schema.
	"validqueue": func(ts *testscript.TestScript, neg bool, args []string) {
		dir := store.In(ts.MkAbs("."))
		names, _ := filepath.Glob(filepath.Join(dir.Root, "*.json"))
		if len(names) == 0 {
			ts.Fatalf("no queue files in %s", dir.Root)
		}
		for _, name := range names {
			if err := validQueueFile(name); err != nil {
				ts.Fatalf("%v", err)
			}
		}
	},
}

// validQueueFile validates one file of .claude/ralph by the kind its name says.
func validQueueFile(name string) error {
	base := filepath.Base(name)
	kind := ""
	for _, k := range []string{store.KindTaskQueue, store.KindRetryQueue, store.KindProgress, store.KindAgentState} {
		if strings.HasPrefix(base, k+"-") {
			kind = k
		}
	}
	if kind == "" {
		return fmt.Errorf("%s: not a queue file", name)
	}
	doc, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := store.Check(kind, doc); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// TestQueueCrash is the queue's test under fire: a plan of 200 tasks with dependencies (60
// under -race), 8 agents, agents that fail, fail until their third attempt, or hang past the
// timeout, while agents are SIGKILLed at random and the runner itself is SIGKILLed twice and
// started again. At the end every task is done exactly once (one run record says done) or failed
// after its retries; no task was ever held by two agents (each bead's attempts follow one
// another: one starts when the one before it finished); the tasks blocked are exactly those
// depending on a failed one; every queue file validates; no supervisor is left.
func TestQueueCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	t.Parallel() // its own repository, state directory and environment (cmd.Env)
	n := 200
	if queueRace {
		n = 60
	}
	const agents, maxRetries = 8, 3
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	tmp := t.TempDir()
	repo, stateDir, pids := filepath.Join(tmp, "repo"), filepath.Join(tmp, "state"), filepath.Join(tmp, "pids")
	for _, d := range []string{repo, pids} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer killSupervisors(stateDir)
	agentSh, _ := filepath.Abs("testdata/queue-agent.sh")
	config := filepath.Join(tmp, "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, agentSh), 0o600)

	// Tasks that always fail (or hang past the timeout) are few, and few depend on them, so
	// that most of the plan runs; every task depends on up to two of the 20 before it.
	var planDoc strings.Builder
	deps := make([][]string, n)
	doomedKind := make([]bool, n)
	for i := 0; i < n; i++ {
		words := fmt.Sprintf("sleep:0.%02d", 2+rng.IntN(15))
		switch r := rng.IntN(100); {
		case r < 3:
			words += " fail"
			doomedKind[i] = true
		case r < 4:
			words = "hang"
			doomedKind[i] = true
		case r < 14:
			words += " flaky:2"
		case r < 18:
			words += " flaky:3"
		}
		var after []string
		for k := 0; k < 2 && i > 0; k++ {
			j := max(0, i-1-rng.IntN(20))
			d := fmt.Sprintf("t%d", j)
			if slices.Contains(after, d) || rng.IntN(2) == 0 || (doomedKind[j] && rng.IntN(4) > 0) {
				continue
			}
			after = append(after, d)
		}
		deps[i] = after
		dep := ""
		if len(after) > 0 {
			dep = " (after " + strings.Join(after, ", ") + ")"
		}
		fmt.Fprintf(&planDoc, "- [ ] t%d: task %d %s%s\n", i, i, words, dep)
	}
	planFile := filepath.Join(tmp, "crash.md")
	os.WriteFile(planFile, []byte(planDoc.String()), 0o600)

	ralph, err := exec.LookPath("ralph")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONFIG_FILE="+config, "STATE_DIR="+stateDir,
		"QUEUE_PIDS="+pids, "DISPATCH_WATCH_TIMEOUT=1", "DISPATCH_KILL_GRACE=1")
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(ralph, append([]string{"queue"}, args...)...)
		cmd.Env, cmd.Dir = env, repo
		return cmd
	}
	if out, err := command("init", planFile).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}

	// The agent killer: a random agent at work, SIGKILLed every 50-250 ms.
	stopKiller := make(chan struct{})
	killed := 0
	krng := rand.New(rand.NewPCG(uint64(seed), 2)) // the killer's own: rand.Rand is not safe to share
	var killerDone sync.WaitGroup
	killerDone.Add(1)
	go func() {
		defer killerDone.Done()
		for {
			select {
			case <-stopKiller:
				return
			case <-time.After(time.Duration(50+krng.IntN(200)) * time.Millisecond):
			}
			files, _ := os.ReadDir(pids)
			krng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			for _, file := range files {
				f := filepath.Join(pids, file.Name())
				b, _ := os.ReadFile(f)
				os.Remove(f)
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					continue
				}
				// Only the stand-in agent itself, never a process that took its pid since.
				if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(cmdline), "queue-agent.sh") {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						killed++
						break
					}
				}
			}
		}
	}()

	deadline := time.Now().Add(150 * time.Second)
	var last []byte
	for round := 0; ; round++ {
		cmd := command("run", "crash", "--agents", strconv.Itoa(agents), "--agent", "fake", "--max-retries", strconv.Itoa(maxRetries))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
		if round < 2 {
			// The runner is SIGKILLed mid-run twice.
			select {
			case werr = <-done:
			case <-time.After(time.Duration(400+rng.IntN(1000)) * time.Millisecond):
				cmd.Process.Kill()
				werr = <-done
				t.Logf("round %d: runner killed", round)
			}
		} else {
			select {
			case werr = <-done:
			case <-time.After(time.Until(deadline)):
				cmd.Process.Kill()
				<-done
				t.Fatalf("the run did not end in time:\n%s", out.String())
			}
		}
		checkQueueFiles(t, store.In(repo))
		if strings.Contains(out.String(), "not writing") {
			// The store refused a write that did not satisfy its schema.
			t.Errorf("run %d wrote a file that does not satisfy its schema:\n%s", round, out.String())
		}
		last = []byte(out.String())
		if round >= 2 {
			if werr != nil && !strings.Contains(out.String(), "tasks failed") {
				t.Fatalf("run %d: %v\n%s", round, werr, out.String())
			}
			break
		}
	}
	close(stopKiller)
	killerDone.Wait()
	t.Logf("%d agents killed; the last run said: %s", killed, lastLine(last))

	q, err := store.New(store.In(repo), "crash").View()
	if err != nil {
		t.Fatal(err)
	}
	tasks := q.Tasks()
	status := map[string]string{}
	for _, task := range tasks {
		status[task.ID] = task.Status
	}
	// doomed: failed, or depending on a doomed task (deps point to earlier tasks).
	doomed := map[string]bool{}
	counts := map[string]int{}
	for i, task := range tasks {
		counts[task.Status]++
		dependsOnDoomed := false
		for _, d := range deps[i] {
			dependsOnDoomed = dependsOnDoomed || doomed[d]
		}
		doomed[task.ID] = task.Status == store.Failed || dependsOnDoomed
		switch task.Status {
		case store.Done:
			if dependsOnDoomed {
				t.Errorf("%s is done though a dependency failed", task.ID)
			}
		case store.Failed:
			// Its retries count the attempts after the first (seed 004: 0 on the first try).
			if task.Retries+1 != maxRetries {
				t.Errorf("%s failed after %d attempts, want %d", task.ID, task.Retries+1, maxRetries)
			}
		case store.Blocked:
			if !dependsOnDoomed {
				t.Errorf("%s is blocked, though no dependency failed", task.ID)
			}
		default:
			t.Errorf("%s ended %s", task.ID, task.Status)
		}
	}
	t.Logf("tasks: %v", counts)
	for _, task := range tasks {
		checkAttempts(t, stateDir, "crash-"+task.ID, task.Status)
	}
	layout := supervise.Layout{Dir: stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			t.Errorf("the supervisor of %s is still alive", name)
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// checkQueueFiles validates every file of the queue directory.
func checkQueueFiles(t *testing.T, dir store.Dir) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir.Root, "*.json"))
	for _, name := range names {
		if err := validQueueFile(name); err != nil {
			t.Error(err)
		}
	}
}

// checkAttempts reads every run record of bead (the current one and the archived ones): at most
// one says done (exactly one when the task is done), their attempt numbers differ, and each
// attempt started once the one before it had finished.
func checkAttempts(t *testing.T, stateDir, bead, status string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(stateDir, "attempts", bead, "run-*.json"))
	paths = append(paths, filepath.Join(stateDir, "runs", bead+".json"))
	type span struct {
		n             int
		start, finish string
		status        string
	}
	seen := map[int]span{}
	for _, p := range paths {
		run, err := record.ReadRun(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if run.FinishedAt == nil {
			if run.Status == record.StatusRunning {
				t.Errorf("%s: attempt %d never finished (%s)", bead, run.Attempt, run.Status)
				continue
			}
			// Closed with its end unknown (a supervisor killed before the agent's log had a
			// line: reconcile records no made-up end): it still ended before the next began,
			// which the next attempt's own records show; its start stands for its end here.
			seen[run.Attempt] = span{run.Attempt, run.StartedAt, run.StartedAt, run.Status}
			continue
		}
		seen[run.Attempt] = span{run.Attempt, run.StartedAt, *run.FinishedAt, run.Status}
	}
	var spans []span
	for _, s := range seen {
		spans = append(spans, s)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].n < spans[j].n })
	done := 0
	for i, s := range spans {
		if s.status == record.StatusDone {
			done++
		}
		if i > 0 && s.start < spans[i-1].finish {
			t.Errorf("%s: attempt %d started at %s, before attempt %d finished at %s: two agents held it", bead, s.n, s.start, spans[i-1].n, spans[i-1].finish)
		}
	}
	want := 0
	if status == store.Done {
		want = 1
	}
	if done != want {
		t.Errorf("%s (%s): %d attempts done, want %d: %+v", bead, status, done, want, spans)
	}
}

// BenchmarkQueueOverhead times ralph queue run on a plan of b.N independent tasks with one
// agent that does nothing (/bin/true), and reports the time per task, the agent's own time
// (/bin/true started b.N times) and the difference: the runner's overhead per task (claim,
// dispatch, supervisor, records, the task's end). Target: under 50 ms. RALPH_BIN times another
// build (scripts/bench/ralph-queue.sh passes bin/ralph); by default the test binary runs as ralph.
func BenchmarkQueueOverhead(b *testing.B) {
	ralph := os.Getenv("RALPH_BIN")
	if ralph == "" {
		var err error
		if ralph, err = exec.LookPath("ralph"); err != nil {
			b.Fatal(err)
		}
	}
	tmp := b.TempDir()
	repo, stateDir := filepath.Join(tmp, "repo"), filepath.Join(tmp, "state")
	os.MkdirAll(repo, 0o700)
	defer killSupervisors(stateDir)
	config := filepath.Join(tmp, "agents.json")
	os.WriteFile(config, []byte(`{"true": {"command": "/bin/true", "terminal": false}}`), 0o600)
	var plan strings.Builder
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(&plan, "- [ ] t%d: task %d\n", i, i)
	}
	planFile := filepath.Join(tmp, "bench.md")
	os.WriteFile(planFile, []byte(plan.String()), 0o600)
	env := append(os.Environ(), "CONFIG_FILE="+config, "STATE_DIR="+stateDir, "RALPH_QUEUE_TIMING=1")
	for _, args := range [][]string{{"init", planFile}, {"run", "bench", "--agents", "1", "--agent", "true"}} {
		cmd := exec.Command(ralph, append([]string{"queue"}, args...)...)
		cmd.Env, cmd.Dir = env, repo
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if out, err := cmd.Output(); err != nil {
			b.Fatalf("ralph queue %s: %v\n%s%s", args[0], err, out, stderr.String())
		}
		if args[0] == "run" {
			// The runner's own account: ralph: timing: N tasks; per task: queue Q ms,
			// dispatch launch L ms, the attempt until its end W ms.
			var tasks int
			var q, l, w float64
			line := stderr.String()[strings.Index(stderr.String(), "timing:"):]
			if _, err := fmt.Sscanf(line, "timing: %d tasks; per task: queue %f ms, dispatch launch %f ms, the attempt until its end %f ms", &tasks, &q, &l, &w); err != nil {
				b.Fatalf("no timing in %q: %v", stderr.String(), err)
			}
			b.ReportMetric(q, "queue-ms/task")
			b.ReportMetric(l, "launch-ms/task")
			b.ReportMetric(w, "attempt-ms/task")
			perTask := float64(time.Since(start).Microseconds()) / 1000 / float64(b.N)
			start = time.Now()
			for i := 0; i < b.N; i++ {
				exec.Command("/bin/true").Run()
			}
			agentMS := float64(time.Since(start).Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(perTask, "ms/task")
			b.ReportMetric(agentMS, "agent-ms/task")
			b.ReportMetric(perTask-agentMS, "overhead-ms/task")
		}
	}
}
