package swarmrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/manifest"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

const labVersion = "sshlab-swarmrun"

// labExecutors makes a lab of n sshd hosts, each with a clone of w's repository, our dispatch
// and the stand-in agent (labconn.Hosts), and returns a Remote executor per host with max agents
// each.
func labExecutors(t testing.TB, w *world, n, agents int) (*sshlab.Lab, []*executor.Remote) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, n)
	return lab, labExecutorsOn(t, lab, w, agents)
}

// labExecutorsOn is labExecutors on a lab already made: a clone of w's repository on each host.
func labExecutorsOn(t testing.TB, lab *sshlab.Lab, w *world, agents int) []*executor.Remote {
	t.Helper()
	sh, _ := filepath.Abs("testdata/agent.sh")
	config := filepath.Join(t.TempDir(), "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}, "true": {"command": "/bin/true", "terminal": false}}`, sh), 0o644)
	var execs []*executor.Remote
	for _, c := range labconn.Hosts(t, lab, w.repo, config, labVersion, agents) {
		execs = append(execs, &executor.Remote{Conn: c, Repo: w.repo, StateDir: w.stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second, Log: w.log})
	}
	return execs
}

// TestRunOnHostsOneCutOff: ten tasks with dependencies on three sshd hosts of two agents each;
// h1 is cut off while its two agents work (and hang: they are stopped only by their deadline
// there). Every task completes exactly once, on h2 or h3; the two taken back from h1 run
// again only after their deadline there (no agent of a task ever alive while another starts);
// the state says where each ran, the requeue, h1's agents offline, and validates; the records
// came back and every branch holds its task's work.
func TestRunOnHostsOneCutOff(t *testing.T) {
	w := newWorld(t)
	lab, execs := labExecutors(t, w, 3, 2)
	tmp := t.TempDir()
	alog := filepath.Join(tmp, "agents.log")
	deps := map[int]string{6: "t00", 7: "t01, t02", 8: "t03", 9: "t06, t04"}
	var b strings.Builder
	b.WriteString("name: Ten on hosts\nbase_branch: main\ndefaults: {agent: fake, retries: 1, timeout: 6}\ntasks:\n")
	for i := 0; i < 10; i++ {
		words := fmt.Sprintf("alone:%s write:t%02d.txt", alog, i)
		if i < 6 {
			words = fmt.Sprintf("alone:%s hold:%s write:t%02d.txt", alog, tmp, i)
		}
		fmt.Fprintf(&b, "  - id: t%02d\n    prompt: %q\n    branch: swarm/t%02d\n    depends_on: [%s]\n", i, words, i, deps[i])
	}
	cfg := w.config(t, b.String(), 0)
	cfg.Executors = nil
	for _, e := range execs {
		cfg.Executors = append(cfg.Executors, e)
	}
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	start := time.Now()
	go func() {
		res, err := Run(context.Background(), cfg)
		done <- ran{res, err}
	}()
	// h1's two agents at work: h1 is cut off, the others go on.
	deadline := time.Now().Add(45 * time.Second)
	for strings.Count(readFile(alog), " start h1-") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("h1's agents never started:\n%s\n%s", readFile(alog), w.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	lab.Cut(t, 0)
	os.WriteFile(filepath.Join(tmp, "go-h2"), nil, 0o600)
	os.WriteFile(filepath.Join(tmp, "go-h3"), nil, 0o600)
	var r ran
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", w.log.String())
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, w.log.String())
	}
	t.Logf("the run took %s", time.Since(start).Round(100*time.Millisecond))
	p := Paths{Root: w.repo}
	st := checkValid(t, p.State())
	checkValid(t, p.History(st.ExecutionID))
	if st.Status != ExecCompleted || st.Summary.Completed != 10 {
		t.Fatalf("status %s, summary %+v\n%s", st.Status, st.Summary, w.log.String())
	}
	log := readFile(alog)
	if strings.Contains(log, "overlap") {
		t.Errorf("a task's agent started while another of it was alive:\n%s", log)
	}
	requeued := 0
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("t%02d", i)
		task := st.Tasks[id]
		tr := task.Trace
		if task.Status != Completed || tr == nil || tr.AgentHost == nil || (*tr.AgentHost != "h2" && *tr.AgentHost != "h3") ||
			!strings.HasPrefix(tr.AgentID, *tr.AgentHost+"-") || tr.CommitSHA == nil {
			t.Errorf("task %s: %s, trace %+v", id, task.Status, tr)
			continue
		}
		// Completed exactly once: one end of its agent, a zero one, on the host the state names.
		ends := 0
		for _, l := range strings.Split(log, "\n") {
			if strings.HasPrefix(l, id+" end ") {
				ends++
				if l != id+" end "+tr.AgentID+" 0" {
					t.Errorf("task %s: %q, want its end on %s", id, l, tr.AgentID)
				}
			}
		}
		if ends != 1 {
			// The run's own log says why it ran again (once seen under load: a task done on h3
			// ran a second time on h3; cause not found yet).
			t.Errorf("task %s's agent ended %d times, want once:\n%s\nthe run's log:\n%s\ntrace: %+v", id, ends, log, w.log.String(), task)
		}
		if got := git(t, w.repo, "show", "swarm/"+id+":"+id+".txt"); got != id {
			t.Errorf("branch swarm/%s's %s.txt = %q", id, id, got)
		}
		if msg := git(t, w.repo, "log", "-1", "--format=%B", "swarm/"+id); !strings.Contains(msg, "Swarm-Task-ID: "+id) || !strings.Contains(msg, "Swarm-Agent: "+tr.AgentID) {
			t.Errorf("branch swarm/%s's commit lacks the trailers:\n%s", id, msg)
		}
		res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(tr.Bead))
		if err != nil || res.Status != record.StatusDone {
			t.Errorf("task %s's result record here: %+v, %v", id, res, err)
		}
		// A task of a fraction of a second still took time (the host's records keep whole
		// seconds: they made it 0 s, and the run's speedup 0).
		if tr.DurationSeconds == nil || *tr.DurationSeconds <= 0 {
			t.Errorf("task %s: duration %s, want > 0", id, jsonOf(tr.DurationSeconds))
		}
		if len(tr.Requeued) == 0 {
			continue
		}
		requeued++
		q := tr.Requeued[0]
		nb, _ := record.ParseTime(q.NotBefore)
		started, _ := record.ParseTime(*tr.StartedAt)
		if q.AgentHost != "h1" || !strings.HasPrefix(q.AgentID, "h1-") || q.LastHeartbeat == nil || started.Before(nb.Add(-time.Second)) {
			t.Errorf("task %s's requeue %+v, started again at %s", id, q, *tr.StartedAt)
		}
	}
	if requeued != 2 {
		t.Errorf("%d tasks say they were taken back from h1, want 2", requeued)
	}
	for _, id := range []string{"h1-1", "h1-2"} {
		if a := st.Agents[id]; a == nil || a.Status != AgentOffline || a.LastHeartbeat == nil {
			t.Errorf("agent %s = %+v, want offline with its last heartbeat", id, a)
		}
	}
	if a := st.Agents["h2-1"]; a == nil || a.Status != AgentIdle || a.LastHeartbeat == nil || len(a.TasksCompleted) == 0 {
		t.Errorf("agent h2-1 = %+v", a)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// killedHostsRunVerb is a run over the lab's hosts that SIGKILLs itself at a named step:
// "BINARY __killed_hosts_run REPO STATE_DIR MANIFEST HOSTS_JSON STEP N", HOSTS_JSON the hosts
// ([]remote.Host) in the order their executors are given.
const killedHostsRunVerb = "__killed_hosts_run"

func killedHostsRunMain(args []string) int {
	if len(args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: __killed_hosts_run REPO STATE_DIR MANIFEST HOSTS_JSON STEP N")
		return 2
	}
	repo, stateDir, path, hostsFile, step := args[0], args[1], args[2], args[3], args[4]
	nth, _ := strconv.Atoi(args[5])
	m, err := manifest.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	conns, err := labconn.Dial(hostsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var execs []Executor
	for _, c := range conns {
		execs = append(execs, &executor.Remote{Conn: c, Repo: repo, StateDir: stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second, Log: os.Stderr})
	}
	var mu sync.Mutex
	seen := 0
	cfg := Config{Manifest: m, ManifestPath: path, Repo: repo, RepoName: ".", Executors: execs, Log: os.Stderr, PID: os.Getpid(),
		Checkpoint: func(s string) {
			if s != step {
				return
			}
			mu.Lock()
			seen++
			die := seen == nth
			mu.Unlock()
			if die {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}}
	if _, err := Run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "the run ended without reaching %s #%d\n", step, nth)
	return 3
}

// TestResumeOverHostsAdoptsTheRunningAttempt: a run over two hosts is SIGKILLed while its two
// tasks' agents work there; --resume, its hosts given in the other order, finds each attempt
// on its host and waits for it: each agent ran exactly once (issue 18: --resume started a
// second one), each task completed on the host its agent ran on, its records and branch here.
func TestResumeOverHostsAdoptsTheRunningAttempt(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 2, 1)
	tmp := t.TempDir()
	log, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
	words := fmt.Sprintf("once:%s waitfor:%s", log, gate)
	cfg := w.config(t, fmt.Sprintf(`name: resumed on hosts
defaults: {agent: fake, retries: 0, timeout: 120}
tasks:
  - {id: a, prompt: "%[1]s write:a.txt", branch: a}
  - {id: b, prompt: "%[1]s write:b.txt", branch: b}
`, words), 0)
	// The killed run has h2 first: a runs on h2, b on h1; the resumed run has h1 first.
	hosts := []*remote.Host{execs[1].Conn.Host, execs[0].Conn.Host}
	hj := filepath.Join(tmp, "hosts.json")
	b, _ := json.Marshal(hosts)
	os.WriteFile(hj, b, 0o600)
	self, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, killedHostsRunVerb, w.repo, w.stateDir, cfg.ManifestPath, hj, "launched", "2")
	var stderr syncBuf
	cmd.Stderr = &stderr
	cmd.Env = testenv.KilledEnv(t)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the run was not killed once both tasks were launched: %v\n%s", err, stderr.String())
	}
	p := Paths{Root: w.repo}
	st := checkValid(t, p.State())
	for id, host := range map[string]string{"a": "h2", "b": "h1"} {
		if tr := st.Tasks[id].Trace; tr == nil || tr.AgentHost == nil || *tr.AgentHost != host {
			t.Fatalf("task %s's trace after the kill: %+v, want it on %s\n%s", id, tr, host, stderr.String())
		}
	}
	cfg.Executors = []Executor{execs[0], execs[1]}
	cfg.Resume = true
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg)
		done <- err
	}()
	// Both attempts found still at work on their hosts: then the agents may end (a run that
	// ends first did not wait for them).
	deadline := time.Now().Add(time.Minute)
	ended := false
	for !ended && strings.Count(w.log.String(), "of an earlier run still runs here") < 2 {
		if time.Now().After(deadline) {
			os.WriteFile(gate, nil, 0o600)
			t.Fatalf("the resumed run did not wait for the running attempts:\n%s\nkilled run:\n%s", w.log.String(), stderr.String())
		}
		select {
		case err = <-done:
			ended = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	os.WriteFile(gate, nil, 0o600)
	if !ended {
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the resumed run did not end:\n%s", w.log.String())
		}
	}
	if err != nil {
		t.Fatalf("--resume: %v\n%s", err, w.log.String())
	}
	st = checkValid(t, p.State())
	if st.Status != ExecCompleted || st.Summary.Completed != 2 {
		t.Fatalf("after --resume: %s, %+v\n%s\nkilled run:\n%s", st.Status, st.Summary, w.log.String(), stderr.String())
	}
	runs := readFile(log)
	for id, host := range map[string]string{"a": "h2", "b": "h1"} {
		if got, want := strings.Count(runs, id+" start "), 1; got != want || !strings.Contains(runs, id+" end 1 0") || strings.Contains(runs, id+" overlap") {
			t.Errorf("task %s's agent ran %d times, want once (attempt 1, ended 0):\n%s", id, got, runs)
		}
		tr := st.Tasks[id].Trace
		if tr == nil || tr.AgentHost == nil || *tr.AgentHost != host || tr.Attempt != 1 || tr.CommitSHA == nil {
			t.Errorf("task %s's trace %+v, want attempt 1 on %s, committed", id, tr, host)
			continue
		}
		if got := git(t, w.repo, "show", id+":"+id+".txt"); got != id {
			t.Errorf("branch %s's %s.txt = %q", id, id, got)
		}
		if res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(tr.Bead)); err != nil || res.Status != record.StatusDone || res.Attempt != 1 {
			t.Errorf("task %s's result record here: %+v, %v", id, res, err)
		}
	}
	if t.Failed() {
		t.Logf("resumed run:\n%s\nkilled run:\n%s", w.log.String(), stderr.String())
	}
}

// TestRemoteEndBroughtBackAfterAFailure: a remote attempt that ended 0 whose branch cannot be
// fetched at once (its ref here locked, as by another git at work in the repository) is
// brought back on a later try, not judged failed and run again (issue 18: a task done on a host
// ran a second time there).
func TestRemoteEndBroughtBackAfterAFailure(t *testing.T) { bringBackAfter(t, nil) }

// TestRemoteEndBroughtBackAfterTheConnectionClosed: the same, the host's ssh master closing
// meanwhile (as its ServerAlive checks give up under load): the host is connected to again,
// not taken for offline, and the finished attempt is brought back, not run elsewhere.
func TestRemoteEndBroughtBackAfterTheConnectionClosed(t *testing.T) {
	bringBackAfter(t, func(c *remote.Conn) { c.Close() })
}

// TestRemoteEndBroughtBackAfterTheMasterKilled: the same, the host's ssh master killed
// meanwhile (SIGKILL: its socket is left behind). It is found dead, its socket removed and a new
// master started (issue 27: the new one failed, "already exists, disabling multiplexing", the
// host was judged offline and its finished work not brought back).
func TestRemoteEndBroughtBackAfterTheMasterKilled(t *testing.T) {
	bringBackAfter(t, func(c *remote.Conn) {
		pid := c.MasterPID()
		if pid == 0 {
			t.Fatal("the master's pid is not known")
		}
		syscall.Kill(pid, syscall.SIGKILL)
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// bringBackAfter runs a task whose end cannot be brought back at first; meanwhile, when set,
// meanwhile is done to the host's connection.
func bringBackAfter(t *testing.T, meanwhile func(*remote.Conn)) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 1, 1)
	// The host never stops answering here: the master closed is opened again, which under
	// the suite's load took longer than the lab's 3 s (the reconnect was killed and the host
	// called offline), so the default bound applies.
	execs[0].OfflineAfter = 30 * time.Second
	tmp := t.TempDir()
	log := filepath.Join(tmp, "agents.log")
	cfg := w.config(t, fmt.Sprintf(`name: brought back
defaults: {agent: fake, retries: 1, timeout: 120}
tasks:
  - {id: a, prompt: "once:%s write:a.txt", branch: a}
`, log), 0)
	cfg.Executors = []Executor{execs[0]}
	lock := filepath.Join(w.repo, ".git", "refs", "remotes", "h1", "a.lock")
	os.MkdirAll(filepath.Dir(lock), 0o700)
	os.WriteFile(lock, nil, 0o600)
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg)
		done <- err
	}()
	var err error
	ended := false
	deadline := time.Now().Add(time.Minute)
	for !ended && !strings.Contains(w.log.String(), "but bringing it back failed") {
		if time.Now().After(deadline) {
			os.Remove(lock)
			t.Fatalf("no failed fetch:\n%s", w.log.String())
		}
		select {
		case err = <-done:
			ended = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	if meanwhile != nil {
		// Before the lock goes: no try can succeed before the master is closed.
		meanwhile(execs[0].Conn)
	}
	os.Remove(lock)
	if !ended {
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("the run did not end:\n%s", w.log.String())
		}
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	st := checkValid(t, Paths{Root: w.repo}.State())
	task := st.Tasks["a"]
	if runs := readFile(log); strings.Count(runs, "a start ") != 1 || task.Status != Completed || task.Trace.RetryCount != 0 || len(task.Trace.Requeued) != 0 {
		t.Fatalf("task a: %s, retries %d, requeued %v; its agent's runs:\n%s\nthe run's log:\n%s", task.Status, task.Trace.RetryCount, task.Trace.Requeued, runs, w.log.String())
	}
	if got := git(t, w.repo, "show", "a:a.txt"); got != "a" {
		t.Errorf("branch a's a.txt = %q", got)
	}
}

// TestResumeWithoutTheHostHoldsTheTask: a run over h2 is SIGKILLed while its task's agent works
// there; --resume over h1 alone cannot look on h2: the task is held until the attempt's
// deadline there has passed, then runs on h1, never while the agent on h2 is alive.
func TestResumeWithoutTheHostHoldsTheTask(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 2, 1)
	tmp := t.TempDir()
	alog, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
	cfg := w.config(t, fmt.Sprintf(`name: resumed elsewhere
defaults: {agent: fake, retries: 0, timeout: 8}
tasks:
  - {id: a, prompt: "alone:%s waitfor:%s write:a.txt", branch: a}
`, alog, gate), 0)
	hj := filepath.Join(tmp, "hosts.json")
	b, _ := json.Marshal([]*remote.Host{execs[1].Conn.Host})
	os.WriteFile(hj, b, 0o600)
	self, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, killedHostsRunVerb, w.repo, w.stateDir, cfg.ManifestPath, hj, "launched", "1")
	var stderr syncBuf
	cmd.Stderr = &stderr
	cmd.Env = testenv.KilledEnv(t)
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the run was not killed once its task was launched: %v\n%s", err, stderr.String())
	}
	cfg.Executors = []Executor{execs[0]}
	cfg.Resume = true
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg)
		done <- err
	}()
	// Held (or, without the hold, started on h1 at once): the agent on h2 may end now.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.log.String(), "which this run does not reach") && !strings.Contains(readFile(alog), "a start h1-1") {
		if time.Now().After(deadline) {
			os.WriteFile(gate, nil, 0o600)
			t.Fatalf("the resumed run neither held nor started the task:\n%s", w.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.WriteFile(gate, nil, 0o600)
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the resumed run did not end:\n%s", w.log.String())
	}
	if err != nil {
		t.Fatalf("--resume: %v\n%s", err, w.log.String())
	}
	runs := readFile(alog)
	st := checkValid(t, Paths{Root: w.repo}.State())
	task := st.Tasks["a"]
	if strings.Contains(runs, "overlap") || !strings.Contains(runs, "a end h1-1 0") || task.Status != Completed ||
		task.Trace.AgentHost == nil || *task.Trace.AgentHost != "h1" {
		t.Fatalf("task a: %s, trace %+v; its agents:\n%s\nthe run's log:\n%s", task.Status, task.Trace, runs, w.log.String())
	}
}

// TestRemoteEndSeenSoon: a remote attempt's end is seen soon after it, not at the next of the
// reads made every Every (20 s here): the reads come quickly at first, then slow down. The
// agent works 2 s: the first read, right after the start, finds it at work.
func TestRemoteEndSeenSoon(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 1, 1)
	execs[0].Every, execs[0].OfflineAfter = 20*time.Second, time.Minute
	cfg := w.config(t, "name: soon\ndefaults: {agent: fake}\ntasks:\n  - {id: a, prompt: \"sleep:2\", branch: a}\n", 0)
	cfg.Executors = []Executor{execs[0]}
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Summary.Completed != 1 {
		t.Fatalf("summary %+v\n%s", res.State.Summary, w.log.String())
	}
	took := time.Since(start)
	t.Logf("the run of a 2 s agent took %s", took.Round(100*time.Millisecond))
	if took >= 15*time.Second {
		t.Errorf("the run of a 2 s agent took %s, want well under the 20 s between reads", took.Round(100*time.Millisecond))
	}
}

// BenchmarkRunHosts runs b.N independent tasks of an agent that does nothing (/bin/true) on
// three sshd hosts of the lab (two agents each, as Every and OfflineAfter are by default), its
// commands through each host's server (remote.Conn.Serve) and, alternated with it, one ssh
// session each (executor.Remote.PerCommand): the time per task of each. Alternated with them
// in the same rounds, GNU parallel on the same hosts, two jobs a host through one ssh
// connection a host kept open: running the same required work of a task by hand
// (testdata/remote-task.sh: the branch pushed, the agent run in a worktree kept per slot,
// committed, the branch fetched back; "parallel-work"), and running the bare do-nothing
// command (--sshlogin --controlmaster, "parallel-M"). The ratios are of the wall times, each
// mode's summed over the rounds. Without parallel installed, its half is skipped with one line
// (scripts/bench/swarm-run.sh installs it, as root with apt-get).
func BenchmarkRunHosts(b *testing.B) {
	_, havePar := exec.LookPath("parallel")
	if havePar != nil {
		b.Log("GNU parallel not installed: no side by side (scripts/bench/swarm-run.sh installs it as root)")
	}
	if testing.Short() {
		b.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(b, 3)
	const rounds = 2
	walls := map[string]time.Duration{}
	b.StopTimer()
	for round := 0; round < rounds; round++ {
		for _, perCommand := range []bool{false, true} {
			name := "served"
			if perCommand {
				name = "per-command"
			}
			wall, _ := hostsRun(b, lab, perCommand, havePar == nil, walls)
			walls[name] += wall
		}
	}
	perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(rounds*b.N) }
	b.ReportMetric(perTask(walls["served"]), "ms/task")
	b.ReportMetric(perTask(walls["per-command"]), "per-command-ms/task")
	for _, p := range []string{"parallel-work", "parallel-M"} {
		if walls[p] == 0 || walls[p+" failed"] != 0 {
			continue
		}
		b.ReportMetric(perTask(walls[p]), p+"-ms/task")
		b.ReportMetric(float64(walls["served"])/float64(walls[p]), "ratio-to-"+p)
		b.ReportMetric(float64(walls["per-command"])/float64(walls[p]), "per-command-ratio-to-"+p)
	}
}

// hostsRun is one round of BenchmarkRunHosts on a lab of its own: swarm run over its hosts
// (perCommand: one ssh session a command), then, with par, parallel's two modes on the same
// hosts, their walls added to walls. It returns swarm run's wall time.
func hostsRun(b *testing.B, lab *sshlab.Lab, perCommand, par bool, walls map[string]time.Duration) (time.Duration, *Result) {
	w := newWorld(b)
	execs := labExecutorsOn(b, lab, w, 2)
	var doc strings.Builder
	doc.WriteString("name: bench\ndefaults: {agent: true}\ntasks:\n")
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(&doc, "  - {id: t%d, prompt: nothing, branch: b%d}\n", i, i)
	}
	cfg := w.config(b, doc.String(), 0)
	cfg.Executors = nil
	for _, e := range execs {
		e.Every, e.OfflineAfter, e.PerCommand = 0, 0, perCommand
		cfg.Executors = append(cfg.Executors, e)
	}
	b.StartTimer()
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	wall := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.State.Summary.Completed != b.N {
		b.Fatalf("%d of %d completed:%s", res.State.Summary.Completed, b.N, notCompleted(res.State, w.log.String()))
	}
	if !par {
		return wall, res
	}
	ssh := fmt.Sprintf("ssh -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes", lab.Key, lab.KnownHosts)
	var logins, targets []string
	for i, h := range lab.Hosts {
		logins = append(logins, "2/"+h.Dest)
		targets = append(targets, h.Dest+":"+execs[i].Conn.Host.Repo)
	}
	tasks := make([]string, b.N)
	for i := range tasks {
		tasks[i] = fmt.Sprint(i)
	}
	// The same do-nothing task in the host's clone (the clones share this file system: the
	// first host's is as good a directory as any).
	bare := append([]string{"--will-cite", "--sshlogin", strings.Join(logins, ","), "--ssh", ssh, "--controlmaster",
		"cd " + execs[0].Conn.Host.Repo + " && /bin/true", ":::"}, tasks...)
	script, _ := filepath.Abs("testdata/remote-task.sh")
	// One master a host, opened before the clock starts, as swarm run's are (its dial).
	control, err := os.MkdirTemp("", "fleet-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(control)
	mux := ssh + " -o ControlPath=" + control + "/%C"
	for _, h := range lab.Hosts {
		if out, err := exec.Command("sh", "-c", mux+" -o ControlMaster=yes -o ControlPersist=120 -f -N "+h.Dest).CombinedOutput(); err != nil {
			b.Fatalf("opening a master to %s: %v: %s", h.Name, err, out)
		}
	}
	defer func() {
		for _, h := range lab.Hosts {
			exec.Command("sh", "-c", mux+" -O exit "+h.Dest).Run()
		}
	}()
	mux += " -o ControlMaster=no"
	// The worktree of each job slot on its host, made before the clock starts, as swarm
	// run's slots are made before their first task.
	for slot := 1; slot <= 2*len(lab.Hosts); slot++ {
		clone := execs[(slot-1)%len(lab.Hosts)].Conn.Host.Repo
		git(b, clone, "worktree", "add", "-q", "--detach", fmt.Sprintf("%s.slot%d", clone, slot))
	}
	work := append([]string{"--will-cite", "-j", fmt.Sprint(2 * len(lab.Hosts)), script + " {} {%}", ":::"}, tasks...)
	workEnv := []string{"BENCH_REPO=" + w.repo, "BENCH_HOSTS=" + strings.Join(targets, " "), "BENCH_SSH=" + mux}
	parWall, err := runParallel(work, workEnv)
	if err != nil {
		b.Fatal(err)
	}
	walls["parallel-work"] += parWall
	// The bare command is a reference, not the target's comparison (that is the work above).
	// GNU parallel (20221122) with --controlmaster fails here at times on its own check of its
	// temp directory ("Cannot append to buffer file … Is the disk full?", the disk a third full),
	// with the tree before a change as with the one after: its figures are then left out, said.
	if parWall, err = runParallel(bare, nil); err != nil {
		b.Logf("the bare command's figures are left out: %v", err)
		walls["parallel-M failed"] = 1
	} else {
		walls["parallel-M"] += parWall
	}
	return wall, res
}

// runParallel runs GNU parallel with args (env added) and returns its wall time.
func runParallel(args, env []string) (time.Duration, error) {
	// Its own process group, its output to a file: --controlmaster leaves processes behind
	// that hold its output open (a pipe would never close); they go with the group.
	// A short temp directory: --controlmaster's sockets go there, and a socket's path must
	// fit in 108 bytes (in b.TempDir() they did not, and every job connected anew).
	tmp, err := os.MkdirTemp("", "fbp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("parallel", append([]string{"--tmpdir", tmp}, args...)...)
	cmd.Env = append(append(os.Environ(), "HOME="+tmp), env...)
	out, err := os.Create(filepath.Join(tmp, "parallel.out"))
	if err != nil {
		return 0, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out.Close()
	if err != nil {
		return 0, fmt.Errorf("parallel: %v: %s", err, readFile(out.Name()))
	}
	return wall, nil
}

// notCompleted is, for a benchmark's failure message, one line per task of st that did not
// complete (its status, where its last attempt ran, its error) followed by the run's log lines
// that name it, each line prefixed with "bench:" so that scripts/bench/swarm-run.sh, which
// filters go test's output, shows them.
func notCompleted(st *State, log string) string {
	var b strings.Builder
	for _, id := range st.Order {
		t := st.Tasks[id]
		if t.Status == Completed {
			continue
		}
		where, attempt := "", 0
		if t.Trace != nil {
			where, attempt = t.Trace.AgentID, t.Trace.Attempt
		}
		msg := ""
		if t.Error != nil {
			msg = t.Error.Type + ": " + t.Error.Message
		}
		fmt.Fprintf(&b, "\nbench: task %s %s (attempt %d on %q): %s", id, t.Status, attempt, where, oneLine(errors.New(msg)))
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, id+":") || strings.Contains(line, "-"+id+":") {
				fmt.Fprintf(&b, "\nbench:   %s", line)
			}
		}
	}
	return b.String()
}

// TestLostStartRunsElsewhere: the start of a task's attempt is lost with the connection before
// the host's dispatch began it (the hosts' dispatch exits 255, ssh's own failure, on the first
// launch: as when the ssh master died during the start). The run found the attempt never
// began there and runs the task on the other host at once; before, it read the host's records
// for ever, waiting for an attempt that did not exist (a 200-task benchmark on hosts hung until
// go test's timeout).
func TestLostStartRunsElsewhere(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 2, 1)
	tmp := t.TempDir()
	bin := execs[0].Conn.Host.Bin
	real := filepath.Join(bin, "dispatch.real")
	if err := os.Rename(filepath.Join(bin, "dispatch"), real); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(tmp, "lost")
	wrapper := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" __records "*|*" __serve "*|*" kill "*|*" version "*) exec %[1]q "$@" ;;
esac
if mkdir %[2]q 2>/dev/null; then
	cat >/dev/null
	exit 255
fi
exec %[1]q "$@"
`, real, mark)
	if err := os.WriteFile(filepath.Join(bin, "dispatch"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(tmp, "agents.log")
	cfg := w.config(t, fmt.Sprintf("name: lost start\ndefaults: {agent: fake, retries: 0, timeout: 600}\ntasks:\n  - {id: a, prompt: \"once:%s write:a.txt\", branch: a}\n", log), 0)
	cfg.Executors = []Executor{execs[0], execs[1]}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("no launch was lost: %v", err)
	}
	task := res.State.Tasks["a"]
	if task.Status != Completed || res.State.Status != ExecCompleted {
		t.Fatalf("task a: %s, the run %s (its context ended: %v)\n%s", task.Status, res.State.Status, ctx.Err(), w.log.String())
	}
	if runs := readFile(log); strings.Count(runs, "a start ") != 1 || strings.Contains(runs, "overlap") {
		t.Errorf("task a's agent ran other than once:\n%s", runs)
	}
	if tr := task.Trace; len(tr.Requeued) != 1 || tr.AgentHost == nil || *tr.AgentHost == tr.Requeued[0].AgentHost {
		t.Errorf("task a's trace %+v, want it re-queued once from the host that lost its start, completed on the other", tr)
	}
}

// TestHostTextPrintable: a host's text reaches neither the terminal nor the report raw. The
// host's dispatch refuses the first launch with an escape sequence on its stderr (a host error
// line), and the attempt that runs writes a result whose reason holds escape sequences (as the
// host's records say it); swarm run's log, its state and its markdown report (which swarm run
// history prints) hold the text without the sequences.
func TestHostTextPrintable(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 1, 1)
	tmp := t.TempDir()
	bin := execs[0].Conn.Host.Bin
	real := filepath.Join(bin, "dispatch.real")
	if err := os.Rename(filepath.Join(bin, "dispatch"), real); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(tmp, "refused")
	// The records verb's output has its reason's escapes as JSON's \u001b, which are ESC once
	// decoded: what a hostile host's records say.
	wrapper := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" __records "*) %[1]q "$@" | sed 's/"reason":"/"reason":"\\u001b]0;retitled\\u0007\\u001b[2Jcleared /'; exit 0 ;;
*" kill "*|*" version "*) exec %[1]q "$@" ;;
*" __serve "*) exit 2 ;; # as a dispatch older than the host's server: its records go through the sed above
esac
if mkdir %[2]q 2>/dev/null; then
	cat >/dev/null
	printf 'refused \033]0;retitled\007\033[2Jby the host\n' >&2
	exit 1
fi
printf 'launching \033]52;c;Y2xpcA==\007now\n' >&2
exec %[1]q "$@"
`, real, mark)
	if err := os.WriteFile(filepath.Join(bin, "dispatch"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(t, "name: hostile host\ndefaults: {agent: fake, retries: 1, timeout: 600}\ntasks:\n  - {id: a, prompt: \"fail\", branch: a}\n", 0)
	cfg.Executors = []Executor{execs[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	task := res.State.Tasks["a"]
	if task.Status != Failed || task.Error == nil || !strings.Contains(task.Error.Message, "cleared") {
		t.Fatalf("task a: %s, %+v; want failed with the host's reason\n%s", task.Status, task.Error, w.log.String())
	}
	p := Paths{Root: w.repo}
	report := readFile(p.Report(res.State.ExecutionID))
	for name, text := range map[string]string{"the run's log": w.log.String(), "the report": report, "the error": task.Error.Message, "the state": readFile(p.State())} {
		if strings.ContainsAny(text, "\x1b\x07") || strings.Contains(text, `\u001b`) || strings.Contains(text, `\u0007`) {
			t.Errorf("%s holds the host's control sequences:\n%q", name, text)
		}
	}
	for _, want := range []string{"refused by the host", "launching now"} {
		if !strings.Contains(w.log.String(), want) {
			t.Errorf("the run's log lacks the host's line %q (made printable):\n%s", want, w.log.String())
		}
	}
	if !strings.Contains(report, "cleared") {
		t.Errorf("the report lacks the host's reason:\n%s", report)
	}
}

// TestHostLostDuringPushRunsElsewhere: the host is cut off while the task's branch is pushed to
// it (its clone's pre-receive hook holds the push). The host is offline and the task runs on
// the other host, as docs/remote.md says, rather than failing (remote-failed).
func TestHostLostDuringPushRunsElsewhere(t *testing.T) {
	w := newWorld(t)
	lab, execs := labExecutors(t, w, 2, 1)
	tmp := t.TempDir()
	pushing := filepath.Join(tmp, "pushing")
	// The first push to reach a host is held there for ever, and says which clone it reached.
	hook := fmt.Sprintf("#!/bin/sh\nif mkdir %[1]q 2>/dev/null; then pwd > %[1]q/where; while :; do sleep 1; done; fi\n", pushing)
	for _, e := range execs {
		if err := os.WriteFile(filepath.Join(e.Conn.Host.Repo, ".git", "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(tmp, "agents.log")
	cfg := w.config(t, fmt.Sprintf("name: lost push\ndefaults: {agent: fake, retries: 0, timeout: 600}\ntasks:\n  - {id: a, prompt: \"once:%s write:a.txt\", branch: a}\n", log), 0)
	cfg.Executors = []Executor{execs[0], execs[1]}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(ctx, cfg)
		done <- ran{res, err}
	}()
	cut := ""
	for cut == "" {
		where, _ := os.ReadFile(filepath.Join(pushing, "where"))
		for i, e := range execs {
			if strings.HasPrefix(string(where), e.Conn.Host.Repo) {
				lab.Cut(t, i)
				cut = e.Host()
			}
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended before a push was held: %v\n%s", r.err, w.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, w.log.String())
	}
	task := r.res.State.Tasks["a"]
	if task.Status != Completed {
		t.Fatalf("task a: %s, %+v; want completed on the other host\n%s", task.Status, task.Error, w.log.String())
	}
	if tr := task.Trace; len(tr.Requeued) != 1 || tr.Requeued[0].AgentHost != cut || tr.AgentHost == nil || *tr.AgentHost == cut {
		t.Errorf("task a's trace %+v, want it re-queued once from %s and completed on the other host", tr, cut)
	}
	if runs := readFile(log); strings.Count(runs, "a start ") != 1 {
		t.Errorf("task a's agent ran other than once:\n%s", runs)
	}
}

// TestHostAgentOnItsOwnBranch: an agent on a host that switches to a branch of its own and
// commits there (as coding agents do) has its work on the task's branch here, as it would
// locally (TestAgentOnItsOwnBranch): the host's task branch is moved to the agent's commit
// before it is fetched, and commit_sha is on it. An agent whose branch does not descend from
// the task's (an orphan) fails its task with a reason naming both branches, and nothing is
// brought back from its worktree.
func TestHostAgentOnItsOwnBranch(t *testing.T) {
	w := newWorld(t)
	_, execs := labExecutors(t, w, 1, 2)
	doc := `name: switching agents on a host
defaults: {agent: fake, timeout: 600, retries: 0}
tasks:
  - {id: a, prompt: "switch:other commit:a.txt write:left.txt", branch: task-a}
  - {id: c, prompt: "orphan:stray commit:c.txt", branch: task-c}
`
	cfg := w.config(t, doc, 0)
	cfg.Executors = []Executor{execs[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	a := res.State.Tasks["a"]
	if a.Status != Completed || a.Trace == nil || a.Trace.CommitSHA == nil {
		t.Fatalf("a = %s, error %+v\n%s", a.Status, a.Error, w.log.String())
	}
	if _, err := gitCmd(ctx, w.repo, "merge-base", "--is-ancestor", *a.Trace.CommitSHA, "refs/heads/task-a"); err != nil {
		t.Errorf("a's commit_sha %s is not on its branch task-a: %v", *a.Trace.CommitSHA, err)
	}
	for file, want := range map[string]string{"a.txt": "a", "left.txt": "a"} {
		if out, err := gitCmd(ctx, w.repo, "show", "refs/heads/task-a:"+file); err != nil || strings.TrimSpace(out) != want {
			t.Errorf("task-a's %s = %q, %v; want the agent's work %q", file, out, err, want)
		}
	}
	if want := "a: the agent worked on branch other on h1; its commits are brought onto task-a"; !strings.Contains(w.log.String(), want) {
		t.Errorf("the run's log lacks %q:\n%s", want, w.log.String())
	}
	c := res.State.Tasks["c"]
	if c.Status != Failed || c.Error == nil || !strings.Contains(c.Error.Message, "branch stray") || !strings.Contains(c.Error.Message, "task-c") {
		t.Errorf("c = %s, error %+v; want failed naming stray and task-c\n%s", c.Status, c.Error, w.log.String())
	}
	if c.Trace != nil && c.Trace.CommitSHA != nil {
		t.Errorf("c records commit %s", *c.Trace.CommitSHA)
	}
	if out, err := gitCmd(ctx, w.repo, "show", "refs/heads/task-c:c.txt"); err == nil {
		t.Errorf("task-c holds the orphan's c.txt (%q): it was brought back", out)
	}
}
