package aiwg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
)

func TestNewID(t *testing.T) {
	tests := []struct{ task, slug string }{
		{"fix all TypeScript errors", "fix-all-typescript-errors"},
		{"  Make done.txt exist!  ", "make-done-txt-exist"},
		{"$(rm -rf /); `x` ../../etc", "rm-rf-x-etc"},
		{"a very long task description that goes on and on", "a-very-long-task-description-t"},
		{"!!!", "loop"},
		{"éàü", "loop"},
		{"x--y", "x-y"},
	}
	for _, tt := range tests {
		id := NewID(tt.task)
		slug := strings.TrimPrefix(id[:len(id)-9], "ralph-")
		if slug != tt.slug || !IsLoopID(id) || len(slug) > 30 {
			t.Errorf("NewID(%q) = %q, want slug %q and a loop id", tt.task, id, tt.slug)
		}
	}
	if NewID("x") == NewID("x") {
		t.Errorf("NewID gave the same id twice")
	}
}

func TestIsLoopID(t *testing.T) {
	for s, want := range map[string]bool{"ralph-fix-tests-a1b2c3d4": true, "ralph-x-0000000f": true,
		"ralph-x-A1B2C3D4": false, "fix-tests": false, "ralph-x-1234567": false, "ralph-../x-12345678": false, "ralph-x-12345678 ": false} {
		if got := IsLoopID(s); got != want {
			t.Errorf("IsLoopID(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestTransitions checks every pair of statuses against seed 003's table, written out here as
// the seed has it: an allowed change is made, a refused one leaves the status as it was and
// says which changes the table allows.
func TestTransitions(t *testing.T) {
	table := map[string][]string{
		StatusRunning:    {StatusPaused, StatusCompleting, StatusAborted, StatusCrashed, StatusFailed},
		StatusPaused:     {StatusRunning, StatusAborted},
		StatusCompleting: {StatusCompleted, StatusFailed, StatusCrashed},
	}
	all := []string{StatusRunning, StatusPaused, StatusCompleting, StatusCompleted, StatusFailed, StatusAborted, StatusCrashed}
	for _, from := range all {
		for _, to := range all {
			if from == to {
				continue
			}
			want := slices.Contains(table[from], to)
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
			st := &State{LoopID: "ralph-x-12345678", Status: from}
			err := st.Transition(to)
			if (err == nil) != want {
				t.Errorf("Transition(%s → %s) = %v, want allowed %v", from, to, err, want)
			}
			if err == nil {
				if st.Status != to {
					t.Errorf("Transition(%s → %s) left %s", from, to, st.Status)
				}
				continue
			}
			why := from + " is final"
			if next := table[from]; len(next) > 0 {
				why = "from " + from + ": " + strings.Join(next, ", ")
			}
			msg := fmt.Sprintf("loop ralph-x-12345678 is %s: %s → %s is not an allowed status change (%s)", from, from, to, why)
			if !errors.Is(err, ErrTransition) || err.Error() != msg || st.Status != from {
				t.Errorf("Transition(%s → %s) = %q, status %s; want %q, status unchanged", from, to, err, st.Status, msg)
			}
		}
		if st := (&State{LoopID: "ralph-x-12345678", Status: from}); st.Transition(from) != nil || st.Status != from {
			t.Errorf("Transition(%s → %s) is not a no-op", from, from)
		}
		if got, want := Terminal(from), len(table[from]) == 0; got != want {
			t.Errorf("Terminal(%s) = %v, want %v", from, got, want)
		}
	}
}

// TestTransitionSideEffects: a final status clears the controller; completed stamps
// completed_at; pause stamps paused_at; leaving paused clears its reason and moves the
// timeout's clock on.
func TestTransitionSideEffects(t *testing.T) {
	pid := 42
	for _, to := range []string{StatusCompleted, StatusFailed, StatusCrashed} {
		st := &State{LoopID: "ralph-x-12345678", Status: StatusCompleting, PID: &pid, PIDStart: 7}
		if err := st.Transition(to); err != nil {
			t.Fatal(err)
		}
		if st.PID != nil || st.PIDStart != 0 || (st.CompletedAt != nil) != (to == StatusCompleted) {
			t.Errorf("completing → %s: pid %v, pid_start %d, completed_at %v", to, st.PID, st.PIDStart, st.CompletedAt)
		}
	}
	st := &State{LoopID: "ralph-x-12345678", Status: StatusRunning, PID: &pid, StartedAt: stamp(time.Now())}
	if err := st.Transition(StatusPaused); err != nil || st.PausedAt == nil || st.PID == nil {
		t.Fatalf("running → paused: %v, paused_at %v, pid %v (a pause keeps its controller until it leaves)", err, st.PausedAt, st.PID)
	}
	st.PauseReason = PauseUser
	if err := st.Transition(StatusRunning); err != nil || st.PausedAt != nil || st.PauseReason != "" || st.TimeoutFrom == "" {
		t.Errorf("paused → running: %v, paused_at %v, reason %q, timeout_from %q", err, st.PausedAt, st.PauseReason, st.TimeoutFrom)
	}
}

// TestPausedTimeDoesNotCount: the timeout's clock stops while the loop is paused.
func TestPausedTimeDoesNotCount(t *testing.T) {
	start := time.Now().Add(-time.Hour)
	paused := stamp(time.Now().Add(-50 * time.Minute))
	st := &State{LoopID: "ralph-x-12345678", Status: StatusPaused, StartedAt: stamp(start), TimeoutSeconds: 3600, PausedAt: &paused}
	if err := st.Transition(StatusRunning); err != nil {
		t.Fatal(err)
	}
	dl, _ := deadline(st)
	if left := time.Until(dl); left < 49*time.Minute || left > 51*time.Minute {
		t.Errorf("after 10 min running and 50 paused of a 60 min timeout, %s left, want about 50 min", left)
	}
}

func TestCheckArgv(t *testing.T) {
	tests := []struct {
		cmd  string
		argv []string
	}{
		{"go test ./...", []string{"go", "test", "./..."}},
		{"npm test", []string{"npm", "test"}},
		{"test -f done.txt", []string{"test", "-f", "done.txt"}},
		{"npx tsc --noEmit && npm test", []string{"/bin/sh", "-c", "npx tsc --noEmit && npm test"}},
		{"grep -q ok out.txt | wc", []string{"/bin/sh", "-c", "grep -q ok out.txt | wc"}},
		{`test "$(cat x)" = yes`, []string{"/bin/sh", "-c", `test "$(cat x)" = yes`}},
		{"CI=1 make check", []string{"/bin/sh", "-c", "CI=1 make check"}},
		{"ls *.go", []string{"/bin/sh", "-c", "ls *.go"}},
	}
	for _, tt := range tests {
		if got := CheckArgv(tt.cmd); strings.Join(got, "\x00") != strings.Join(tt.argv, "\x00") {
			t.Errorf("CheckArgv(%q) = %q, want %q", tt.cmd, got, tt.argv)
		}
	}
}

func testState(id string, iterations int) *State {
	st := &State{Version: "2.0.0", LoopID: id, Status: StatusRunning, Task: "fix the tests", CompletionCriteria: "go test ./...",
		StartedAt: stamp(time.Now()), LastUpdated: stamp(time.Now()), Owner: "me", WorkingDirectory: "/w",
		Configuration: Configuration{MaxIterations: 200, AutoTest: true, CheckpointInterval: 1, ExecutionMode: "default"},
		Progress:      Progress{CompletionChecks: []Check{}}, Iterations: []Iteration{}, Agent: "claude", StateDir: "/w/s"}
	for i := 1; i <= iterations; i++ {
		c := 0.01
		st.Iterations = append(st.Iterations, Iteration{Number: i, Bead: Bead(id, i), Outcome: OutcomeDone, CostUSD: &c})
		st.Progress.CompletionChecks = append(st.Progress.CompletionChecks, Check{Iteration: i, Timestamp: stamp(time.Now()), Output: strings.Repeat("FAIL x\n", 70)})
	}
	st.Iteration = iterations
	return st
}

// TestEncodeRefusesInvalid: nothing the loop-state schema refuses is ever written.
func TestEncodeRefusesInvalid(t *testing.T) {
	if _, err := Encode(testState("ralph-x-12345678", 2)); err != nil {
		t.Fatalf("Encode(valid) = %v", err)
	}
	bad := []func(*State){
		func(s *State) { s.Status = "sleeping" },
		func(s *State) { s.LoopID = "ralph-X-12345678" },
		func(s *State) { s.Version = "3.0.0" },
		func(s *State) { s.Iteration = -1 },
		func(s *State) { s.Configuration.MaxIterations = 0 },
		func(s *State) { s.Configuration.ExecutionMode = "fast" },
	}
	for i, f := range bad {
		st := testState("ralph-x-12345678", 1)
		f(st)
		if _, err := Encode(st); err == nil {
			t.Errorf("Encode(bad %d) = nil error, want a refusal", i)
		}
	}
}

func TestPrompt(t *testing.T) {
	st := testState("ralph-x-12345678", 0)
	p := Prompt(st, 1)
	if !strings.HasPrefix(p, "fix the tests\n") || strings.Contains(p, "After iteration") || !strings.Contains(p, "    go test ./...\n") {
		t.Errorf("Prompt(first) = %q", p)
	}
	st.Progress.LastCompletionCheck = &Check{Iteration: 3, ExitCode: 1, Output: "--- FAIL: TestX\n"}
	if p := Prompt(st, 4); !strings.Contains(p, "After iteration 3 it exited 1. Its output (the end of it):\n\n--- FAIL: TestX\n") {
		t.Errorf("Prompt(after a check) = %q", p)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 10}
	for i := 0; i < 100; i++ {
		fmt.Fprintf(tb, "%d,", i)
	}
	if got := tb.String(); got != ",97,98,99," {
		t.Errorf("tailBuffer = %q, want the last 10 bytes", got)
	}
}

// TestCheckpointRoundTrip: a checkpoint holds the state as it was, and only a path under the
// loop's checkpoints/ is read back.
func TestCheckpointRoundTrip(t *testing.T) {
	ws := Workspace{Root: t.TempDir()}
	st := testState("ralph-x-12345678", 3)
	if err := ws.checkpoint(st, 3); err != nil {
		t.Fatal(err)
	}
	cp, err := ws.readCheckpoint(st)
	if err != nil || cp.Iteration != 3 || len(cp.Progress.CompletionChecks) != 3 {
		t.Fatalf("readCheckpoint = %+v, %v", cp, err)
	}
	evil := "../../../etc/passwd"
	st.LastCheckpoint = &evil
	if _, err := ws.readCheckpoint(st); err == nil {
		t.Errorf("readCheckpoint(%q) = nil error", evil)
	}
}

// BenchmarkStatus is `ralph status LOOP`'s work on a loop of 200 iterations (the target: under
// 50 ms for the command; this is its work in the process, without the process start and the
// flags).
func BenchmarkStatus(b *testing.B) {
	dir := b.TempDir()
	ws := Workspace{Root: dir}
	st := testState("ralph-bench-12345678", 200)
	// A live controller to look at: a process whose command line names the loop.
	ctl := exec.Command("sh", "-c", "sleep 600", st.LoopID)
	if err := ctl.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { ctl.Process.Kill(); ctl.Wait() }()
	pid := ctl.Process.Pid
	st.PID = &pid
	st.PIDStart, _ = proc.StartTime(pid)
	if err := ws.Locked(context.Background(), func(reg *Registry) error { return ws.save(reg, st) }); err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		cur, err := FindWorkspace(dir).Look(context.Background(), st.LoopID)
		if err != nil {
			b.Fatalf("status: %v", err)
		}
		WriteStatus(&out, cur, time.Now())
	}
	if !strings.Contains(out.String(), "running") {
		b.Fatalf("status = %s, want running", out.String())
	}
}

// TestLegacyEnds: an ended loop of current-loop.json keeps its end when it is taken in,
// written valid and not registered; a status that is no word reads failed.
func TestLegacyEnds(t *testing.T) {
	for _, c := range []struct{ legacy, status, reason string }{
		{"success", StatusCompleted, StatusCompleted},
		{"aborted", StatusAborted, StatusAborted},
		{"max_iterations", StatusFailed, "max-iterations"},
		{"timeout", StatusFailed, "timeout"},
		{"../../etc", StatusFailed, StatusFailed},
	} {
		ws := Workspace{Root: t.TempDir()}
		os.MkdirAll(ws.Dir(), 0o700)
		os.WriteFile(filepath.Join(ws.Dir(), LegacyFile), fmt.Appendf(nil, `{"loopId": "x", "active": false, "task": "Old task",
		  "completion": "true", "maxIterations": 5, "currentIteration": 5, "status": %q}`, c.legacy), 0o600)
		id, err := ws.MigrateLegacy(context.Background(), Runtime{}, "claude")
		if err != nil {
			t.Fatalf("%s: MigrateLegacy: %v", c.legacy, err)
		}
		st, err := ws.ReadState(id)
		if err != nil || st.Status != c.status || st.ExitReason != c.reason || st.CompletedAt == nil {
			t.Errorf("%s: taken in as %+v, %v; want %s (%s)", c.legacy, st, err, c.status, c.reason)
		}
		if reg, err := ws.readRegistry(); err != nil || len(reg.ActiveLoops) != 0 {
			t.Errorf("%s: registry %+v, %v; want no active loop", c.legacy, reg, err)
		}
	}
}
