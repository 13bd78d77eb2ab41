package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/executor"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

const labVersion = "sshlab-queue"

// gitIn runs git in dir and returns its output, trimmed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitx.Cmd{Dir: dir}.Output(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// labHosts makes w's repository a git repository and a lab of n sshd hosts of one agent each,
// each with a clone of it, our dispatch and the stand-in agent (labconn.Hosts); it returns the
// executor of each host.
func labHosts(t *testing.T, w *world, n int) (*sshlab.Lab, []*executor.Remote) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, n)
	gitIn(t, w.repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(w.repo, "README"), []byte("base\n"), 0o600)
	gitIn(t, w.repo, "add", "README")
	gitIn(t, w.repo, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "base")
	sh, _ := filepath.Abs("testdata/agent.sh")
	config := filepath.Join(t.TempDir(), "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, sh), 0o644)
	var execs []*executor.Remote
	for _, c := range labconn.Hosts(t, lab, w.repo, config, labVersion, 1) {
		execs = append(execs, &executor.Remote{Conn: c, Repo: w.repo, StateDir: w.stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second})
	}
	return lab, execs
}

// TestRunOnHostsOneCutOff: ralph queue run --hosts. Three tasks on two sshd hosts of one agent
// each; h1 is cut off while its agent works (and hangs: only its deadline there stops it).
// Every task is done exactly once: the one taken back from h1, pending again without a retry
// counted, runs on h2 only once its deadline on h1 has passed (no two agents of it ever alive
// at once); h1's agent ends; the records came back here, each task's branch agent/<bead> holds
// its work, and the queue's files keep to their schemas.
func TestRunOnHostsOneCutOff(t *testing.T) {
	tmp := t.TempDir()
	alog := filepath.Join(tmp, "agents.log")
	w := newWorld(t,
		fmt.Sprintf("t1: alone:%s hold:%s touch:t1.txt", alog, tmp),
		fmt.Sprintf("t2: alone:%s hold:%s touch:t2.txt", alog, tmp),
		fmt.Sprintf("t3: alone:%s touch:t3.txt (after t1, t2)", alog))
	lab, execs := labHosts(t, w, 2)
	log := newLogWatch()
	cfg := w.config(2, 2, log)
	cfg.Hosts, cfg.Worktree, cfg.Timeout = execs, true, 6*time.Second
	done := w.runAsync(cfg)
	// Both agents at work, one task on each host (whichever claimed which): h1's is cut off.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(readFile(alog), " start ") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the agents never started:\n%s\n%s", readFile(alog), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	onH1, agentH1 := "t1", "agent-1"
	if strings.Contains(readFile(alog), "t2 start h1-1") {
		onH1 = "t2"
	}
	if strings.Contains(log.String(), "agent-2: started "+onH1) {
		agentH1 = "agent-2"
	}
	lab.Cut(t, 0)
	os.WriteFile(filepath.Join(tmp, "go-h2"), nil, 0o600)
	var r ran
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", log)
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, log)
	}
	if r.res.Counts[store.Done] != 3 {
		t.Fatalf("counts %v, want 3 done\n%s\n%s", r.res.Counts, log, readFile(alog))
	}
	runs := readFile(alog)
	if strings.Contains(runs, "overlap") {
		t.Errorf("a task's agent started while another of it was alive:\n%s", runs)
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		if n := strings.Count(runs, id+" end "); n != 1 || !strings.Contains(runs, id+" end h2-1 0") {
			t.Errorf("task %s ended %d times, want once, on h2-1:\n%s\n%s", id, n, runs, log)
		}
		task := w.task(id)
		if task.Status != store.Done || task.Retries != 0 {
			t.Errorf("task %s: %s with %d retries, want done with none counted", id, task.Status, task.Retries)
		}
		bead := plan.Bead("p", id)
		if res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(bead)); err != nil || res.Status != record.StatusDone {
			t.Errorf("task %s's result record here: %+v, %v", id, res, err)
		}
		if got := gitIn(t, w.repo, "ls-tree", "--name-only", "agent/"+bead); !strings.Contains(got, id+".txt") {
			t.Errorf("branch agent/%s holds %q, want its %s.txt", bead, got, id)
		}
	}
	// The task on h1 went back to pending, held until its deadline there, and ran again after
	// it (the agents' overlap check above holds that).
	if !regexp.MustCompile(agentH1 + `: ` + onH1 + ` \(attempt 1\): host h1 went offline during attempt 1 .*; pending, held until \S+`).MatchString(log.String()) {
		t.Errorf("the log does not say %s was taken back from h1 and held:\n%s", onH1, log)
	}
	if !strings.Contains(log.String(), agentH1+": host h1 is offline: the agent ends") {
		t.Errorf("%s did not end with its host:\n%s", agentH1, log)
	}
	w.valid()
}

// ran is the end of a run started by runAsync.
type ran struct {
	res *Result
	err error
}

// runAsync starts the runner over cfg and returns where its end will be sent.
func (w *world) runAsync(cfg Config) <-chan ran {
	done := make(chan ran, 1)
	go func() {
		res, err := w.runE(context.Background(), cfg)
		done <- ran{res, err}
	}()
	return done
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// killedHostsRunnerVerb is a queue runner over the lab's hosts, for a test to SIGKILL:
// "BINARY __queue_hosts_runner REPO STATE_DIR AGENT_SH HOSTS_JSON TIMEOUT", HOSTS_JSON the
// hosts ([]remote.Host) in the order their executors are given; two agents, --worktree.
const killedHostsRunnerVerb = "__queue_hosts_runner"

func killedHostsRunnerMain(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: __queue_hosts_runner REPO STATE_DIR AGENT_SH HOSTS_JSON TIMEOUT")
		return 2
	}
	repo, stateDir, agentSh, hostsFile := args[0], args[1], args[2], args[3]
	timeout, err := time.ParseDuration(args[4])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	agents, err := agent.Parse(fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, agentSh))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	profile, err := agents.Lookup("fake")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	conns, err := labconn.Dial(hostsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var execs []*executor.Remote
	for _, c := range conns {
		execs = append(execs, &executor.Remote{Conn: c, Repo: repo, StateDir: stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second, Log: os.Stderr})
	}
	s := store.New(store.In(repo), "p")
	unlock, err := s.Dir.LockRunner(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer unlock()
	cfg := Config{Store: s, Agents: 2, Profile: profile, AgentName: "fake",
		Model: profile.Model("", func(string) string { return "" }), MaxRetries: 2,
		Repo: repo, StateDir: stateDir, Self: []string{os.Args[0], supervise.SuperviseVerb, "--state-dir", stateDir},
		Env: os.Environ(), Timeout: timeout, KillGrace: time.Second, MinFreeMB: 1, Log: os.Stderr,
		Hosts: execs, Worktree: true}
	if _, err := Run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "the run ended before it was killed")
	return 3
}

// TestRunOnHostsRestartedAfterSIGKILL: ralph queue run --hosts is SIGKILLed while its two
// agents work, one on each host; t1's agent ends while no runner is there (its records here,
// its branch not), t2's still works when the queue is run again. The restarted queue looks for
// each task's attempt on the host the agent's state names: t1's end is taken from there, t2's
// attempt waited for; both bring back their records and branch. Each agent ran exactly once, no retry counted (issue 18: the
// restarted queue held both tasks until their deadline on the hosts, then ran them again).
func TestRunOnHostsRestartedAfterSIGKILL(t *testing.T) {
	tmp := t.TempDir()
	alog, gate1, gate2 := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate1"), filepath.Join(tmp, "gate2")
	w := newWorld(t,
		fmt.Sprintf("t1: alone:%s until:%s touch:t1.txt", alog, gate1),
		fmt.Sprintf("t2: alone:%s until:%s touch:t2.txt", alog, gate2))
	_, execs := labHosts(t, w, 2)
	const timeout = 40 * time.Second
	var hosts []*remote.Host
	for _, e := range execs {
		hosts = append(hosts, e.Conn.Host)
	}
	hj := filepath.Join(tmp, "hosts.json")
	b, _ := json.Marshal(hosts)
	os.WriteFile(hj, b, 0o600)
	agentSh, _ := filepath.Abs("testdata/agent.sh")
	self, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	killed := exec.CommandContext(ctx, self, killedHostsRunnerVerb, w.repo, w.stateDir, agentSh, hj, timeout.String())
	first := newLogWatch()
	killed.Stderr = first
	killed.Env = testenv.KilledEnv(t)
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	// Both agents at work on their hosts: the runner is killed.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(readFile(alog), " start ") < 2 {
		if time.Now().After(deadline) {
			killed.Process.Kill()
			killed.Wait()
			t.Fatalf("the agents never started:\n%s\n%s", readFile(alog), first.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	for _, id := range []string{"t1", "t2"} {
		if task := w.task(id); task.Status != store.Claimed || task.Attempt != 1 {
			t.Fatalf("task %s after the kill: %s, attempt %d; want claimed, attempt 1\n%s", id, task.Status, task.Attempt, first.String())
		}
	}
	// t1's agent ends while no runner is there; its records come here, not its branch, as a
	// runner killed between the two leaves them.
	os.WriteFile(gate1, nil, 0o600)
	waitUntil(t, "t1's agent ends", func() bool { return strings.Contains(readFile(alog), "t1 end ") })
	on := execs[0].Conn.Host
	if !strings.Contains(readFile(alog), "t1 start h1-") {
		on = execs[1].Conn.Host
	}
	there, here := record.Store{Dir: on.StateDir}, record.Store{Dir: w.stateDir}
	waitUntil(t, "t1's end in its records on its host", func() bool {
		run, err := record.ReadRun(there.RunPath("p-t1"))
		_, rerr := os.Stat(there.ResultPath("p-t1"))
		return err == nil && run.Status != record.StatusRunning && rerr == nil
	})
	for _, path := range [][2]string{{there.RunPath("p-t1"), here.RunPath("p-t1")}, {there.ResultPath("p-t1"), here.ResultPath("p-t1")}} {
		b, err := os.ReadFile(path[0])
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(path[1]), 0o700)
		if err := os.WriteFile(path[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := newLogWatch()
	for _, e := range execs {
		e.Log = log
	}
	cfg := w.config(2, 2, log)
	cfg.Hosts, cfg.Worktree, cfg.Timeout = execs, true, timeout
	done := w.runAsync(cfg)
	// t2's attempt found at work on its host; then its agent may end. (Without the finding,
	// the gate opens after 20 s all the same, and the counts below tell.)
	var r ran
	ended := false
	for deadline := time.Now().Add(20 * time.Second); !ended && !strings.Contains(log.String(), "p-t2: attempt 1 of an earlier run still runs here") && time.Now().Before(deadline); {
		select {
		case r = <-done:
			ended = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	os.WriteFile(gate2, nil, 0o600)
	if !ended {
		select {
		case r = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the run did not end:\n%s", log)
		}
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, log)
	}
	runs := readFile(alog)
	if r.res.Counts[store.Done] != 2 {
		t.Fatalf("counts %v, want 2 done\n%s\n%s", r.res.Counts, log, runs)
	}
	if strings.Contains(runs, "overlap") {
		t.Errorf("a task's agent started while another of it was alive:\n%s", runs)
	}
	for _, id := range []string{"t1", "t2"} {
		if n, m := strings.Count(runs, id+" start "), strings.Count(runs, id+" end "); n != 1 || m != 1 || !regexp.MustCompile(id+` end h\d-1 0`).MatchString(runs) {
			t.Errorf("task %s's agent started %d times and ended %d times, want once, exit 0:\n%s\n%s", id, n, m, runs, log)
		}
		task := w.task(id)
		if task.Status != store.Done || task.Retries != 0 || task.Attempt != 1 {
			t.Errorf("task %s: %s, attempt %d, %d retries; want done, attempt 1, none counted", id, task.Status, task.Attempt, task.Retries)
		}
		bead := plan.Bead("p", id)
		if res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(bead)); err != nil || res.Status != record.StatusDone || res.Attempt != 1 {
			t.Errorf("task %s's result record here: %+v, %v", id, res, err)
		}
		if got := gitIn(t, w.repo, "ls-tree", "--name-only", "agent/"+bead); !strings.Contains(got, id+".txt") {
			t.Errorf("branch agent/%s holds %q, want its %s.txt", bead, got, id)
		}
	}
	if t.Failed() {
		t.Logf("restarted run:\n%s\nkilled run:\n%s", log, first.String())
	}
	w.valid()
}
