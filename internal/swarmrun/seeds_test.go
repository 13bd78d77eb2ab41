package swarmrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// The execution state as seed 001 gives its fields (issue 27).

// TestRetriedTaskRunsWithoutItsOldError: a task retried after a failed attempt carries no
// error while it runs again (seed 001: the error is null unless the task failed); its
// retry_count says it was retried.
func TestRetriedTaskRunsWithoutItsOldError(t *testing.T) {
	w := newWorld(t)
	tmp := t.TempDir()
	mark, gate := filepath.Join(tmp, "started"), filepath.Join(tmp, "go")
	os.WriteFile(gate+".1", nil, 0o600) // the first attempt goes on at once, and fails
	doc := "name: retried\ndefaults: {agent: fake, retries: 1}\ntasks:\n" +
		"  - {id: a, prompt: \"flaky:2 mark:" + mark + " gate:" + gate + "\", branch: a}\n"
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), w.config(t, doc, 1))
		done <- err
	}()
	waitFile(t, mark+".2")
	// The state names the attempt before its supervisor starts: it is the second's now.
	st := checkValid(t, Paths{Root: w.repo}.State())
	a := st.Tasks["a"]
	if a.Status != Running || a.Trace.Attempt != 2 || a.Trace.RetryCount != 1 || a.Error != nil {
		t.Errorf("a while its retry runs: %s, attempt %d, %d retries, error %s; want running, attempt 2, 1 retry, no error",
			a.Status, a.Trace.Attempt, a.Trace.RetryCount, jsonOf(a.Error))
	}
	os.WriteFile(gate+".2", nil, 0o600)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	if a := checkValid(t, Paths{Root: w.repo}.State()).Tasks["a"]; a.Status != Completed || a.Error != nil {
		t.Errorf("a at the end: %s, error %s", a.Status, jsonOf(a.Error))
	}
}

// TestManualRetryCounted: a task run again by --retry, and a failed one a resume runs again,
// count a retry in retry_count, as a retry within the run does.
func TestManualRetryCounted(t *testing.T) {
	w := newWorld(t)
	doc := "name: manual\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: a, prompt: fail, branch: a}\n  - {id: b, prompt: fail, branch: b}\n"
	if _, err := Run(context.Background(), w.config(t, doc, 1)); err != nil {
		t.Fatal(err)
	}
	st := checkValid(t, Paths{Root: w.repo}.State())
	for _, id := range []string{"a", "b"} {
		if tr := st.Tasks[id].Trace; st.Tasks[id].Status != Failed || tr.RetryCount != 0 {
			t.Fatalf("%s after the first run: %s, %d retries; want failed, 0", id, st.Tasks[id].Status, tr.RetryCount)
		}
	}
	cfg := w.config(t, strings.ReplaceAll(doc, "fail", "nothing"), 1)
	cfg.Retry = []string{"a"} // b, failed, runs again with it
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if task := res.State.Tasks[id]; task.Status != Completed || task.Trace.RetryCount != 1 || task.Trace.Attempt != 2 {
			t.Errorf("%s after --retry: %s, attempt %d, %d retries; want completed, attempt 2, 1 retry",
				id, task.Status, task.Trace.Attempt, task.Trace.RetryCount)
		}
	}
	checkValid(t, Paths{Root: w.repo}.State())
}

// TestAgentFailed: an agent whose last attempt failed is failed (seed 001's agent status),
// until it takes its next task; one whose last attempt succeeded is idle.
func TestAgentFailed(t *testing.T) {
	w := newWorld(t)
	tmp := t.TempDir()
	failing := filepath.Join(tmp, "failing")
	doc := "name: agents\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: bad, prompt: \"mark:" + failing + " fail\", branch: bad}\n" +
		"  - {id: good, prompt: \"waitfor:" + failing + ".1 nothing\", branch: good}\n"
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatal(err)
	}
	st := checkValid(t, Paths{Root: w.repo}.State())
	bad, good := st.Tasks["bad"].Trace.AgentID, st.Tasks["good"].Trace.AgentID
	if res.State.Tasks["bad"].Status != Failed || bad == good {
		t.Fatalf("bad %s on %s, good on %s", res.State.Tasks["bad"].Status, bad, good)
	}
	if s := st.Agents[bad].Status; s != AgentFailed {
		t.Errorf("%s, whose attempt failed, is %s; want failed", bad, s)
	}
	if s := st.Agents[good].Status; s != AgentIdle {
		t.Errorf("%s, whose attempt succeeded, is %s; want idle", good, s)
	}
}

// TestSpeedupLeavesOutIdleTime: the parallel speedup of an execution continued later (--retry)
// is the tasks' time over the time its runs were at work, not over the time since it started:
// an idle day between the runs does not make it 0.
func TestSpeedupLeavesOutIdleTime(t *testing.T) {
	w := newWorld(t)
	doc := "name: speedup\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: a, prompt: \"sleep:1\", branch: a}\n  - {id: b, prompt: \"sleep:1 fail\", branch: b}\n"
	if _, err := Run(context.Background(), w.config(t, doc, 2)); err != nil {
		t.Fatal(err)
	}
	// The idle time between the runs: the test cannot wait an hour, so the execution's start
	// is moved an hour back, as an hour's wait before this point would have left it.
	path := Paths{Root: w.repo}.State()
	st := checkValid(t, path)
	started, _ := record.ParseTime(st.StartedAt)
	st.StartedAt = record.FormatTime(started.Add(-time.Hour))
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(t, strings.Replace(doc, "sleep:1 fail", "sleep:1", 1), 2)
	cfg.Retry = []string{"b"}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.State.Summary
	if res.State.Status != ExecCompleted || s.TotalDurationSeconds < 3600 {
		t.Fatalf("%s, %v s; want completed, over an hour since its start", res.State.Status, s.TotalDurationSeconds)
	}
	// Two tasks of a second's sleep: their time over the runs' is far above the 0.001 that an
	// hour's wall time would give, however loaded the machine.
	if s.ParallelSpeedup < 0.05 || res.State.ActiveSeconds <= 0 || res.State.ActiveSeconds > 1800 {
		t.Errorf("speedup %v over %v s at work; want the runs' time alone (under 30 min), and a speedup above 0.05",
			s.ParallelSpeedup, res.State.ActiveSeconds)
	}
	checkValid(t, path)
}

// TestActiveSoFarOfAnOlderState: a state written before active_seconds was kept counts its
// runs' time as its start to the last end it records.
func TestActiveSoFarOfAnOlderState(t *testing.T) {
	end := "2026-01-01T10:05:00Z"
	st := &State{StartedAt: "2026-01-01T10:00:00Z", Tasks: map[string]*Task{
		"a": {Trace: &Trace{CompletedAt: &end}}, "b": {}}}
	if got := activeSoFar(st); got != 300 {
		t.Errorf("activeSoFar = %v, want 300", got)
	}
	st.ActiveSeconds = 12.5
	if got := activeSoFar(st); got != 12.5 {
		t.Errorf("activeSoFar = %v, want 12.5 (the state's own)", got)
	}
}
