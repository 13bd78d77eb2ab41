package aiwg

import (
	"context"
	"encoding/json"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/testenv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRails starts a loop with the fake agent, rails r, the completion command "test -f
// done.txt", at most max iterations, no loop timeout and the breaker off (the rails under test
// must be what ends or holds it).
func (l *lab) startRails(max int, r rails.Rails) string {
	l.t.Helper()
	off := 0
	st, err := l.ws.Start(context.Background(), StartSpec{Task: "Rails", Completion: "test -f done.txt", MaxIterations: max,
		CheckpointInterval: 1, Agent: "fake", NoProgress: &off, Rails: r}, l.rt)
	if err != nil {
		l.t.Fatalf("Start: %v", err)
	}
	l.controllers = append(l.controllers, *st)
	return st.LoopID
}

// TestIterationTimeout: with no loop timeout (--timeout none), an agent that hangs while it
// keeps printing is stopped by --iteration-timeout; the iteration counts, failed, and the loop
// goes on to the next, which completes it (it hung the loop before, issue 19).
func TestIterationTimeout(t *testing.T) {
	l := newLab(t, "chatter=120", "touch=done.txt")
	start := time.Now()
	id := l.startRails(5, rails.Rails{IterationTimeoutSeconds: 2})
	end := l.waitStatus(id, StatusCompleted)
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("the loop took %s: the hung agent was not stopped at 2 s", took)
	}
	if len(end.Iterations) != 2 || end.Iterations[0].Outcome != OutcomeFailed || !strings.HasPrefix(end.Iterations[0].Reason, "iteration-timeout") {
		t.Fatalf("iterations %+v; want the first failed (iteration-timeout), then the one that completes", end.Iterations)
	}
	if d := end.Iterations[0].DurationSeconds; d < 2 || d > 30 {
		t.Errorf("the hung iteration ran %.1f s, want about 2", d)
	}
	if l.calls() != "2" {
		t.Errorf("the agent was started %s times, want 2", l.calls())
	}
}

// TestInactivityTimeout: an agent that says something and then falls silent is stopped by
// --inactivity-timeout, the iteration failed, and the loop goes on; one that keeps printing
// for longer than the inactivity timeout is left alone.
func TestInactivityTimeout(t *testing.T) {
	l := newLab(t, "say=hello sleep=120", "chatter=3", "touch=done.txt")
	id := l.startRails(5, rails.Rails{InactivityTimeoutSeconds: 1})
	end := l.waitStatus(id, StatusCompleted)
	if len(end.Iterations) != 3 {
		t.Fatalf("iterations %+v; want 3", end.Iterations)
	}
	if it := end.Iterations[0]; it.Outcome != OutcomeFailed || !strings.HasPrefix(it.Reason, "inactivity-timeout") || it.DurationSeconds > 30 {
		t.Errorf("the silent iteration: %s (%s) after %.1f s; want failed, inactivity-timeout, after about 1 s", it.Outcome, it.Reason, it.DurationSeconds)
	}
	if it := end.Iterations[1]; it.Outcome != OutcomeDone || it.DurationSeconds < 3 {
		t.Errorf("the busy iteration: %s (%s) after %.1f s; want done after 3 s", it.Outcome, it.Reason, it.DurationSeconds)
	}
}

// TestBudget: iterations that cost $0.40 each under a $1 budget: the loop pauses (budget)
// before the fourth, having spent $1.20, over the budget by less than one iteration's cost, and
// shows it; an agent that rewrites the budget and the total cost in state.json changes
// nothing; resume is refused without a higher budget and goes on to the new one with it.
func TestBudget(t *testing.T) {
	for _, plan := range []string{"cost=0.4", "cost=0.4 spend"} {
		t.Run(plan, func(t *testing.T) {
			l := newLab(t, plan)
			budget := 1.0
			id := l.startRails(50, rails.Rails{BudgetUSD: &budget})
			st := l.waitStatus(id, StatusPaused)
			if st.PauseReason != PauseBudget || st.PID != nil || l.calls() != "3" {
				t.Fatalf("paused (%s), controller %v, after %s calls; want budget, none, 3", st.PauseReason, st.PID, l.calls())
			}
			if got := st.Metrics.TotalCostUSD; math.Abs(got-1.2) > 1e-9 {
				t.Errorf("total cost $%v, want $1.20 (over the budget by less than one iteration's $0.40)", got)
			}
			if st.Rails == nil || st.Rails.BudgetUSD == nil || *st.Rails.BudgetUSD != 1 {
				t.Errorf("state.json's rails %+v, want the budget $1", st.Rails)
			}
			var out strings.Builder
			WriteStatus(&out, st, time.Now())
			for _, want := range []string{"paused (budget)", "Cost:        $1.2000", "Budget:      $1.2000 of $1.00"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("status lacks %q:\n%s", want, out.String())
				}
			}

			ctx := context.Background()
			_, err := l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
			l.refused(err, `paused at its budget .* --budget USD`)
			more := 2.0
			if _, err := l.ws.Resume(ctx, id, ResumeSpec{Budget: &more}, l.rt); err != nil {
				t.Fatalf("Resume --budget 2: %v", err)
			}
			l.waitUntil("the loop paused again", func() bool {
				st, err := l.ws.ReadState(id)
				return err == nil && st.Status == StatusPaused && st.PID == nil
			})
			st = l.waitStatus(id, StatusPaused)
			if st.PauseReason != PauseBudget || l.calls() != "5" || math.Abs(st.Metrics.TotalCostUSD-2.0) > 1e-9 {
				t.Errorf("after resume: paused (%s) after %s calls, $%v; want budget after 5 calls, $2.00", st.PauseReason, l.calls(), st.Metrics.TotalCostUSD)
			}
		})
	}
}

// TestHardBudget: with --hard-budget, an agent whose output reports a cost past the budget
// while it still works is stopped; without it, it runs to its end.
func TestHardBudget(t *testing.T) {
	l := newLab(t, "cost=2 sleep=120")
	budget := 1.0
	id := l.startRails(5, rails.Rails{BudgetUSD: &budget, HardBudget: true})
	st := l.waitStatus(id, StatusPaused)
	if st.PauseReason != PauseBudget || len(st.Iterations) != 1 || !strings.HasPrefix(st.Iterations[0].Reason, "hard-budget") || st.Iterations[0].DurationSeconds > 60 {
		t.Errorf("paused (%s), iterations %+v; want budget after one iteration stopped (hard-budget)", st.PauseReason, st.Iterations)
	}
}

// TestMaxCallsPerHour: with --max-calls-per-hour 2, the third iteration waits, the loop paused
// (calls-per-hour) until an hour after the first call.
func TestMaxCallsPerHour(t *testing.T) {
	l := newLab(t, "exit=1")
	start := time.Now()
	id := l.startRails(10, rails.Rails{MaxCallsPerHour: 2})
	st := l.waitStatus(id, StatusPaused)
	if st.PauseReason != PauseCalls || st.PID == nil || l.calls() != "2" {
		t.Fatalf("paused (%s), controller %v, after %s calls; want calls-per-hour, the controller waiting, 2 calls", st.PauseReason, st.PID, l.calls())
	}
	at, ok := parseStamp(deref(st.ResumeAt))
	if !ok || at.Before(start.Add(time.Hour-time.Minute)) || at.After(time.Now().Add(time.Hour)) {
		t.Errorf("resume_at %v, want an hour after the first call", deref(st.ResumeAt))
	}
}

// TestAgentCannotLiftItsRails: an agent that rewrites the rails in state.json (a hook of its
// own, no timeouts, no budget) changes nothing: the controller keeps the loop's own, from its
// seal, and says so.
func TestAgentCannotLiftItsRails(t *testing.T) {
	l := newLab(t, "cost=0.4 spend")
	budget := 0.5
	id := l.startRails(10, rails.Rails{BudgetUSD: &budget})
	st := l.waitStatus(id, StatusPaused)
	if st.PauseReason != PauseBudget || l.calls() != "2" || st.Rails == nil || *st.Rails.BudgetUSD != 0.5 {
		t.Errorf("paused (%s) after %s calls, rails %+v; want budget after 2, the budget $0.50", st.PauseReason, l.calls(), st.Rails)
	}
	b, _ := os.ReadFile(filepath.Join(l.ws.LoopDir(id), "controller.log"))
	for _, want := range []string{"rails (budget, calls, timeouts, hook) were changed", "total cost was lowered"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("controller.log does not say %q:\n%s", want, b)
		}
	}
}

// TestHooks: --on-event gets one JSON event on its stdin per transition (the loop's start, a
// failed iteration, its end), each with the kind, the loop, the iteration, the status, the
// reason, the cost and the log; a hook that hangs at one event and fails at every one changes
// nothing of the loop.
func TestHooks(t *testing.T) {
	l := newLab(t, "exit=1 cost=0.1", "touch=done.txt cost=0.2")
	events := l.marker("events")
	hookCmd := `/bin/sh -c 'read -r e; printf "%s\n" "$e" >> ` + events + `; case "$e" in *'"'"'"event":"start"'"'"'*) sleep 60;; esac; exit 3'`
	id := l.startRails(5, rails.Rails{OnEvent: hookCmd})
	end := l.waitStatus(id, StatusCompleted)
	if len(end.Iterations) != 2 {
		t.Errorf("iterations %+v; want 2: the hook changed the loop", end.Iterations)
	}
	var lines []string
	l.waitUntil("the hook told 3 events", func() bool {
		b, _ := os.ReadFile(events)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) >= 3
	})
	want := []struct {
		event, status string
		iteration     int
		cost          float64
	}{{"start", StatusRunning, 1, 0}, {"failure", StatusRunning, 1, 0.1}, {"end", StatusCompleted, 2, 0.3}}
	if len(lines) != len(want) {
		t.Fatalf("the hook got %d events, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for k, line := range lines {
		var e struct {
			Kind, Event, Loop, Status, Reason, Log, Time string
			Iteration                                    int
			CostUSD                                      *float64 `json:"cost_usd"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("event %d is not JSON (%v): %s", k, err, line)
			continue
		}
		w := want[k]
		if e.Kind != "aiwg" || e.Event != w.event || e.Loop != id || e.Status != w.status || e.Iteration != w.iteration ||
			e.CostUSD == nil || math.Abs(*e.CostUSD-w.cost) > 1e-9 || e.Time == "" {
			t.Errorf("event %d: %s; want %s, %s, iteration %d, cost %v", k, line, w.event, w.status, w.iteration, w.cost)
		}
		if e.Event != "start" && (e.Log == "" || e.Reason == "") {
			t.Errorf("event %d has no log or no reason: %s", k, line)
		}
	}
}

// TestCommitEach: --commit-each commits what each iteration left, with trailers naming the
// loop and the iteration, .aiwg left out; an iteration that changed nothing makes no commit.
// Outside git, start refuses it.
func TestCommitEach(t *testing.T) {
	l := newLab(t, "write=notes.txt", "say=nothing", "touch=done.txt")
	head := strings.TrimSpace(l.git("rev-parse", "HEAD"))
	id := l.startRails(5, rails.Rails{CommitEach: true})
	l.waitStatus(id, StatusCompleted)
	// A loop that says it ended has no iteration's supervisor left (they outlived it, the last
	// ones until the test binary's sweep killed them).
	if left := l.supervisorsRunning(); len(left) > 0 {
		t.Errorf("the loop completed with supervisors of its iterations still running: %v", left)
	}
	log := l.git("log", "--format=%s|%(trailers:key=Ralph-Loop,valueonly,separator=)|%(trailers:key=Ralph-Iteration,valueonly,separator=)", head+"..HEAD")
	want := "ralph: " + id + ", iteration 3|" + id + "|3\n" + "ralph: " + id + ", iteration 1|" + id + "|1\n"
	if strings.ReplaceAll(log, "\n\n", "\n") != want {
		t.Errorf("commits since the start:\n%s\nwant:\n%s", log, want)
	}
	if files := l.git("log", "--name-only", "--format=", head+"..HEAD"); strings.Contains(files, ".aiwg") || !strings.Contains(files, "notes.txt") || !strings.Contains(files, "done.txt") {
		t.Errorf("the commits hold:\n%s\nwant notes.txt and done.txt, nothing of .aiwg", files)
	}
	if status := l.git("status", "--porcelain", "--", ".", ":(exclude).aiwg"); status != "" {
		t.Errorf("the tree is not clean after the loop:\n%s", status)
	}

	plain := Workspace{Root: t.TempDir()}
	_, err := plain.Start(context.Background(), StartSpec{Task: "x", Completion: "true", MaxIterations: 1, CheckpointInterval: 1,
		Agent: "fake", Rails: rails.Rails{CommitEach: true}}, l.rt)
	l.refused(err, `--commit-each: .* is not in a git repository`)
	if _, err := os.Stat(plain.Dir()); err == nil {
		t.Errorf("a refused start left %s", plain.Dir())
	}
}

// supervisorsRunning is the pids of the processes that run a supervisor of the lab's state
// directory (the supervise verb and --state-dir DIR on their command line).
func (l *lab) supervisorsRunning() []int { return testenv.Supervisors(l.ws.DefaultStateDir()) }
