package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/agentfleet/fleet/internal/tmux"
)

// fleet is a private dispatch installation for the Go tests and benchmarks: the real binary,
// a private tmux server, an agents config with the stand-in agents, a state directory and a git
// repository. Its cleanup stops every supervisor still running, then the tmux server.
type fleet struct {
	tb     testing.TB
	bin    string
	state  string // the state directory
	repo   string // a git repository
	socket string
	env    []string
}

// dispatchBinary is the dispatch program the tests run: $DISPATCH_BIN when set (the bench
// script's bin/dispatch), else the copy of this test binary that testscript.Main put on PATH
// as "dispatch" (TestMain), else one built now.
func dispatchBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("DISPATCH_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			tb.Fatalf("DISPATCH_BIN: %v", err)
		}
		return abs
	}
	if p, err := exec.LookPath(tool); err == nil {
		return p
	}
	bin := filepath.Join(tb.TempDir(), tool)
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// newFleet sets up a fleet whose state directory and repository are under root (a new
// temporary directory when root is empty). repoRoot, when set, holds the repository instead.
func newFleet(tb testing.TB, root, repoRoot string) *fleet {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		tb.Skip("tmux not installed")
	}
	if testing.Short() {
		tb.Skip("needs tmux") // make test-short leaves out what starts agents in tmux
	}
	if root == "" {
		root = tb.TempDir()
	}
	if repoRoot == "" {
		repoRoot = root
	}
	f := &fleet{tb: tb, bin: dispatchBinary(tb), state: filepath.Join(root, "state"), repo: filepath.Join(repoRoot, "repo")}
	if err := gitRepo(f.repo); err != nil {
		tb.Fatal(err)
	}
	// tmux socket paths must be short (about 100 bytes): a test's temporary directory is too deep.
	sockDir, err := os.MkdirTemp("", "dsp")
	if err != nil {
		tb.Fatal(err)
	}
	f.socket = filepath.Join(sockDir, "s")
	tb.Cleanup(func() {
		// A failed test shows its agents' logs, supervisors and panes before they go.
		postmortem.OnFailure(tb, root, f.socket)
		f.stopAll()
		(&tmux.Client{Socket: f.socket}).KillServer(context.Background())
		os.RemoveAll(sockDir)
	})

	agentPath, _ := filepath.Abs("testdata/agent.sh")
	stampPath, _ := filepath.Abs("testdata/stamp-agent.sh")
	config := filepath.Join(tb.TempDir(), "agents.json")
	cfg := fmt.Sprintf(`{"fake": {"command": %q, "default_model": "m1"}, "stamp": {"command": %q, "default_model": "m1"}}`,
		agentPath, stampPath)
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DISPATCH_") || strings.HasPrefix(kv, "STATE_DIR=") || strings.HasPrefix(kv, "CONFIG_FILE=") {
			continue // the caller's own dispatch settings must not leak in
		}
		f.env = append(f.env, kv)
	}
	f.env = append(f.env, "CONFIG_FILE="+config, "DISPATCH_TMUX_SOCKET="+f.socket, "STATE_DIR="+f.state,
		"DISPATCH_KILL_GRACE=1", "DISPATCH_MIN_FREE_MB=1")
	return f
}

// command is `dispatch args...` in the fleet's environment, with extra variables.
func (f *fleet) command(extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = append(append([]string(nil), f.env...), extraEnv...)
	cmd.Dir = filepath.Dir(f.state)
	return cmd
}

// dispatch runs `dispatch args...` to its end and returns its exit code, stdout and stderr.
func (f *fleet) dispatch(extraEnv []string, args ...string) (int, string, string) {
	f.tb.Helper()
	cmd := f.command(extraEnv, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			f.tb.Fatalf("dispatch %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

func (f *fleet) store() record.Store { return record.Store{Dir: f.state} }

func (f *fleet) layout() supervise.Layout { return supervise.Layout{Dir: f.state} }

// waitFinal waits until bead's result record is final and returns it.
func (f *fleet) waitFinal(bead string, limit time.Duration) *record.Result {
	f.tb.Helper()
	deadline := time.Now().Add(limit)
	last := "(no record)"
	for {
		r, err := record.ReadResult(f.store().ResultPath(bead))
		if err == nil {
			if r.Status != record.StatusRunning {
				return r
			}
			last = r.Status
		}
		if time.Now().After(deadline) {
			f.tb.Fatalf("%s: result still %s after %s", bead, last, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAgent waits until bead's agent has started (its first line is in the log); an attempt
// that ends first fails the test at once, with how it ended (and the post-mortem).
func (f *fleet) waitAgent(bead string, limit time.Duration) {
	f.tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(f.layout().LogPath(bead)); err == nil && bytes.Contains(b, []byte("agent: pid ")) {
			return
		}
		if r, err := record.ReadResult(f.store().ResultPath(bead)); err == nil && r.Status != record.StatusRunning {
			if b, err := os.ReadFile(f.layout().LogPath(bead)); err == nil && bytes.Contains(b, []byte("agent: pid ")) {
				return // it started, and ended, between the two reads
			}
			f.tb.Fatalf("%s: the attempt ended (%s, %s) before its agent's first line", bead, r.Status, r.Reason)
		}
		if time.Now().After(deadline) {
			f.tb.Fatalf("%s: the agent did not start within %s", bead, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopAll stops every supervisor of the fleet that is still running and waits for it to be
// gone, so nothing writes into the state directory while it is being removed.
func (f *fleet) stopAll() {
	entries, _ := filepath.Glob(filepath.Join(f.state, "supervisors", "*.json"))
	var pids []int
	for _, p := range entries {
		if strings.HasSuffix(p, ".spec.json") {
			continue
		}
		e, err := f.layout().ReadEntry(strings.TrimSuffix(filepath.Base(p), ".json"))
		if err != nil || e == nil || !supervise.SupervisorAlive(e.PID, e.Name) {
			continue
		}
		syscall.Kill(e.PID, syscall.SIGTERM)
		pids = append(pids, e.PID)
		if e.AgentPID > 0 {
			defer syscall.Kill(-e.AgentPID, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && supervisorProcess(pid) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// supervisorProcess reports whether pid is a live (not zombie) supervisor process.
func supervisorProcess(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(supervise.SuperviseVerb))
}

// sessionWatcher collects the names of every session seen on the fleet's tmux server.
type sessionWatcher struct {
	mu   sync.Mutex
	seen map[string]bool
	stop chan struct{}
	done chan struct{}
}

func (f *fleet) watchSessions() *sessionWatcher {
	w := &sessionWatcher{seen: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	c := &tmux.Client{Socket: f.socket}
	go func() {
		defer close(w.done)
		for {
			names, _ := c.ListSessions(context.Background())
			w.mu.Lock()
			for _, n := range names {
				w.seen[n] = true
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *sessionWatcher) Stop() map[string]bool {
	close(w.stop)
	<-w.done
	return w.seen
}

// checkRecords checks that every run and result record of the state directory satisfies its
// embedded schema and that no temporary file was left behind; it returns them by bead.
func checkRecords(tb testing.TB, state string) (runs map[string]*record.Run, results map[string]*record.Result) {
	tb.Helper()
	runs, results = map[string]*record.Run{}, map[string]*record.Result{}
	for kind, sub := range map[string]string{"run": "runs", "result": "results"} {
		s, err := schema.Load(kind, "")
		if err != nil {
			tb.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(state, sub))
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasSuffix(name, ".lock") {
				continue // the records' sidecar locks
			}
			if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
				tb.Errorf("%s/%s: a stray file (a torn or abandoned write?)", sub, name)
				continue
			}
			b, err := os.ReadFile(filepath.Join(state, sub, name))
			if err != nil {
				tb.Fatal(err)
			}
			problems, err := s.Validate(b)
			if err != nil || len(problems) > 0 {
				tb.Errorf("%s/%s does not satisfy the %s schema: %v %v\n%s", sub, name, kind, problems, err, b)
				continue
			}
			bead := strings.TrimSuffix(name, ".json")
			if kind == "run" {
				var r record.Run
				if err := json.Unmarshal(b, &r); err != nil {
					tb.Fatalf("%s/%s: %v", sub, name, err)
				}
				runs[bead] = &r
			} else {
				var r record.Result
				if err := json.Unmarshal(b, &r); err != nil {
					tb.Fatalf("%s/%s: %v", sub, name, err)
				}
				results[bead] = &r
			}
		}
	}
	return runs, results
}

// leftovers lists what the supervisors left in state/supervisors (entries, specs, reserves),
// once they have had up to limit to finish: a supervisor removes its entry just after writing
// its final records.
func leftovers(state string, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		entries, _ := os.ReadDir(filepath.Join(state, "supervisors"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) == 0 || time.Now().After(deadline) {
			return names
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var watcherPID = regexp.MustCompile(`(?m)^Agent dispatched\. Background watcher PID: (\d+)$`)

// TestConcurrentDispatches starts 50 dispatches of 50 beads at once against one state directory
// and one tmux server: 50 sessions, 100 valid records, each attempt counted once.
func TestConcurrentDispatches(t *testing.T) {
	t.Parallel()
	const n = 50
	f := newFleet(t, "", "")
	watch := f.watchSessions()

	type outcome struct{ stdout, stderr bytes.Buffer }
	outs := make([]*outcome, n)
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		outs[i] = &outcome{}
		cmds[i] = f.command(nil, fmt.Sprintf("bd-%02d", i+1), f.repo, "fake", fmt.Sprintf("SAY=hello-%02d SLEEP=1", i+1))
		cmds[i].Stdout, cmds[i].Stderr = &outs[i].stdout, &outs[i].stderr
	}
	for i, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting dispatch %d: %v", i+1, err)
		}
	}
	pids := map[string]bool{}
	for i, cmd := range cmds {
		err := cmd.Wait()
		if err != nil {
			t.Errorf("dispatch bd-%02d: %v\nstdout:\n%s\nstderr:\n%s", i+1, err, &outs[i].stdout, &outs[i].stderr)
			continue
		}
		m := watcherPID.FindStringSubmatch(outs[i].stdout.String())
		if m == nil {
			t.Errorf("dispatch bd-%02d printed no supervisor pid:\n%s", i+1, &outs[i].stdout)
			continue
		}
		pids[m[1]] = true
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(pids) != n {
		t.Errorf("%d distinct supervisor pids, want %d", len(pids), n)
	}

	for i := 1; i <= n; i++ {
		f.waitFinal(fmt.Sprintf("bd-%02d", i), 90*time.Second)
	}
	seen := watch.Stop()
	for i := 1; i <= n; i++ {
		if s := fmt.Sprintf("agent-bd-%02d", i); !seen[s] {
			t.Errorf("session %s was never seen on the tmux server", s)
		}
	}
	if len(seen) != n {
		t.Errorf("%d sessions seen, want %d: %v", len(seen), n, keys(seen))
	}

	runs, results := checkRecords(t, f.state)
	if len(runs)+len(results) != 2*n {
		t.Errorf("%d run and %d result records, want %d of each", len(runs), len(results), n)
	}
	for i := 1; i <= n; i++ {
		bead := fmt.Sprintf("bd-%02d", i)
		run, res := runs[bead], results[bead]
		if run == nil || res == nil {
			t.Errorf("%s: a record is missing (run %v, result %v)", bead, run != nil, res != nil)
			continue
		}
		if run.Attempt != 1 || res.Attempt != 1 {
			t.Errorf("%s: attempt %d (run) and %d (result), want 1", bead, run.Attempt, res.Attempt)
		}
		if res.Status != record.StatusDone || run.Status != record.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Errorf("%s: status %s/%s, reason %s, want done with exit 0", bead, run.Status, res.Status, res.Reason)
		}
		if res.Bead != bead || run.Bead != bead || res.SessionName != "agent-"+bead {
			t.Errorf("%s: records of another bead: run %s, result %s (%s)", bead, run.Bead, res.Bead, res.SessionName)
		}
		// Each agent's own output, and no other's, made it into its records.
		if run.OutputSummary == nil || !strings.Contains(*run.OutputSummary, fmt.Sprintf("agent says: hello-%02d", i)) {
			t.Errorf("%s: output summary %v lacks the agent's words", bead, run.OutputSummary)
		}
	}
	if _, err := os.Stat(filepath.Join(f.state, "attempts")); err == nil {
		t.Errorf("state/attempts exists after first attempts only")
	}
	if l := leftovers(f.state, 10*time.Second); len(l) > 0 {
		t.Errorf("state/supervisors still holds %v", l)
	}
}

// TestConcurrentDispatchesOfOneBead starts 20 dispatches of the same bead at once: one starts
// the agent, the others are refused, and the attempt is counted once.
func TestConcurrentDispatchesOfOneBead(t *testing.T) {
	t.Parallel()
	const n = 20
	f := newFleet(t, "", "")
	type outcome struct {
		code           int
		stdout, stderr string
	}
	outs := make(chan outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, stdout, stderr := f.dispatch(nil, "bd-same", f.repo, "fake", "SAY=once HANG")
			outs <- outcome{code, stdout, stderr}
		}()
	}
	close(start)
	wg.Wait()
	close(outs)
	started := 0
	for o := range outs {
		switch {
		case o.code == 0:
			started++
			if !strings.Contains(o.stdout, "Attempt: 1/2") {
				t.Errorf("the dispatch that started did not start attempt 1:\n%s", o.stdout)
			}
		case o.code == 1 && strings.Contains(o.stderr, "agent-bd-same is still running (attempt 1)"):
		default:
			t.Errorf("dispatch exited %d, want 0 or 1 with \"still running\":\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
		}
	}
	if started != 1 {
		t.Fatalf("%d dispatches started an agent, want exactly 1", started)
	}

	f.waitAgent("bd-same", 30*time.Second)
	code, stdout, stderr := f.dispatch(nil, "kill", "bd-same")
	if code != 0 {
		t.Fatalf("dispatch kill: exit %d\n%s%s", code, stdout, stderr)
	}
	res := f.waitFinal("bd-same", 30*time.Second)
	if res.Attempt != 1 || res.Status != record.StatusFailed || res.Reason != supervise.ReasonKilled {
		t.Errorf("final result: attempt %d, %s (%s); want attempt 1, failed (killed)", res.Attempt, res.Status, res.Reason)
	}
	runs, results := checkRecords(t, f.state)
	if len(runs) != 1 || len(results) != 1 || runs["bd-same"] == nil || runs["bd-same"].Attempt != 1 {
		t.Errorf("records: %d runs, %d results, want one of each for attempt 1", len(runs), len(results))
	}
	// One agent ran: its log says so once.
	b, err := os.ReadFile(f.layout().LogPath("bd-same"))
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(b), "agent: pid "); c != 1 {
		t.Errorf("the log shows %d agents started, want 1:\n%s", c, b)
	}
	// No attempt was archived, so none was counted twice.
	if a, err := os.ReadDir(record.Store{Dir: f.state}.AttemptsDir("bd-same")); err == nil && len(a) > 0 {
		var names []string
		for _, e := range a {
			names = append(names, e.Name())
		}
		t.Errorf("state/attempts/bd-same holds %v, want nothing", names)
	}
	if l := leftovers(f.state, 10*time.Second); len(l) > 0 {
		t.Errorf("state/supervisors still holds %v", l)
	}
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
