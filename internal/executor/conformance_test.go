package executor_test

// The conformance suite: one set of cases written against the Executor interface, run against
// every executor (this machine's, and a host of the test lab's sshd), as rclone runs one suite
// against every backend. A third executor passes this suite before a scheduler uses it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// TestLocalConformance runs the suite against this machine's executor.
func TestLocalConformance(t *testing.T) {
	w := newLocalWorld(t)
	conformance(t, w)
}

// TestRemoteConformance runs the suite against a host of the test lab's sshd (it needs root and
// sshd, and skips with one line without them), its dispatch built by the test.
func TestRemoteConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an sshd host in a network namespace")
	}
	w := newWorld(t)
	conns := labconn.Hosts(t, sshlab.New(t, 1), w.repo, w.agents, labVersion, 1)
	// The runner the adoption case kills dials the host itself.
	hosts := filepath.Join(t.TempDir(), "hosts.json")
	b, _ := json.Marshal([]*remote.Host{conns[0].Host})
	if err := os.WriteFile(hosts, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w.setup = setup{Kind: "remote", StateDir: w.stateDir, Repo: w.repo, Agents: w.agents, Hosts: hosts}
	conformance(t, w)
}

const labVersion = "sshlab-executor"

// conformance is the suite: each case one attempt of a task of its own (its branch
// agent/<case>, its worktree, its bead x-<case>) on a fresh executor of w's kind.
func conformance(t *testing.T, w *world) {
	e, err := w.setup.open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.setup.close(e) })
	run := func(ctx context.Context, j executor.Job) executor.Outcome {
		return e.Run(ctx, e.Slots()[0], j)
	}

	t.Run("slots", func(t *testing.T) {
		slots := e.Slots()
		if len(slots) != 1 || slots[0].ID == "" || e.Host() == "" {
			t.Fatalf("host %q, slots %+v: want one named slot", e.Host(), slots)
		}
	})

	t.Run("succeeds", func(t *testing.T) {
		j := w.job(t, "ok", "commit:ok.txt")
		out := run(context.Background(), j)
		if out.Status != record.StatusDone || out.Attempt != 1 || out.ExitCode == nil || *out.ExitCode != 0 || out.Interrupted || out.Offline != nil {
			t.Fatalf("outcome %+v, want attempt 1 done, exit 0", out)
		}
		if out.Finished.Before(out.Started) || out.Started.IsZero() {
			t.Errorf("started %s, finished %s", out.Started, out.Finished)
		}
		// The records come back here, and the agent's commit is on the task's branch here.
		if res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(j.Bead)); err != nil || res.Status != record.StatusDone || res.Attempt != 1 {
			t.Errorf("the result record here: %+v, %v", res, err)
		}
		if got := w.git(t, "show", "refs/heads/"+j.Branch+":ok.txt"); got != "ok" {
			t.Errorf("the task's branch's ok.txt = %q, want the agent's commit", got)
		}
	})

	t.Run("exits non-zero", func(t *testing.T) {
		out := run(context.Background(), w.job(t, "nonzero", "fail"))
		if out.Status != record.StatusFailed || out.ExitCode == nil || *out.ExitCode != 3 || out.Interrupted || out.Offline != nil {
			t.Fatalf("outcome %+v, want failed with exit 3", out)
		}
	})

	t.Run("fails to start", func(t *testing.T) {
		// An agent the agents config does not know: the attempt cannot run; no exit code.
		j := w.job(t, "unknown", "commit:x.txt")
		j.Agent = "unknown"
		out := run(context.Background(), j)
		// The reason says why: a host's dispatch's usage error is its message, not the hint
		// to run its --help that follows it.
		if out.Status != record.StatusFailed || out.ExitCode != nil || out.Interrupted || out.Offline != nil ||
			!strings.HasPrefix(out.Reason, "launch-failed: ") || !strings.Contains(out.Reason, `unknown agent "unknown"`) {
			t.Fatalf("outcome %+v, want failed, launch-failed: … unknown agent \"unknown\"", out)
		}
	})

	t.Run("missing agent command", func(t *testing.T) {
		j := w.job(t, "missing", "commit:x.txt")
		j.Agent = "missing"
		out := run(context.Background(), j)
		if out.Status != record.StatusFailed || (out.ExitCode != nil && *out.ExitCode == 0) || out.Interrupted || out.Offline != nil || out.Reason == "" {
			t.Fatalf("outcome %+v, want failed with a reason", out)
		}
	})

	t.Run("times out", func(t *testing.T) {
		pid := filepath.Join(t.TempDir(), "pid")
		j := w.job(t, "timeout", "pid:"+pid+" hang")
		j.Timeout = 2 * time.Second
		out := run(context.Background(), j)
		if out.Status != record.StatusTimeout || out.Interrupted || out.Offline != nil {
			t.Fatalf("outcome %+v, want timeout", out)
		}
		gone(t, pid)
	})

	t.Run("interrupted", func(t *testing.T) {
		pid := filepath.Join(t.TempDir(), "pid")
		j := w.job(t, "interrupted", "pid:"+pid+" hang")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan executor.Outcome, 1)
		go func() { done <- run(ctx, j) }()
		waitFile(t, pid, done)
		cancel()
		var out executor.Outcome
		select {
		case out = <-done:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after its context was cancelled")
		}
		if !out.Interrupted || out.Status == record.StatusDone || out.Offline != nil {
			t.Fatalf("outcome %+v, want interrupted", out)
		}
		// Interrupted means stopped: no agent of the attempt runs on.
		gone(t, pid)
	})

	t.Run("output bounded", func(t *testing.T) {
		out := run(context.Background(), w.job(t, "spew", "spew:5000"))
		if out.Status != record.StatusDone {
			t.Fatalf("outcome %+v, want done", out)
		}
		if len(out.Logs) > 4096 || !strings.HasSuffix(out.Logs, "the last line") {
			t.Fatalf("logs of %d bytes ending %q: want at most 4096 ending with the agent's last line", len(out.Logs), out.Logs[max(0, len(out.Logs)-40):])
		}
	})

	t.Run("adopted after the runner died", func(t *testing.T) {
		// A runner is SIGKILLed once its attempt is launched; the attempt's supervisor outlives
		// it, and the next runner's Run with Adopt waits for that attempt instead of starting
		// another: the agent runs once, and its end is the outcome.
		tmp := t.TempDir()
		log, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
		j := w.job(t, "adopted", fmt.Sprintf("once:%s waitfor:%s commit:adopted.txt", log, gate))
		n := w.killedRun(t, j, "launched")
		j.Adopt = n
		done := make(chan executor.Outcome, 1)
		go func() { done <- run(context.Background(), j) }()
		// Whatever Run does now, a second start of the agent shows in the log.
		os.WriteFile(gate, nil, 0o600)
		var out executor.Outcome
		select {
		case out = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("the adopting Run did not return")
		}
		if out.Status != record.StatusDone || out.Attempt != n {
			t.Fatalf("outcome %+v, want attempt %d done", out, n)
		}
		if got := readFile(log); strings.Count(got, "adopted start ") != 1 || strings.Contains(got, "overlap") {
			t.Fatalf("the agent's runs:\n%s\nwant one", got)
		}
		if got := w.git(t, "show", "refs/heads/"+j.Branch+":adopted.txt"); got != "adopted" {
			t.Errorf("the task's branch's adopted.txt = %q, want the agent's commit", got)
		}
	})

	t.Run("adopted after the runner died before the start", func(t *testing.T) {
		// The runner dies once the attempt is numbered, before anything of it started: the
		// next runner's Run with Adopt finds nothing of it at work, and runs the task (once).
		log := filepath.Join(t.TempDir(), "agents.log")
		j := w.job(t, "cut", fmt.Sprintf("once:%s commit:cut.txt", log))
		j.MaxAttempts = 2
		j.Adopt = w.killedRun(t, j, "numbered")
		out := run(context.Background(), j)
		if out.Status != record.StatusDone || out.Interrupted {
			t.Fatalf("outcome %+v, want done", out)
		}
		if got := readFile(log); strings.Count(got, "cut start ") != 1 {
			t.Fatalf("the agent's runs:\n%s\nwant one", got)
		}
		if got := w.git(t, "show", "refs/heads/"+j.Branch+":cut.txt"); got != "cut" {
			t.Errorf("the task's branch's cut.txt = %q, want the agent's commit", got)
		}
	})

	t.Run("adopted after it ended with no runner", func(t *testing.T) {
		// The agent ends while no runner is there: the next runner's Run with Adopt judges
		// that end (its records, its branch brought back) and starts nothing.
		tmp := t.TempDir()
		log, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
		j := w.job(t, "ended", fmt.Sprintf("once:%s waitfor:%s commit:ended.txt", log, gate))
		n := w.killedRun(t, j, "launched")
		os.WriteFile(gate, nil, 0o600)
		waitFor(t, log, "ended end ")
		j.Adopt = n
		out := run(context.Background(), j)
		if out.Status != record.StatusDone || out.Attempt != n || out.Interrupted {
			t.Fatalf("outcome %+v, want attempt %d done", out, n)
		}
		if got := readFile(log); strings.Count(got, "ended start ") != 1 {
			t.Fatalf("the agent's runs:\n%s\nwant one", got)
		}
		if got := w.git(t, "show", "refs/heads/"+j.Branch+":ended.txt"); got != "ended" {
			t.Errorf("the task's branch's ended.txt = %q, want the agent's commit", got)
		}
	})

	t.Run("interrupted while adopted", func(t *testing.T) {
		// The adopting Run's context ends while it waits for the earlier run's attempt: that
		// attempt is stopped as one of its own would be.
		pid := filepath.Join(t.TempDir(), "pid")
		j := w.job(t, "adoptstop", "pid:"+pid+" hang")
		n := w.killedRun(t, j, "launched")
		waitFile(t, pid, nil)
		j.Adopt = n
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan executor.Outcome, 1)
		go func() { done <- run(ctx, j) }()
		cancel()
		var out executor.Outcome
		select {
		case out = <-done:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after its context was cancelled")
		}
		if !out.Interrupted || out.Status == record.StatusDone || out.Offline != nil {
			t.Fatalf("outcome %+v, want interrupted", out)
		}
		gone(t, pid)
	})
}

// waitFor waits until the file at path holds text.
func waitFor(t *testing.T, path, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(readFile(path), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q:\n%s", path, text, readFile(path))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// world is a repository with a main branch, a state directory, the stand-in agent's config,
// and how to make the executor under test.
type world struct {
	repo, stateDir, agents string
	setup                  setup
}

// newLocalWorld is a world whose executor under test is this machine's.
func newLocalWorld(t *testing.T) *world {
	w := newWorld(t)
	w.setup = setup{Kind: "local", StateDir: w.stateDir, Repo: w.repo, Agents: w.agents, Self: w.self()}
	return w
}

// self is the supervisor verb's command line of this test binary, on the world's records.
func (w *world) self() []string {
	exe, _ := os.Executable()
	return []string{exe, supervise.SuperviseVerb, "--state-dir", w.stateDir}
}

func newWorld(t *testing.T) *world {
	tmp := t.TempDir()
	w := &world{repo: filepath.Join(tmp, "repo"), stateDir: filepath.Join(tmp, "state"), agents: filepath.Join(tmp, "agents.json")}
	os.MkdirAll(w.repo, 0o700)
	w.git(t, "init", "-q", "-b", "main")
	w.git(t, "config", "user.email", "test@example.com")
	w.git(t, "config", "user.name", "test")
	os.WriteFile(filepath.Join(w.repo, "README"), []byte("base\n"), 0o600)
	w.git(t, "add", "-A")
	w.git(t, "commit", "-q", "-m", "base")
	sh, _ := filepath.Abs("testdata/agent.sh")
	os.WriteFile(w.agents, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}, "missing": {"command": "/nonexistent/agent-command", "terminal": false}}`, sh), 0o600)
	return w
}

func (w *world) git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := git.Cmd{Dir: w.repo}.Output(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// job is an attempt of task name, its worktree made on its branch from main as a scheduler
// makes it.
func (w *world) job(t *testing.T, name, prompt string) executor.Job {
	t.Helper()
	branch := "agent/" + name
	dir := filepath.Join(filepath.Dir(w.repo), "wt", name)
	w.git(t, "worktree", "add", "-q", "-b", branch, dir, "main")
	return jobSpec{Task: name, Branch: branch, Dir: dir, Prompt: prompt}.job()
}

// killedRun runs j in a runner that SIGKILLs itself at step ("numbered", "launched"), and
// returns the attempt's number.
func (w *world) killedRun(t *testing.T, j executor.Job, step string) int {
	t.Helper()
	s, _ := json.Marshal(w.setup)
	js, _ := json.Marshal(jobSpec{Task: j.Task, Branch: j.Branch, Dir: j.Dir, Prompt: j.Prompt})
	self, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, killedRunVerb, string(s), string(js), step)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = testenv.KilledEnv(t)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the runner was not killed at %s: %v\n%s%s", step, err, stdout.String(), stderr.String())
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(stdout.String()), "launched "))
	if err != nil || n < 1 {
		t.Fatalf("the killed runner said %q", stdout.String())
	}
	return n
}

// setup says how to make an executor of a kind, in this process or in a runner the test starts.
type setup struct {
	Kind     string   // "local" or "remote"
	StateDir string   // the records' directory here
	Repo     string   // the repository the task's branches are in
	Agents   string   // the agents config (JSON)
	Self     []string // local: the supervisor verb's command line
	Hosts    string   // remote: the host, a JSON []*remote.Host
}

func (s setup) open() (executor.Executor, error) {
	switch s.Kind {
	case "local":
		b, err := os.ReadFile(s.Agents)
		if err != nil {
			return nil, err
		}
		agents, err := agent.Parse(b)
		if err != nil {
			return nil, err
		}
		return &executor.Local{N: 1, StateDir: s.StateDir, Self: s.Self, Agents: agents, KillGrace: time.Second,
			HostName: "testhost", Template: "conformance"}, nil
	case "remote":
		conns, err := labconn.Dial(s.Hosts)
		if err != nil {
			return nil, err
		}
		// The lab's host answers at once: OfflineAfter is generous, so that a busy machine is
		// not taken for a host gone.
		r := &executor.Remote{Conn: conns[0], Repo: s.Repo, StateDir: s.StateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 20 * time.Second, KillGrace: time.Second, Log: os.Stderr}
		return r, nil
	}
	return nil, fmt.Errorf("no executor of kind %q", s.Kind)
}

func (s setup) close(e executor.Executor) {
	if r, ok := e.(*executor.Remote); ok {
		r.Conn.Close()
	}
}

// jobSpec is what of a Job crosses to a runner the test starts.
type jobSpec struct {
	Task, Branch, Dir, Prompt string
}

func (j jobSpec) job() executor.Job {
	return executor.Job{Task: j.Task, Bead: "x-" + j.Task, Agent: "fake", Prompt: j.Prompt, Dir: j.Dir,
		Branch: j.Branch, MaxAttempts: 1, Env: []string{"SWARM_TASK_ID=" + j.Task}}
}

// waitFile waits until path exists (the agent's signal that it runs); done, when it receives
// first, is an attempt that ended before that.
func waitFile(t *testing.T, path string, done <-chan executor.Outcome) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case out := <-done:
			t.Fatalf("the attempt ended before its agent ran: %+v", out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never wrote %s", path)
		}
	}
}

// gone checks that the agent whose pid is in the file pidFile is not alive (soon: its
// supervisor reaps it).
func gone(t *testing.T, pidFile string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(pidFile)))
	if err != nil {
		t.Fatalf("the agent's pid file: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the agent (pid %d) still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
