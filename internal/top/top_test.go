package top_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/agentfleet/fleet/internal/top"
)

// The lab: the swarm binary (built once), a private $SWARM_DIR and tmux socket directory, and
// scripted agents (sh: they print, read lines, exit with a chosen code), as cmd/swarm's
// scripts use.

// swarmBin is the swarm binary; dispatch's and ralph's are beside it.
var swarmBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "top-bin")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if _, err := exec.LookPath("go"); err == nil {
			out, err := exec.Command("go", "build", "-o", dir, "github.com/agentfleet/fleet/cmd/swarm", "github.com/agentfleet/fleet/cmd/dispatch", "github.com/agentfleet/fleet/cmd/ralph").CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building swarm: %v\n%s", err, out)
				return 1
			}
			swarmBin = filepath.Join(dir, "swarm")
		}
		return sweep.Guard(m).Run()
	}()
	os.Exit(code)
}

type lab struct {
	t        *testing.T
	swarmDir string
	env      []string
	ws       string
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if testing.Short() || swarmBin == "" {
		t.Skip("needs the swarm binary and real agents")
	}
	root := t.TempDir()
	l := &lab{t: t, swarmDir: filepath.Join(root, "swarm"), ws: filepath.Join(root, "ws")}
	os.MkdirAll(l.ws, 0o700)
	tmuxDir := filepath.Join(root, "tmux")
	os.MkdirAll(tmuxDir, 0o700)
	l.env = append(os.Environ(), "SWARM_DIR="+l.swarmDir, "TMUX_TMPDIR="+tmuxDir, "STATE_DIR="+filepath.Join(l.ws, "state"))
	t.Cleanup(func() {
		l.swarm("kill", "--all")
		testenv.CombinedOutput(exec.Command("tmux", "-S", filepath.Join(tmuxDir, "tmux-"+fmt.Sprint(os.Getuid()), "top"), "kill-server"), testenv.CommandBound)
	})
	return l
}

func (l *lab) swarm(args ...string) string {
	c := exec.Command(swarmBin, args...)
	c.Env, c.Dir = l.env, l.ws
	out, err := testenv.CombinedOutput(c, testenv.CommandBound)
	if err != nil && args[0] != "kill" {
		l.t.Fatalf("swarm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (l *lab) model() *top.Model {
	m, err := top.Open(top.Sources{SwarmDir: l.swarmDir, StateDir: filepath.Join(l.ws, "state"), Workspace: l.ws})
	if err != nil {
		l.t.Fatal(err)
	}
	return m
}

// waitRow refreshes until a row named name satisfies ok (at most 10 s), and returns it.
func waitRow(t *testing.T, m *top.Model, kind top.Kind, name string, ok func(*top.Row) bool) *top.Row {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last []*top.Row
	for time.Now().Before(deadline) {
		rows, err := m.Refresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = rows
		for _, r := range rows {
			if r.Kind == kind && r.Name == name && ok(r) {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	t.Fatalf("no %s row %s as wanted within 10s; rows:\n%s", kind, name, b)
	return nil
}

func TestWorkersAndLoops(t *testing.T) {
	l := newLab(t)
	l.swarm("spawn", "--name", "live", "--tag", "backend", "--", "sh", "-c", "echo ready; exec cat")
	l.swarm("spawn", "--name", "ends", "--", "sh", "-c", "echo bye; exit 3")
	prompt := filepath.Join(l.ws, "PROMPT.md")
	os.WriteFile(prompt, []byte("do it\n"), 0o600)
	l.swarm("ralph", "spawn", "--name", "lp", "--prompt-file", prompt, "--max-iterations", "3", "--no-worktree",
		"--inactivity-timeout", "0", "--", "sh", "-c", "echo loop-agent; exec cat")
	m := l.model()

	live := waitRow(t, m, top.KindWorker, "live", func(r *top.Row) bool { return r.Live && r.LastLine == "ready" })
	if live.Status != "running" || live.Activity == "" || len(live.Tags) != 1 || live.Tags[0] != "backend" {
		t.Errorf("live worker: %+v", live)
	}
	ends := waitRow(t, m, top.KindWorker, "ends", func(r *top.Row) bool { return !r.Live && r.ExitCode != nil })
	if *ends.ExitCode != 3 || ends.Status != "stopped" || ends.ExitWords() != "3" {
		t.Errorf("ended worker: status %q exit %v words %q", ends.Status, *ends.ExitCode, ends.ExitWords())
	}
	lp := waitRow(t, m, top.KindLoop, "lp", func(r *top.Row) bool { return r.Live && r.Iteration == 1 })
	if lp.Source != "swarm" || lp.MaxIterations != 3 || lp.Status != "running" {
		t.Errorf("loop: %+v", lp)
	}
	rows, _ := m.Refresh(context.Background())
	for _, r := range rows {
		if r.Kind == top.KindWorker && r.Name == "lp" {
			t.Errorf("the loop's worker is listed apart from its loop")
		}
	}

	// The actions, through the libraries: the line reaches the agent; the loop pauses; the
	// worker is killed.
	if err := m.Send(context.Background(), live, "hello from top"); err != nil {
		t.Fatal(err)
	}
	waitRow(t, m, top.KindWorker, "live", func(r *top.Row) bool { return r.LastLine == "hello from top" })
	if err := m.Pause(context.Background(), lp); err != nil {
		t.Fatal(err)
	}
	waitRow(t, m, top.KindLoop, "lp", func(r *top.Row) bool { return r.Status == "paused" })
	if err := m.Kill(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	k := waitRow(t, m, top.KindWorker, "live", func(r *top.Row) bool { return !r.Live })
	if !strings.Contains(k.ExitWords(), "killed") {
		t.Errorf("killed worker's EXIT = %q, want the reason killed", k.ExitWords())
	}

	// Filters.
	rows, _ = m.Refresh(context.Background())
	if got := (top.Filter{Tag: "backend"}).Apply(rows); len(got) != 1 || got[0].Name != "live" {
		t.Errorf("Filter{Tag: backend} kept %d rows", len(got))
	}
	if got := (top.Filter{Kind: top.KindLoop}).Apply(rows); len(got) != 1 {
		t.Errorf("Filter{Kind: loop} kept %d rows", len(got))
	}
	if got := (top.Filter{Text: "BYE"}).Apply(rows); len(got) != 0 {
		t.Errorf("Filter{Text: BYE} kept %d rows (an ended row has no screen)", len(got))
	}
}

// The state files of the kinds whose agents are dispatched beads: a bead's records, an AIWG
// loop's state and a queue's claimed and done tasks, as their writers leave them.
func TestBeadsLoopsAndTasksFromState(t *testing.T) {
	ws := t.TempDir()
	stateDir := filepath.Join(ws, "state")
	writeBeads(t, stateDir, 3, time.Now())
	writeAIWG(t, ws, "ralph-fix-0123abcd", stateDir)
	writeQueue(t, ws, "plan1", 2)
	m, err := top.Open(top.Sources{StateDir: stateDir, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := m.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*top.Row{}
	for _, r := range rows {
		got[string(r.Kind)+"/"+r.Name] = r
	}
	if r := got["dispatch/bead-1"]; r == nil || r.Status != "done" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("bead-1: %+v", r)
	}
	if r := got["loop/ralph-fix-0123abcd"]; r == nil || r.Source != "aiwg" || r.Iteration != 2 || r.Cost == nil || *r.Cost != 1.5 {
		t.Errorf("AIWG loop: %+v", r)
	}
	if r := got["task/t1"]; r == nil || r.Status != store.Done || r.Cost == nil || *r.Cost != 0.25 {
		t.Errorf("task t1: %+v", r)
	}
	if r := got["task/t0"]; r == nil || r.Status != store.Claimed {
		t.Errorf("task t0: %+v", r)
	}
	// The AIWG loop's bead is its row's, not a dispatch of its own.
	if got["dispatch/"+aiwg.Bead("ralph-fix-0123abcd", 2)] != nil {
		t.Errorf("the AIWG loop's bead is listed as a dispatch too")
	}
}

func writeBeads(t testing.TB, stateDir string, n int, now time.Time) {
	st := record.Store{Dir: stateDir}
	for i := range n {
		bead := fmt.Sprintf("bead-%d", i)
		fin := now.UTC().Format(time.RFC3339)
		code := int64(0)
		dur := int64(5)
		run := &record.Run{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: "claude", Model: "sonnet", Repo: stateDir,
			Prompt: "p", PromptHash: strings.Repeat("0", 64), StartedAt: now.Add(-5 * time.Second).UTC().Format(time.RFC3339),
			FinishedAt: &fin, DurationSeconds: &dur, Status: record.StatusDone, Attempt: 1, MaxRetries: 2,
			SessionName: record.SessionName(bead), ResultFile: record.ResultFile(stateDir, bead), ExitCode: &code, PromptFull: "p"}
		if err := st.WriteRun(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		res := &record.Result{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: "claude", Status: record.StatusDone,
			Reason: "agent-exit-0", StartedAt: run.StartedAt, FinishedAt: &fin, DurationSeconds: &dur, Attempt: 1, MaxRetries: 2,
			ExitCode: &code, SessionName: run.SessionName}
		if err := st.WriteResult(context.Background(), res); err != nil {
			t.Fatal(err)
		}
	}
}

func writeAIWG(t testing.TB, ws, id, stateDir string) {
	w := aiwg.Workspace{Root: ws}
	if err := os.MkdirAll(w.LoopDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	st := &aiwg.State{Version: "2.0.0", LoopID: id, Status: "running", Iteration: 2, Task: "fix it", CompletionCriteria: "true",
		StartedAt: now, LastUpdated: now, Owner: "me", WorkingDirectory: ws, StateDir: stateDir,
		Configuration: aiwg.Configuration{MaxIterations: 5, CheckpointInterval: 1, ExecutionMode: "strict"},
		Metrics:       aiwg.Metrics{TotalCostUSD: 1.5}, Iterations: []aiwg.Iteration{}, Progress: aiwg.Progress{CompletionChecks: []aiwg.Check{}}}
	b, err := aiwg.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.StatePath(id), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeQueue(t testing.TB, ws, planID string, n int) {
	d := store.In(ws)
	if err := d.Mkdir(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var tasks []store.Task
	for i := range n {
		agentID := "agent-1"
		tk := store.Task{ID: fmt.Sprintf("t%d", i), Description: "task", Status: store.Claimed, ClaimedBy: &agentID,
			Dependencies: []string{}, CreatedAt: now, ClaimedAt: &now, Attempt: 1}
		if i%2 == 1 {
			tk.Status, tk.CompletedAt, tk.CostUSD = store.Done, &now, 0.25
		}
		tasks = append(tasks, tk)
	}
	if err := os.WriteFile(d.TaskQueue(planID), store.NewQueue(planID, now, tasks).Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Only the first refresh writes: a bead whose supervisor died after it is shown lost, its
// records left as they are (no lock taken, no record closed) for the dispatch verbs; a model
// opened anew (swarm top --once) closes it as dispatch ps does.
func TestRefreshDoesNotWrite(t *testing.T) {
	ws := t.TempDir()
	stateDir := filepath.Join(ws, "state")
	writeBeads(t, stateDir, 1, time.Now())
	m, err := top.Open(top.Sources{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A bead starts, and its supervisor dies without recording its end.
	bead := "lost-1"
	st := record.Store{Dir: stateDir}
	run := &record.Run{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: "claude", Model: "sonnet", Repo: stateDir,
		Prompt: "p", PromptHash: strings.Repeat("0", 64), StartedAt: time.Now().UTC().Format(time.RFC3339),
		Status: record.StatusRunning, Attempt: 1, MaxRetries: 2, SessionName: record.SessionName(bead),
		ResultFile: record.ResultFile(stateDir, bead), PromptFull: "p"}
	if err := st.WriteRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	l := supervise.Layout{Dir: stateDir}
	if err := l.WriteEntry(&supervise.Entry{Tool: "dispatch", Name: bead, Attempt: 1, PID: dead.Process.Pid,
		Backend: supervise.BackendProcess, StartedAt: run.StartedAt}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(st.RunPath(bead))
	if err != nil {
		t.Fatal(err)
	}

	rows, err := m.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var row *top.Row
	for _, r := range rows {
		if r.Name == bead {
			row = r
		}
	}
	if row == nil || row.Live || row.ExitWords() != "? "+supervise.ReasonLost {
		t.Errorf("the lost bead's row: %+v", row)
	}
	after, _ := os.ReadFile(st.RunPath(bead))
	if string(after) != string(before) {
		t.Errorf("a refresh rewrote the run record:\n%s", after)
	}
	if _, err := os.Lstat(l.LockPath(bead)); err == nil {
		t.Errorf("a refresh took the bead's lock (%s exists)", l.LockPath(bead))
	}
	if e, _ := l.ReadEntry(bead); e == nil {
		t.Errorf("a refresh removed the bead's registry entry")
	}

	// A new model's first refresh closes it.
	m2, _ := top.Open(top.Sources{StateDir: stateDir})
	m2.Refresh(context.Background())
	if r, err := record.ReadRun(st.RunPath(bead)); err != nil || r.Status == record.StatusRunning {
		t.Errorf("the first refresh of a new model did not close the lost bead: %v %+v", err, r)
	}
	// The first model reads the record again now that it changed (its parse is cached).
	rows, _ = m.Refresh(context.Background())
	for _, r := range rows {
		if r.Name == bead && r.Status != record.StatusFailed {
			t.Errorf("after its record was closed, the bead's row says %q", r.Status)
		}
	}
}

// TestWorkerWaitingForInput: a worker whose agent asks and waits is marked (WaitingInput, the
// ACTIVITY "input N"), and sorted first by activity; answered, it is not.
func TestWorkerWaitingForInput(t *testing.T) {
	l := newLab(t)
	l.swarm("spawn", "--name", "asks", "--", "sh", "-c", "printf 'Your name? '; read -r n; echo \"hello $n\"; exec sleep 600")
	l.swarm("spawn", "--name", "works", "--", "sh", "-c", "echo working; exec sleep 600")
	m := l.model()
	r := waitRow(t, m, top.KindWorker, "asks", func(r *top.Row) bool { return !r.WaitingInput.IsZero() })
	if words := r.ActivityWords(time.Now()); !strings.HasPrefix(words, top.InputMark+" ") {
		t.Errorf("ACTIVITY of a worker waiting for input = %q, want %q and how long", words, top.InputMark)
	}
	rows, _ := m.Refresh(context.Background())
	rows = (top.Filter{Kind: top.KindWorker}).Apply(rows)
	top.Sort(rows, "activity")
	if len(rows) != 2 || rows[0].Name != "asks" || !rows[1].WaitingInput.IsZero() {
		t.Errorf("by activity, the worker waiting for input is not alone first: %v", names(rows))
	}
	if err := m.Send(context.Background(), r, "top"); err != nil {
		t.Fatal(err)
	}
	waitRow(t, m, top.KindWorker, "asks", func(r *top.Row) bool { return r.WaitingInput.IsZero() && r.LastLine == "hello top" })
}

func names(rows []*top.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}
