package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// runRecord is the run record of bead's attempt n as Launch writes it, then ended with status.
func runRecord(stateDir, bead string, n int, status string) record.Run {
	started := record.FormatTime(time.Now().Add(-time.Minute))
	r := record.Run{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: "fake", Model: "m", Repo: "/repo",
		Prompt: "p", PromptHash: record.PromptHash("p"), PromptFull: "p", StartedAt: started, Status: record.StatusRunning,
		Attempt: n, MaxRetries: 3, SessionName: record.SessionName(bead), ResultFile: record.ResultFile(stateDir, bead)}
	if status != record.StatusRunning {
		out := &supervise.Outcome{Status: status, Reason: "agent-exit-0", Finished: time.Now()}
		if status != record.StatusDone {
			out.ExitCode, out.Reason = 3, "agent-exit-3"
		}
		r, _ = attempt.Complete(r, out, nil)
	}
	return r
}

// TestRecoverSettlesWhatADeadRunnerLeft: a claim never launched goes back to pending; one whose
// attempt ended done while no runner watched is done (its cost read from its log), not run
// again; one whose supervisor died without recording is closed as lost and counts as a failed
// attempt (retry queue); a claim whose supervisor is alive is handed back to be waited for. One
// whose launch was cut short (registered, never handed to a supervisor: its agent never ran)
// goes back to pending, no try counted, as executor.Local's adoption has it (before, it was
// closed as lost and counted).
func TestRecoverSettlesWhatADeadRunnerLeft(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	stateDir := filepath.Join(tmp, "state")
	d := attempt.NewDir(stateDir)
	os.MkdirAll(stateDir, 0o700)
	s := store.New(store.In(tmp), "p")
	a1, a2, a3, a4, a5 := "agent-1", "agent-2", "agent-3", "agent-4", "agent-5"
	at := record.FormatTime(time.Now())
	tasks := []store.Task{
		{ID: "never", ClaimedBy: &a1, Attempt: 2}, // its records are attempt 1's: never launched
		{ID: "ended", ClaimedBy: &a2, Attempt: 1},
		{ID: "lost", ClaimedBy: &a3, Attempt: 1},
		{ID: "alive", ClaimedBy: &a4, Attempt: 1},
		{ID: "cut", ClaimedBy: &a5, Attempt: 1},
	}
	err := s.Update(ctx, func(tx *store.Tx) error {
		q := store.NewQueue("p", at, nil)
		for _, task := range tasks {
			task.Description, task.Status, task.Dependencies, task.CreatedAt, task.ClaimedAt = "d", store.Claimed, []string{}, at, &at
			q.Put(task)
		}
		tx.SetQueue(q)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	write := func(r record.Run) {
		if err := d.Store.WriteRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	write(runRecord(stateDir, "p-never", 1, record.StatusFailed))
	write(runRecord(stateDir, "p-ended", 1, record.StatusDone))
	os.MkdirAll(filepath.Join(stateDir, "logs"), 0o700)
	os.WriteFile(d.Layout.LogPath("p-ended"), []byte(`{"type":"result","total_cost_usd":0.25}`+"\n"), 0o600)
	lost := runRecord(stateDir, "p-lost", 1, record.StatusRunning)
	write(lost)
	// Its supervisor registered, dead since (a process that exited).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	d.Layout.WriteEntry(&supervise.Entry{Tool: attempt.Tool, Name: "p-lost", Attempt: 1, PID: gone.Process.Pid, StartedAt: lost.StartedAt})
	// Registered launching (pid 0), and no supervisor of it ever started.
	cut := runRecord(stateDir, "p-cut", 1, record.StatusRunning)
	write(cut)
	d.Layout.WriteEntry(&supervise.Entry{Tool: attempt.Tool, Name: "p-cut", Attempt: 1, StartedAt: cut.StartedAt})
	// A live one: a shell stands in, its command line holding the verb and the bead as a
	// supervisor's does.
	alive := runRecord(stateDir, "p-alive", 1, record.StatusRunning)
	write(alive)
	sup := exec.Command("sh", "-c", "sleep 30; :", supervise.SuperviseVerb, "p-alive")
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sup.Process.Kill(); sup.Wait() }()
	d.Layout.WriteEntry(&supervise.Entry{Tool: attempt.Tool, Name: "p-alive", Attempt: 1, PID: sup.Process.Pid, StartedAt: alive.StartedAt})

	r := &runner{cfg: Config{Store: s, Agents: 2, Profile: &agent.Profile{Name: "fake"}, MaxRetries: 3, StateDir: stateDir},
		plan: "p", dir: d}
	adopted, err := r.recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := adopted[a4]; len(adopted) != 1 || c == nil || c.task.ID != "alive" || c.attempt != 1 {
		t.Errorf("adopted %v, want alive's claim for %s", adopted, a4)
	}
	q, _ := s.View()
	want := map[string]struct {
		status  string
		retries int
	}{"never": {store.Pending, 0}, "ended": {store.Done, 0}, "lost": {store.Pending, 1}, "alive": {store.Claimed, 0},
		"cut": {store.Pending, 0}}
	for id, w := range want {
		got, _ := q.Get(id)
		if got.Status != w.status || got.Retries != w.retries {
			t.Errorf("%s: %s with %d retries, want %s with %d", id, got.Status, got.Retries, w.status, w.retries)
		}
	}
	if ended, _ := q.Get("ended"); ended.CostUSD != 0.25 {
		t.Errorf("ended's cost = %v, want 0.25 from its log", ended.CostUSD)
	}
	rq, _ := s.ViewRetry()
	if len(rq.Retries) != 1 || rq.Retries[0].TaskID != "lost" || rq.Retries[0].AgentID != a3 || !strings.Contains(rq.Retries[0].Error, supervise.ReasonLost) {
		t.Errorf("retry queue = %+v, want lost's failure", rq.Retries)
	}
	p, _ := s.ViewProgress()
	if p.TotalCostUSD != 0.25 {
		t.Errorf("progress total = %v, want 0.25", p.TotalCostUSD)
	}
	for _, name := range []string{store.KindTaskQueue, store.KindRetryQueue, store.KindProgress} {
		path := map[string]string{store.KindTaskQueue: s.Dir.TaskQueue("p"), store.KindRetryQueue: s.Dir.RetryQueue("p"), store.KindProgress: s.Dir.Progress("p")}[name]
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Check(name, doc); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// TestRecoverHoldsARemoteClaim: with --hosts, a claim a dead runner left whose records never
// came back here (its agent may still run on its host until its deadline there) goes back to
// pending held until that deadline (claim time + timeout + kill grace + 2 s), so that no other
// agent of it starts meanwhile; one claimed long ago is not held.
func TestRecoverHoldsARemoteClaim(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	stateDir := filepath.Join(tmp, "state")
	os.MkdirAll(stateDir, 0o700)
	s := store.New(store.In(tmp), "p")
	a1, a2 := "agent-1", "agent-2"
	claimed := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	recent, old := record.FormatTime(claimed), record.FormatTime(claimed.Add(-2*time.Hour))
	err := s.Update(ctx, func(tx *store.Tx) error {
		q := store.NewQueue("p", old, nil)
		for _, task := range []store.Task{{ID: "recent", ClaimedBy: &a1, Attempt: 1, ClaimedAt: &recent},
			{ID: "old", ClaimedBy: &a2, Attempt: 1, ClaimedAt: &old}} {
			task.Description, task.Status, task.Dependencies, task.CreatedAt = "d", store.Claimed, []string{}, old
			q.Put(task)
		}
		tx.SetQueue(q)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: Config{Store: s, Agents: 2, Profile: &agent.Profile{Name: "fake"}, MaxRetries: 3, StateDir: stateDir,
		Timeout: time.Hour, KillGrace: 10 * time.Second, Hosts: []*executor.Remote{{}}},
		plan: "p", dir: attempt.NewDir(stateDir)}
	if _, err := r.recover(ctx); err != nil {
		t.Fatal(err)
	}
	q, _ := s.View()
	got, _ := q.Get("recent")
	if want := record.FormatTime(claimed.Add(time.Hour + 12*time.Second)); got.Status != store.Pending || got.HeldUntil != want {
		t.Errorf("recent: %s held until %q, want pending held until %s", got.Status, got.HeldUntil, want)
	}
	if got, _ := q.Get("old"); got.Status != store.Pending || got.HeldUntil != "" {
		t.Errorf("old: %s held until %q, want pending, not held", got.Status, got.HeldUntil)
	}
}
