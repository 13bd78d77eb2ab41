package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// archived reads attempt n of bead from attempts/<bead>/.
func (h *hostile) archived(t *testing.T, bead string, n int) (*record.Run, *record.Result) {
	t.Helper()
	run, err := record.ReadRun(h.statePath("attempts", bead, fmt.Sprintf("run-%d.json", n)))
	if err != nil {
		t.Fatalf("attempt %d of %s: %v", n, bead, err)
	}
	res, err := record.ReadResult(h.statePath("attempts", bead, fmt.Sprintf("result-%d.json", n)))
	if err != nil {
		t.Fatalf("attempt %d of %s: %v", n, bead, err)
	}
	return run, res
}

// TestHostileDeadAttempts (issue 9, item 6): no attempt is archived as running. A predecessor
// whose supervisor died is closed (supervisor-lost) before it is archived; one replaced with
// --force whose supervisor cannot record its own end is closed as replaced.
func TestHostileDeadAttempts(t *testing.T) {
	t.Parallel()
	h := newHostile(t)

	t.Run("re-dispatched after its supervisor died", func(t *testing.T) {
		h.must(t, nil, "a-lost", h.repo, "hostile:m1", "HANG")
		h.waitAgent("a-lost", 30*time.Second)
		h.killSupervisor(t, "a-lost")
		h.must(t, nil, "a-lost", h.repo, "hostile:m1", "EXIT=0", "--wait")
		run, res := h.archived(t, "a-lost", 1)
		if run.Status != record.StatusFailed || run.FailureReason == nil || *run.FailureReason != supervise.ReasonLost ||
			res.Status != record.StatusFailed || res.Reason != supervise.ReasonLost {
			t.Errorf("attempt 1 archived as %s/%s (%s); want failed, supervisor-lost", run.Status, res.Status, res.Reason)
		}
	})

	// A supervisor that cannot act (stopped: it cannot record its own end) is replaced all the
	// same, and the attempt it ran is recorded as replaced. Without tmux: a tmux server sends
	// SIGCONT to a pane's process that stops (server_child_stopped), so in a pane SIGSTOP does
	// not hold.
	t.Run("forced over a supervisor that cannot record", func(t *testing.T) {
		h.must(t, nil, "a-stuck", h.repo, "hostile:m1", "HANG", "--no-tmux")
		h.waitAgent("a-stuck", 30*time.Second)
		e, _ := h.layout().ReadEntry("a-stuck")
		if e == nil {
			t.Fatal("no entry")
		}
		syscall.Kill(e.PID, syscall.SIGSTOP)
		defer syscall.Kill(e.PID, syscall.SIGCONT)
		out := h.must(t, nil, "a-stuck", h.repo, "hostile:m1", "EXIT=0", "--force", "--wait", "--no-tmux")
		if !strings.Contains(out, "Attempt: 2/2") {
			t.Errorf("the forced dispatch is not attempt 2:\n%s", out)
		}
		if supervise.SupervisorAlive(e.PID, "a-stuck") && !stopped(e.PID) {
			t.Errorf("the replaced supervisor %d still runs", e.PID)
		}
		run, res := h.archived(t, "a-stuck", 1)
		if run.Status != record.StatusFailed || run.FailureReason == nil || *run.FailureReason != "replaced" ||
			res.Status != record.StatusFailed || res.Reason != "replaced" {
			t.Errorf("attempt 1 archived as %s/%s (%s); want failed, replaced", run.Status, res.Status, res.Reason)
		}
		if run.FinishedAt == nil || run.DurationSeconds == nil {
			t.Errorf("attempt 1 has no end: %+v", run)
		}
		if res, err := record.ReadResult(h.store().ResultPath("a-stuck")); err != nil || res.Attempt != 2 || res.Status != record.StatusDone {
			t.Errorf("attempt 2: %+v, %v; want done", res, err)
		}
	})

	// Several --force dispatches of one running bead at once: whichever start, every archived
	// attempt is final, and numbers are never reused.
	t.Run("several --force at once", func(t *testing.T) {
		const n = 4
		env := []string{"DISPATCH_MAX_RETRIES=20"}
		h.must(t, env, "a-many", h.repo, "hostile:m1", "HANG")
		h.waitAgent("a-many", 30*time.Second)
		var wg sync.WaitGroup
		codes := make([]int, n)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = h.run(t, env, "a-many", h.repo, "hostile:m1", "HANG", "--force")
			}()
		}
		wg.Wait()
		started := 0
		for _, c := range codes {
			if c == 0 {
				started++
			}
		}
		if started == 0 {
			t.Errorf("no --force dispatch started: exit codes %v", codes)
		}
		h.must(t, nil, "kill", "a-many")
		h.waitFinal("a-many", 30*time.Second)
		cur, _ := record.ReadRun(h.store().RunPath("a-many"))
		if cur == nil || cur.Attempt != 1+started {
			t.Errorf("the last attempt is %+v; want number %d after %d started", cur, 1+started, started)
		}
		for i := 1; cur != nil && i < cur.Attempt; i++ {
			run, res := h.archived(t, "a-many", i)
			if run.Status == record.StatusRunning || res.Status == record.StatusRunning || run.Attempt != i {
				t.Errorf("attempt %d archived as %s/%s (attempt %d)", i, run.Status, res.Status, run.Attempt)
			}
		}
	})
}

// stopped reports whether pid is a stopped process (state T).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] == 'T'
}

// TestHostileReconcileRepairsTheArchive (issue 9, item 6): attempts that older versions
// archived as running (their supervisor long dead) are closed by reconcile --all as
// supervisor-lost, finished at their last sign of life (their output's last write); plain
// reconcile, which reads the registry only, leaves them.
func TestHostileReconcileRepairsTheArchive(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.must(t, nil, "a-old", h.repo, "hostile:m1", "EXIT=0", "--wait")
	h.waitGoneEntry(t, "a-old")
	cur, err := record.ReadRun(h.store().RunPath("a-old"))
	if err != nil {
		t.Fatal(err)
	}

	// Attempts 1 and 2, archived while running by an older dispatch; attempt 1 left output.
	started := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
	lastWrite := started.Add(90 * time.Second)
	dir := h.statePath("attempts", "a-old")
	os.MkdirAll(dir, 0o700)
	for n := 1; n <= 2; n++ {
		run := *cur
		run.Attempt, run.Status, run.StartedAt = n, record.StatusRunning, record.FormatTime(started)
		run.FinishedAt, run.DurationSeconds, run.ExitCode, run.OutputSummary, run.FailureReason = nil, nil, nil, nil, nil
		res := record.Result{SchemaVersion: record.SchemaVersion, Bead: "a-old", Agent: run.Agent, Status: record.StatusRunning,
			Reason: "dispatched", StartedAt: run.StartedAt, Attempt: n, MaxRetries: run.MaxRetries, SessionName: run.SessionName}
		writeJSON(t, filepath.Join(dir, fmt.Sprintf("run-%d.json", n)), &run)
		writeJSON(t, filepath.Join(dir, fmt.Sprintf("result-%d.json", n)), &res)
	}
	out1 := filepath.Join(dir, "output-1.log")
	os.WriteFile(out1, []byte("agent: working on it\n"), 0o600)
	os.Chtimes(out1, lastWrite, lastWrite)
	cur.Attempt = 3
	writeJSON(t, h.store().RunPath("a-old"), cur)
	if res, err := record.ReadResult(h.store().ResultPath("a-old")); err == nil {
		res.Attempt = 3
		writeJSON(t, h.store().ResultPath("a-old"), res)
	}

	stderr := ""
	if code, stdout, e := h.run(t, nil, "reconcile"); code != 0 || stdout != "" {
		t.Errorf("reconcile: exit %d\n%s%s", code, stdout, e)
	} else {
		stderr = e
	}
	if run, _ := h.archived(t, "a-old", 1); run.Status != record.StatusRunning {
		t.Errorf("plain reconcile changed the archive (%s); it reads the registry only (%s)", run.Status, stderr)
	}

	out := h.must(t, nil, "reconcile", "--all", "--json")
	var got struct {
		Closed []struct {
			Bead    string `json:"bead"`
			Reason  string `json:"reason"`
			Attempt int    `json:"attempt"`
		} `json:"closed"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Closed) != 2 {
		t.Errorf("reconcile --all --json = %s (%v); want the two archived attempts", out, err)
	}
	// Attempt 2 has no output: its end is unknown (null), never its start and 0 s (issue 17).
	for n, finished := range map[int]time.Time{1: lastWrite, 2: {}} {
		run, res := h.archived(t, "a-old", n)
		if run.Status != record.StatusFailed || res.Status != record.StatusFailed || res.Reason != supervise.ReasonLost ||
			run.FailureReason == nil || *run.FailureReason != supervise.ReasonLost {
			t.Errorf("attempt %d after reconcile --all: %s/%s (%s); want failed, supervisor-lost", n, run.Status, res.Status, res.Reason)
			continue
		}
		if finished.IsZero() {
			if run.FinishedAt != nil || res.FinishedAt != nil || run.DurationSeconds != nil || res.DurationSeconds != nil {
				t.Errorf("attempt %d finished at %v/%v; want its end unknown (null)", n, run.FinishedAt, res.FinishedAt)
			}
		} else if run.FinishedAt == nil || *run.FinishedAt != record.FormatTime(finished) || res.FinishedAt == nil || *res.FinishedAt != *run.FinishedAt {
			t.Errorf("attempt %d finished at %v/%v; want its last sign of life %s", n, run.FinishedAt, res.FinishedAt, record.FormatTime(finished))
		}
		if res.Attempt != n || run.Attempt != n {
			t.Errorf("attempt %d closed as attempt %d/%d", n, run.Attempt, res.Attempt)
		}
		regular(t, filepath.Join(dir, fmt.Sprintf("run-%d.json", n)), 0o600)
	}
	// The current attempt is untouched, and a second pass closes nothing.
	if run, _ := record.ReadRun(h.store().RunPath("a-old")); run == nil || run.Status != record.StatusDone {
		t.Errorf("the current attempt changed: %+v", run)
	}
	if code, stdout, _ := h.run(t, nil, "reconcile", "--all"); code != 0 || stdout != "" {
		t.Errorf("a second reconcile --all: exit %d, %q; want nothing closed", code, stdout)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := record.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
