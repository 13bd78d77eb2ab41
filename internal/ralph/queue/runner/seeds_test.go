package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
)

// The queue's files as seed 004 gives their fields (issue 27).

// TestFailedForGood: a task that fails all its attempts reads retries 2 after 3 attempts (seed
// 004: the number of retry attempts, 0 on the first try), and counts in agents_failed (the
// agents failed after the maximum retries).
func TestFailedForGood(t *testing.T) {
	w := newWorld(t, "doomed: always fail", "fine: works")
	log := newLogWatch()
	w.run(context.Background(), w.config(1, 3, log))
	doomed := w.task("doomed")
	if doomed.Status != store.Failed || doomed.Retries != 2 || doomed.Attempt != 3 {
		t.Errorf("doomed: %s, %d retries, attempt %d; want failed, 2 retries, attempt 3\n%s", doomed.Status, doomed.Retries, doomed.Attempt, log)
	}
	if got := w.attempts("doomed"); len(got) != 3 {
		t.Errorf("doomed's attempts: %v, want 3", got)
	}
	p, err := w.store.ViewProgress()
	if err != nil {
		t.Fatal(err)
	}
	if p.AgentsFailed != 1 || p.AgentsCompleted != 1 || p.Agents[0].TasksFailed != 1 {
		t.Errorf("progress: %d agents failed, %d completed, agent %+v; want 1 failed (doomed's), 1 completed", p.AgentsFailed, p.AgentsCompleted, p.Agents[0])
	}
	w.valid()
}

// TestTurnsRecorded: the turns each attempt's agent reported (claude's num_turns) are the
// agent's num_turns in the progress file, and its performance's turns.
func TestTurnsRecorded(t *testing.T) {
	w := newWorld(t, "t1: one turns:4", "t2: two turns:3")
	w.run(context.Background(), w.config(1, 1, newLogWatch()))
	p, err := w.store.ViewProgress()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Agents) != 1 || p.Agents[0].NumTurns != 7 || p.Performance.TotalTurns != 7 || p.Performance.AvgTurnsPerAgent != 3.5 {
		t.Errorf("progress: agents %+v, performance %+v; want 7 turns, 3.5 an attempt", p.Agents, p.Performance)
	}
	w.valid()
}

// TestPhases: the progress file's phase is implementation while a task has yet to be tried,
// verify_fix while what is left are retries of failed tasks, review once nothing is left to
// run.
func TestPhases(t *testing.T) {
	tmp := t.TempDir()
	started, gate := filepath.Join(tmp, "started"), filepath.Join(tmp, "go")
	w := newWorld(t, "t1: fails once flaky:2 mark:"+started+" await:"+gate)
	done := make(chan error, 1)
	log := newLogWatch()
	go func() {
		_, err := w.runE(context.Background(), w.config(1, 2, log))
		done <- err
	}()
	phase := func(want string) {
		t.Helper()
		p, err := w.store.ViewProgress()
		if err != nil || p.Phase != want {
			t.Errorf("phase %q (%v), want %s", p.Phase, err, want)
		}
	}
	waitUntil(t, "attempt 1 at work", func() bool { _, err := os.Stat(started + ".1"); return err == nil })
	phase(store.PhaseImplementation)
	os.WriteFile(gate+".1", nil, 0o600)
	waitUntil(t, "attempt 2 at work", func() bool { _, err := os.Stat(started + ".2"); return err == nil })
	phase(store.PhaseVerifyFix)
	os.WriteFile(gate+".2", nil, 0o600)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	phase(store.PhaseReview)
	if got := w.attempts("t1"); got[2] != record.StatusDone {
		t.Errorf("t1's attempts: %v, want the second done", got)
	}
	w.valid()
}

// TestAgentStateInitializing: an agent's state file is created when it starts, initializing
// (seed 004), before it claims anything: here the second agent, whose only task waits for the
// first agent's.
func TestAgentStateInitializing(t *testing.T) {
	tmp := t.TempDir()
	started, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	w := newWorld(t, "t1: first touch:"+started+" until:"+release, "t2: then (after t1)")
	done := make(chan error, 1)
	log := newLogWatch()
	go func() {
		_, err := w.runE(context.Background(), w.config(2, 1, log))
		done <- err
	}()
	waitUntil(t, "t1 at work", func() bool { _, err := os.Stat(started); return err == nil })
	// The agent that claimed nothing yet; its state written as it started, before t1's.
	waiting := AgentID(2)
	if p, _ := w.store.ViewProgress(); len(p.Agents) == 2 && p.Agents[1].TaskID != nil {
		waiting = AgentID(1)
	}
	waitUntil(t, waiting+"'s state file", func() bool {
		a, err := w.store.ReadAgentState(waiting)
		return err == nil && a != nil && a.Status == store.AgentInitializing && a.TaskID == nil
	})
	os.WriteFile(release, nil, 0o600)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	w.valid()
}
