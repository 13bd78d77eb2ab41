package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/testenv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// The rails of issue 19 on swarm's loops, against real processes (the lab of control_test.go):
// budget, hard budget, calls per hour, the --on-event hook, --commit-each and abort --revert.

// callWindow is the "hour" of --max-calls-per-hour in these tests; hookTimeout the hook's bound.
const (
	callWindow  = 3 * time.Second
	hookTimeout = 3 * time.Second
)

// spawnRails starts the loop name whose agent follows plan, with rails, in dir ("" : the
// lab's directory), at most max iterations, the breaker off, and its monitor.
func (l *lab) spawnRails(name, dir string, max int, rails *rails.Rails, plan ...string) {
	l.t.Helper()
	l.spawnBreaker(name, dir, max, 0, rails, plan...)
}

// spawnBreaker is spawnRails with the no-progress breaker's N.
func (l *lab) spawnBreaker(name, dir string, max, noProgress int, rails *rails.Rails, plan ...string) {
	l.t.Helper()
	planFile := filepath.Join(l.root, name+".plan")
	prompt := filepath.Join(l.root, "PROMPT.md")
	os.WriteFile(planFile, []byte(strings.Join(plan, "\n")+"\n"), 0o644)
	os.WriteFile(prompt, []byte("go on\n"), 0o644)
	if dir == "" {
		// Not the lab's directory: the swarm directory is in it.
		dir = filepath.Join(l.root, "work")
		os.MkdirAll(dir, 0o755)
	}
	if _, err := l.ls.Spawn(context.Background(), SpawnSpec{Name: name, PromptFile: prompt, MaxIterations: max, NoProgress: &noProgress,
		Cwd: dir, Rails: rails, Cmd: []string{"sh", l.agent, planFile, filepath.Join(l.root, name+".counter")}}); err != nil {
		l.t.Fatalf("Spawn(%s) = %v", name, err)
	}
	if _, err := l.ls.StartMonitor(context.Background(), name); err != nil {
		l.t.Fatalf("StartMonitor(%s) = %v", name, err)
	}
}

func usd(v float64) *float64 { return &v }

// TestBudget: a loop whose agent reports $0.40 an iteration, with a budget of $1, stops
// (reason budget) after the iteration that reached it: it never spends more than the budget
// and one iteration's cost. An agent that rewrites the budget and the cost in state.json does
// not move them; --hard-budget stops an iteration whose cost so far reached the budget.
func TestBudget(t *testing.T) {
	l := newLab(t)
	// The swarm directory inside the agent's tree: a budget there is refused, nothing started.
	prompt := filepath.Join(l.root, "PROMPT.md")
	os.WriteFile(prompt, []byte("go on\n"), 0o644)
	_, err := l.ls.Spawn(context.Background(), SpawnSpec{Name: "b0", PromptFile: prompt, MaxIterations: 2, Cwd: l.root,
		Rails: &rails.Rails{BudgetUSD: usd(1)}, Cmd: []string{"sh", l.agent, "/dev/null", "/dev/null"}})
	if err == nil || !strings.Contains(err.Error(), "set SWARM_DIR to a directory outside it") {
		t.Fatalf("Spawn with the swarm directory inside the agent's tree and a budget = %v, want it refused", err)
	}
	if w, _ := l.ls.Swarm().Worker("b0"); w != nil {
		t.Fatalf("the refused spawn left a worker: %+v", w)
	}
	cases := []struct {
		name  string
		rails *rails.Rails
		plan  string
		iters int
		cost  float64
	}{
		{"b1", &rails.Rails{BudgetUSD: usd(1)}, "cost 0.4", 3, 1.2},
		{"b2", &rails.Rails{BudgetUSD: usd(1)}, "steer 0.4 b2", 3, 1.2},
		{"b3", &rails.Rails{BudgetUSD: usd(0.5), HardBudget: true}, "costidle 0.6", 1, 0.6},
	}
	for _, c := range cases {
		l.spawnRails(c.name, "", 10, c.rails, c.plan)
	}
	for _, c := range cases {
		l.waitMonitor(c.name, false)
		st := l.state(c.name)
		if st.Status != StatusStopped || st.ExitReason == nil || *st.ExitReason != ReasonBudget || st.CurrentIteration != c.iters {
			t.Errorf("%s (%s): ended %s (%v) after %d iterations; want stopped (budget) after %d:\n%s", c.name, c.plan,
				st.Status, st.ExitReason, st.CurrentIteration, c.iters, l.log(c.name))
			continue
		}
		budget, step := *c.rails.BudgetUSD, 0.6
		if st.CostUSD < budget || st.CostUSD > budget+step || abs(st.CostUSD-c.cost) > 1e-9 {
			t.Errorf("%s: cost $%v; want $%v: at least the budget $%v, at most one iteration more", c.name, st.CostUSD, c.cost, budget)
		}
		if len(st.IterationCosts) != c.iters {
			t.Errorf("%s: iteration costs %v, want %d of them", c.name, st.IterationCosts, c.iters)
		}
		if st.Rails == nil || st.Rails.BudgetUSD == nil || *st.Rails.BudgetUSD != budget {
			t.Errorf("%s: the state's budget is %+v, want $%v", c.name, st.Rails, budget)
		}
		s, err := l.ls.Status(context.Background(), c.name)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		s.WriteText(&text)
		if !strings.Contains(text.String(), "Cost: $"+money(c.cost)+" of a $"+money(budget)+" budget") {
			t.Errorf("%s: status does not show the cost and the budget:\n%s", c.name, text.String())
		}
	}
	// b2's agent rewrote the budget and the cost in state.json (without the writers' lock, as
	// an agent would): what holds is above, the budget kept and the cost counted. Whether the
	// monitor also saw the rewrite, and said so in iterations.log, depends on which write came
	// last (its own next update may replace the agent's first): not asserted (CI saw both).
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestMaxCallsPerHour: with 2 calls an hour (the test's hour: callWindow), the third
// iteration waits until an hour after the first began, and the loop then runs to its maximum:
// it waits, it does not fail.
func TestMaxCallsPerHour(t *testing.T) {
	l := newLab(t)
	t0 := time.Now()
	l.spawnRails("c1", "", 3, &rails.Rails{MaxCallsPerHour: 2}, "run 0")
	l.waitMonitor("c1", false)
	st := l.state("c1")
	if st.Status != StatusStopped || st.ExitReason == nil || *st.ExitReason != ReasonMax || st.CurrentIteration != 3 {
		t.Fatalf("ended %s (%v) after %d iterations; want stopped (max_iterations) after 3:\n%s", st.Status, st.ExitReason,
			st.CurrentIteration, l.log("c1"))
	}
	if !strings.Contains(l.log("c1"), "calls in the last hour (--max-calls-per-hour), waiting until") {
		t.Fatalf("iterations.log does not say the loop waited:\n%s", l.log("c1"))
	}
	third, ok := parseISO(st.CallTimes[len(st.CallTimes)-1])
	if !ok || third.Sub(t0) < callWindow {
		t.Fatalf("iteration 3 started %v after the spawn, want at least %v (calls %v)", third.Sub(t0), callWindow, st.CallTimes)
	}
}

// hookScript writes a hook that appends its stdin to out. Written once, whole (renamed into
// place): a rewrite in place, for each loop spawned, truncated the script under the hooks of
// the loops already running, and an sh that read it empty lost its event without a word.
func (l *lab) hookScript(out string) string {
	script := filepath.Join(l.root, "hook.sh")
	if _, err := os.Stat(script); err != nil {
		os.WriteFile(script+".tmp", []byte("#!/bin/sh\ncat >> \"$1\"\n"), 0o755)
		os.Rename(script+".tmp", script)
	}
	return "sh " + script + " " + out
}

// events are the JSON events a hook wrote to path, each checked to be one valid event.
func (l *lab) events(path string) []map[string]any {
	l.t.Helper()
	b, _ := os.ReadFile(path)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			l.t.Fatalf("the hook read %q: not one JSON event: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// TestHookEvents: the hook reads one valid JSON event per transition of the loop: its start,
// its end (end, failure, breaker), the limits it waits for; a hook that hangs or fails
// changes nothing: the loop ends as it does without one, its monitor goes at once.
func TestHookEvents(t *testing.T) {
	l := newLab(t)
	type ev struct{ event, status, reason string }
	cases := []struct {
		name       string
		rails      rails.Rails
		max        int
		noProgress int
		plan       []string
		want       []ev
	}{
		{"h1", rails.Rails{}, 2, 0, []string{"run 0"}, []ev{{"start", "running", ""}, {"end", "stopped", "max_iterations"}}},
		{"h2", rails.Rails{}, 10, 0, []string{"exit 3"}, []ev{{"start", "running", ""}, {"failure", "failed", "failed"}}},
		{"h3", rails.Rails{BudgetUSD: usd(0.5)}, 10, 0, []string{"cost 0.3"},
			[]ev{{"start", "running", ""}, {"end", "stopped", "budget"}}},
		{"h4", rails.Rails{MaxCallsPerHour: 1}, 2, 0, []string{"run 0"},
			[]ev{{"start", "running", ""}, {"limit", "running", "max-calls-per-hour"}, {"end", "stopped", "max_iterations"}}},
		// The same failure twice, outside git: the breaker opens before the fifth failure.
		{"h5", rails.Rails{}, 10, 2, []string{"exit 3"}, []ev{{"start", "running", ""}, {"breaker", "failed", "no-progress"}}},
		// A usage limit: the same iteration again once it resets, no failure.
		{"h6", rails.Rails{}, 1, 0, []string{"limitexit 1", "run 0"},
			[]ev{{"start", "running", ""}, {"limit", "running", "usage-limit"}, {"end", "stopped", "max_iterations"}}},
	}
	for _, c := range cases {
		out := filepath.Join(l.root, c.name+".events")
		r := c.rails
		r.OnEvent = l.hookScript(out)
		l.spawnBreaker(c.name, "", c.max, c.noProgress, &r, c.plan...)
	}
	for _, c := range cases {
		l.waitMonitor(c.name, false)
		out := filepath.Join(l.root, c.name+".events")
		var got []map[string]any
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if got = l.events(out); len(got) >= len(c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's hook read %d events in 60 s, want %d: %v\niterations.log:\n%s", c.name, len(got), len(c.want), got, l.log(c.name))
			}
		}
		got = l.events(out)
		if len(got) != len(c.want) {
			t.Errorf("%s: the hook read %d events, want %d: %v", c.name, len(got), len(c.want), got)
			continue
		}
		for i, w := range c.want {
			e := got[i]
			reason, _ := e["reason"].(string)
			if e["kind"] != "loop" || e["loop"] != c.name || e["event"] != w.event || e["status"] != w.status || reason != w.reason ||
				e["log"] == nil || e["time"] == nil || e["cost_usd"] == nil || e["iteration"] == nil {
				t.Errorf("%s: event %d is %v; want kind loop, loop %s, event %s, status %s, reason %q, with iteration, cost, log and time",
					c.name, i+1, e, c.name, w.event, w.status, w.reason)
			}
		}
	}

	// A hook that hangs (killed at its bound) and one that fails: the loop ends as h1 did, and
	// its monitor does not wait for the hook to let the loop go. The hanging hook notes each
	// run's pid: when the loop has let go, its last run is still at work (had the monitor waited
	// for the hook, every run would have been killed at its bound by then). An order, not a
	// time: a loaded machine makes the loop itself take the bound's seconds.
	pids := filepath.Join(l.root, "hang.pids")
	hang := fmt.Sprintf(`sh -c 'echo $$ >> %s; exec sleep 1000'`, pids)
	for _, c := range []struct{ name, cmd string }{{"hang", hang}, {"fail", "false"}} {
		l.spawnRails(c.name, "", 2, &rails.Rails{OnEvent: c.cmd}, "run 0")
		l.waitMonitor(c.name, false)
		var running bool
		if c.name == "hang" {
			b, _ := os.ReadFile(pids)
			f := strings.Fields(string(b))
			running = len(f) == 0 // not started yet: not waited for either
			if len(f) > 0 {
				pid, _ := strconv.Atoi(f[len(f)-1])
				running = pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid)
			}
		}
		st := l.state(c.name)
		if st.Status != StatusStopped || st.ExitReason == nil || *st.ExitReason != ReasonMax || st.CurrentIteration != 2 {
			t.Errorf("%s hook: the loop ended %s (%v) after %d iterations; want stopped (max_iterations) after 2:\n%s",
				c.name, st.Status, st.ExitReason, st.CurrentIteration, l.log(c.name))
		}
		if c.name == "hang" && !running {
			t.Errorf("hang hook: when the loop let go, every run of its hook had ended (killed at its bound): the loop waited for its hook")
		}
		l.waitLog(c.name, `WARN\] iteration \d+: the --on-event hook \(start event\)`)
	}
}

// gitRun runs git in dir and returns its output, trimmed.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitx.Cmd{Dir: dir}.Output(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommitEach: --commit-each makes one commit per iteration that changed the tree, with
// trailers naming the loop and the iteration; abort --revert of the loop, once it has ended,
// takes the tree back to where it started: HEAD, the uncommitted change re-applied, the
// untracked file that was there kept, the loop's work gone.
func TestCommitEach(t *testing.T) {
	l := newLab(t)
	repo := filepath.Join(l.root, "repo")
	gitRun(t, l.root, "init", "-q", repo)
	os.WriteFile(filepath.Join(repo, "README"), []byte("one\n"), 0o644)
	gitRun(t, repo, "add", "README")
	gitRun(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
	start := gitRun(t, repo, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(repo, "README"), []byte("one\ntwo\n"), 0o644) // uncommitted
	os.WriteFile(filepath.Join(repo, "keep.txt"), []byte("mine\n"), 0o644)   // untracked
	// touch appends to notes.txt in the agent's directory, the repository.
	l.spawnRails("g1", repo, 3, &rails.Rails{CommitEach: true}, "touch notes.txt")
	l.waitMonitor("g1", false)
	if st := l.state("g1"); st.Status != StatusStopped || st.CurrentIteration != 3 {
		t.Fatalf("ended %s after %d iterations; want stopped after 3:\n%s", st.Status, st.CurrentIteration, l.log("g1"))
	}
	loops := gitRun(t, repo, "log", "--format=%(trailers:key=Ralph-Loop,valueonly,separator=)", start+"..HEAD")
	iters := gitRun(t, repo, "log", "--reverse", "--format=%(trailers:key=Ralph-Iteration,valueonly,separator=)", start+"..HEAD")
	if strings.Fields(loops) == nil || strings.Join(strings.Fields(loops), " ") != "g1 g1 g1" || strings.Join(strings.Fields(iters), " ") != "1 2 3" {
		t.Fatalf("commits since the start: loops %q, iterations %q; want g1 three times, 1 2 3:\n%s", loops, iters, l.log("g1"))
	}
	if s := gitRun(t, repo, "status", "--porcelain"); s != "" {
		t.Fatalf("the tree after the loop is not clean: %s", s)
	}

	res, err := l.ls.Abort(context.Background(), "g1", true)
	if err != nil || !res.Reverted || res.Stopped {
		t.Fatalf("Abort(g1, revert) of the ended loop = %+v, %v; want reverted, not stopped (it had ended)", res, err)
	}
	if head := gitRun(t, repo, "rev-parse", "HEAD"); head != start {
		t.Errorf("HEAD after the revert is %s, want the start %s", head, start)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README")); string(b) != "one\ntwo\n" {
		t.Errorf("README after the revert is %q, want the uncommitted change back", b)
	}
	if _, err := os.Stat(filepath.Join(repo, "keep.txt")); err != nil {
		t.Errorf("the untracked file that was there before the loop is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Errorf("the loop's work (notes.txt) is still there after the revert")
	}
}

// TestRevertTrustsOnlyTheSeal (issue 27): abort --revert resets the tree to the start sealed
// at the spawn, never to one read back from state.json or the repository, which the agent can
// write. The user committed mine.txt before the loop and keeps an untracked keep.txt; an agent
// that points start_commit at the commit before the user's, start_snapshot at an empty tree
// (its ref moved along), or moves the branch off the start, gets the revert refused: the
// branch, the user's commit and the untracked file are as they were. The honest state then
// reverts.
func TestRevertTrustsOnlyTheSeal(t *testing.T) {
	l := newLab(t)
	repo := filepath.Join(l.root, "repo")
	gitRun(t, l.root, "init", "-q", repo)
	commit := func(msg string) string {
		gitRun(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", msg)
		return gitRun(t, repo, "rev-parse", "HEAD")
	}
	old := commit("old")
	os.WriteFile(filepath.Join(repo, "mine.txt"), []byte("the user's\n"), 0o644)
	gitRun(t, repo, "add", "mine.txt")
	start := commit("the user's own commit, before the loop")
	os.WriteFile(filepath.Join(repo, "keep.txt"), []byte("mine\n"), 0o644) // untracked
	l.spawnRails("g3", repo, 2, &rails.Rails{CommitEach: true}, "touch notes.txt")
	l.waitMonitor("g3", false)
	end := gitRun(t, repo, "rev-parse", "HEAD")
	if end == start {
		t.Fatalf("the loop committed nothing:\n%s", l.log("g3"))
	}
	statePath := l.dir.RalphState("g3")
	honest, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	snap := l.state("g3").StartSnapshot
	empty := gitRun(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", "-p", start, "-m", "forged", gitRun(t, repo, "hash-object", "-t", "tree", "/dev/null"))
	forge := func(field, from, to string) func() {
		return func() {
			b := bytes.Replace(honest, []byte(`"`+field+`": "`+from+`"`), []byte(`"`+field+`": "`+to+`"`), 1)
			if bytes.Equal(b, honest) {
				t.Fatalf("%s %s is not in the state:\n%s", field, from, honest)
			}
			os.WriteFile(statePath, b, 0o600)
		}
	}
	cases := []struct {
		name  string
		agent func()
		want  string
	}{
		{"start_commit before the user's commit", forge("start_commit", start, old), "changed behind ralph's back"},
		{"start_snapshot of an empty tree", func() {
			forge("start_snapshot", snap, empty)()
			gitRun(t, repo, "update-ref", "refs/ralph/g3/start", empty)
		}, "changed behind ralph's back"},
		{"the snapshot's ref moved", func() { gitRun(t, repo, "update-ref", "refs/ralph/g3/start", empty) }, "refs/ralph/g3/start is not the snapshot"},
		{"the branch moved off the start", func() { gitRun(t, repo, "reset", "-q", "--soft", old); commit("elsewhere") }, "does not descend from the loop's start"},
	}
	for _, c := range cases {
		c.agent()
		head := gitRun(t, repo, "rev-parse", "HEAD")
		res, err := l.ls.Abort(context.Background(), "g3", true)
		if err == nil || res.Reverted || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Abort(g3, revert) = %+v, %v; want it refused (%q)", c.name, res, err, c.want)
		}
		if now := gitRun(t, repo, "rev-parse", "HEAD"); now != head {
			t.Errorf("%s: the refused revert moved HEAD from %s to %s", c.name, head, now)
		}
		for _, f := range []string{"mine.txt", "keep.txt", "notes.txt"} {
			if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
				t.Errorf("%s: the refused revert removed %s: %v", c.name, f, err)
			}
		}
		// Undo the agent's doing for the next case.
		os.WriteFile(statePath, honest, 0o600)
		gitRun(t, repo, "update-ref", "refs/ralph/g3/start", snap)
		gitRun(t, repo, "reset", "-q", "--soft", end)
	}
	if res, err := l.ls.Abort(context.Background(), "g3", true); err != nil || !res.Reverted {
		t.Fatalf("Abort(g3, revert) of the honest state = %+v, %v; want reverted", res, err)
	}
	if head := gitRun(t, repo, "rev-parse", "HEAD"); head != start {
		t.Errorf("HEAD after the revert is %s, want the start %s (the user's commit kept)", head, start)
	}
	if _, err := os.Stat(filepath.Join(repo, "keep.txt")); err != nil {
		t.Errorf("the untracked file of the start is gone after the revert: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Errorf("the loop's work (notes.txt) is still there after the revert")
	}
}

// TestCommitEachLeavesTheSwarmDirectory: a loop whose tree holds the swarm directory commits
// its agent's work, never the loop's own state, logs or seal.
func TestCommitEachLeavesTheSwarmDirectory(t *testing.T) {
	l := newLab(t)
	gitRun(t, l.root, "init", "-q")
	gitRun(t, l.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
	l.spawnRails("g2", l.root, 2, &rails.Rails{CommitEach: true}, "touch notes.txt")
	l.waitMonitorExited("g2")
	// A loop that says it ended has no worker's supervisor left (the last one outlived it,
	// until the test binary's sweep killed it).
	if left := supervisorsOf(l.ls.base.dir.Root); len(left) > 0 {
		t.Errorf("the loop ended with its worker's supervisor still running: %v", left)
	}
	if got := gitRun(t, l.root, "log", "--format=%s"); got != "ralph: g2, iteration 2\nralph: g2, iteration 1\nstart" {
		t.Fatalf("commits: %q:\n%s", got, l.log("g2"))
	}
	files := gitRun(t, l.root, "ls-files")
	if !strings.Contains(files, "notes.txt") || strings.Contains(files, "sd/") {
		t.Fatalf("the loop committed %q: want notes.txt, nothing of the swarm directory sd/", files)
	}
}

// zombie says whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(b), ") Z ")
}

// supervisorsOf is the pids of the processes that run a worker's supervisor of the swarm
// directory dir (the supervise verb and --swarm-dir DIR on their command line).
func supervisorsOf(dir string) []int { return testenv.Supervisors(dir) }
