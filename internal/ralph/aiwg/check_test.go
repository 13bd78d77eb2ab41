package aiwg

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
)

// childGone waits until the process whose pid is in the file at path is gone (a zombie counts
// as gone: its group was killed and it waits for its parent, pid 1, to reap it).
func (l *lab) childGone(path string) {
	l.t.Helper()
	l.waitFile(path)
	b, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		l.t.Fatalf("%s: %q is not a pid", path, b)
	}
	l.waitUntil("the check's background child "+strconv.Itoa(pid)+" gone", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat))
		return len(f) > 2 && f[2] == "Z"
	})
}

// TestCheckLeavesAChild: a completion command that leaves a background child holding its
// output (a test run that starts a server) does not hang the loop (it waited for the pipe, up
// to 30 minutes): the check ends when the command exits, and the child goes with its group
// (issue 17).
func TestCheckLeavesAChild(t *testing.T) {
	l := newLab(t, "touch=done.txt")
	id := l.start("Serve", "sleep 300 & echo $! > "+l.marker("child.pid")+"; test -f done.txt")
	start := time.Now()
	st := l.waitStatus(id, StatusCompleted)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the loop took %s to complete", d)
	}
	if c := st.Progress.LastCompletionCheck; c == nil || !c.Passed || c.DurationSeconds > 10 {
		t.Errorf("last check %+v, want passed in a few seconds", c)
	}
	l.childGone(l.marker("child.pid"))
}

// TestAbortStopsTheCheck: ralph abort while the completion command runs stops it and what it
// started (the child survived abort; issue 17).
func TestAbortStopsTheCheck(t *testing.T) {
	l := newLab(t, "exit=0")
	id := l.start("Slow check", "sleep 300 & echo $! > "+l.marker("child.pid")+"; sleep 300")
	l.waitFile(l.marker("child.pid"))
	before := l.state(id)
	start := time.Now()
	if _, err := l.ws.Abort(context.Background(), id); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("abort took %s", d)
	}
	l.settled(id, StatusAborted, *before.PID, before.PIDStart)
	l.childGone(l.marker("child.pid"))
}

// crash starts a loop whose second iteration's agent works (m2) after a checkpoint, kills its
// controller, and looks: the loop is crashed, the agent still at work.
func (l *lab) crash() (string, *State) {
	l.t.Helper()
	id := l.start("Crashy", "test -f done.txt")
	l.waitFile(l.marker("m2"))
	st := l.state(id)
	pid := *st.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		l.t.Fatal(err)
	}
	l.waitUntil("the controller dead", func() bool { return !proc.Alive(pid) && !controllerAlive(st) })
	cur, err := l.ws.Look(context.Background(), id)
	if err != nil || cur.Status != StatusCrashed {
		l.t.Fatalf("Look = %+v, %v; want crashed", cur, err)
	}
	return id, st
}

// TestAbortCrashed: abort of a crashed loop stops the agent its dead controller left at work
// (abort and pause refused, "crashed is final", and the agent worked on; issue 17) and says so
// in the state, which stays crashed; pause says what to do.
func TestAbortCrashed(t *testing.T) {
	l := newLab(t, "cost=0.01", "touch=OUT/m2 sleep=60")
	id, st := l.crash()
	sup := l.supervisor(st, Bead(id, 2))
	if !supervise.SupervisorAlive(sup.PID, Bead(id, 2)) {
		t.Fatalf("iteration 2's supervisor died with its controller: %+v", sup)
	}
	ctx := context.Background()
	_, err := l.ws.Pause(ctx, id)
	l.refused(err, `is crashed .*'ralph abort ralph-crashy-[0-9a-f]+' stops its agent, 'ralph resume .*' restarts the loop`)
	got, err := l.ws.Abort(ctx, id)
	if err != nil {
		t.Fatalf("Abort of a crashed loop: %v", err)
	}
	if got.Status != StatusCrashed || got.ExitReason != StatusAborted || got.ErrorContext == nil ||
		!strings.Contains(got.ErrorContext.ErrorMessage, "the agent of iteration 2 was stopped") {
		t.Errorf("after abort: %s, %q, %+v; want crashed, aborted, the agent's stop said", got.Status, got.ExitReason, got.ErrorContext)
	}
	if supervise.SupervisorAlive(sup.PID, Bead(id, 2)) || proc.Alive(sup.AgentPID) {
		t.Errorf("iteration 2's supervisor (%v) or agent (%v) still works after abort",
			supervise.SupervisorAlive(sup.PID, Bead(id, 2)), proc.Alive(sup.AgentPID))
	}
	if now := l.state(id); now.ExitReason != StatusAborted {
		t.Errorf("state on disk: exit_reason %q, want aborted", now.ExitReason)
	}
}

// TestResumeCorruptCheckpoint: a crashed loop whose last checkpoint cannot be read is resumed
// from its state at the crash, with a warning (resume refused it, so nothing could restart
// the loop; issue 17).
func TestResumeCorruptCheckpoint(t *testing.T) {
	l := newLab(t, "cost=0.01", "touch=OUT/m2 sleep=60", "touch=done.txt")
	id, st := l.crash()
	if st.LastCheckpoint == nil {
		t.Fatal("no checkpoint after iteration 1")
	}
	if err := os.WriteFile(filepath.Join(l.ws.Root, *st.LastCheckpoint), []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	var warned []string
	rt := l.rt
	rt.Warn = func(msg string) { warned = append(warned, msg) }
	res, err := l.ws.Resume(context.Background(), id, ResumeSpec{}, rt)
	if err != nil {
		t.Fatalf("Resume with a corrupt checkpoint: %v", err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "its last checkpoint cannot be read") {
		t.Errorf("warnings %q, want one saying the checkpoint cannot be read", warned)
	}
	if res.State.Iteration != 2 || res.State.NextIteration() != 2 {
		t.Errorf("resumed at iteration %d (%d next), want 2 (iteration 2, not counted, runs again under its number)", res.State.Iteration, res.State.NextIteration())
	}
	done := l.waitStatus(id, StatusCompleted)
	if done.Metrics.TotalIterations != 2 {
		t.Errorf("completed after %d iterations, want 2", done.Metrics.TotalIterations)
	}
}

// TestAgentCannotSteerCompletion: the agent works in the workspace that holds its loop's
// state.json and rewrites the completion command there to "true"; the loop is not declared
// completed (it was, at once; issue 17): the controller runs the command the loop was started
// with, kept outside the workspace, and puts it back into the state.
func TestAgentCannotSteerCompletion(t *testing.T) {
	l := newLab(t, "steer")
	st, err := l.ws.Start(context.Background(), StartSpec{Task: "Steer", Completion: "test -f done.txt", MaxIterations: 2,
		CheckpointInterval: 1, Agent: "fake"}, l.rt)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	end := l.waitStatus(st.LoopID, StatusFailed)
	if end.ExitReason != "max-iterations" || end.CompletionCriteria != "test -f done.txt" {
		t.Errorf("loop ended %s (%s), completion %q; want failed (max-iterations), the command it started with", end.Status, end.ExitReason, end.CompletionCriteria)
	}
	for _, c := range end.Progress.CompletionChecks {
		if c.Passed {
			t.Errorf("check of iteration %d passed: %+v", c.Iteration, c)
		}
	}
	b, _ := os.ReadFile(filepath.Join(l.ws.LoopDir(st.LoopID), "controller.log"))
	if !strings.Contains(string(b), `completion command was changed to "true" behind the controller's back`) {
		t.Errorf("controller.log does not say the command was put back:\n%s", b)
	}
}

// TestAgentCannotEndOrExtendItsLoop: an agent that writes its loop's status as completed, and
// lifts its iteration cap, changes neither: the controller ends the loop at its own cap,
// failed, and says in its log what it put back.
func TestAgentCannotEndOrExtendItsLoop(t *testing.T) {
	l := newLab(t, "claim lift")
	st, err := l.ws.Start(context.Background(), StartSpec{Task: "Claim", Completion: "test -f done.txt", MaxIterations: 2,
		CheckpointInterval: 1, Agent: "fake"}, l.rt)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	end := l.waitStatus(st.LoopID, StatusFailed)
	if end.ExitReason != "max-iterations" || end.Configuration.MaxIterations != 2 || end.Iteration != 2 {
		t.Errorf("loop ended %s (%s) after %d iterations, cap %d; want failed (max-iterations) after 2, cap 2",
			end.Status, end.ExitReason, end.Iteration, end.Configuration.MaxIterations)
	}
	// A loop that ends failed gets its final checkpoint, as one that completes (issue 19).
	if cp := CheckpointRel(st.LoopID, 2); end.LastCheckpoint == nil || *end.LastCheckpoint != cp {
		t.Errorf("last_checkpoint %v, want %s", end.LastCheckpoint, cp)
	} else if last, err := l.ws.readCheckpoint(end); err != nil || last.Status != StatusFailed || last.ExitReason != "max-iterations" {
		t.Errorf("the final checkpoint: %v; want the loop failed, max-iterations", err)
	}
	b, _ := os.ReadFile(filepath.Join(l.ws.LoopDir(st.LoopID), "controller.log"))
	for _, want := range []string{"says completed behind the controller's back", "iteration cap, timeout or configuration was changed behind the controller's back"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("controller.log does not say %q:\n%s", want, b)
		}
	}
}

// TestNoProgress: the no-progress breaker ends a loop whose agent fails the same way every
// time, or changes nothing, after N iterations (3 by default; it ran all 50 before, issue 19);
// one whose agent changes a file every time runs on; 0 turns the breaker off.
// successful_iterations counts the iterations that made progress (seed 003): the loop the
// breaker ended for changing nothing has none, though each of its agents exited 0 (it showed 3
// before, issue 27).
func TestNoProgress(t *testing.T) {
	zero := 0
	for name, c := range map[string]struct {
		plan       string
		n          *int
		status     string
		iterations int
		successful int
	}{
		"same failure":    {"exit=1", nil, StatusFailed, 3, 0},
		"nothing changes": {"say=thinking", nil, StatusFailed, 3, 0},
		"a file changes":  {"write=notes.txt", nil, StatusFailed, 6, 6},
		"off":             {"exit=1", &zero, StatusFailed, 6, 0},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLab(t, c.plan)
			st, err := l.ws.Start(context.Background(), StartSpec{Task: "Stuck", Completion: "test -f done.txt", MaxIterations: 6,
				CheckpointInterval: 1, Agent: "fake", NoProgress: c.n}, l.rt)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			end := l.waitStatus(st.LoopID, c.status)
			want := "max-iterations"
			if c.iterations < 6 {
				want = "no-progress"
			}
			if end.ExitReason != want || end.Metrics.TotalIterations != c.iterations {
				t.Errorf("ended %s (%s) after %d iterations; want %s after %d", end.Status, end.ExitReason, end.Metrics.TotalIterations, want, c.iterations)
			}
			if end.Metrics.SuccessfulIterations != c.successful {
				t.Errorf("successful_iterations %d, want %d (the iterations that made progress)", end.Metrics.SuccessfulIterations, c.successful)
			}
			var out bytes.Buffer
			WriteStatus(&out, end, time.Now())
			if !strings.Contains(out.String(), "No-progress:") {
				t.Errorf("status does not show the breaker:\n%s", out.String())
			}
		})
	}
}
