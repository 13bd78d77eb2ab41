package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// readOnly makes dir read-only for everyone, root included (a read-only bind mount of itself),
// until the returned function (also a cleanup) undoes it; it skips the test where mounting is
// not allowed.
func readOnly(t *testing.T, dir string) (undo func()) {
	t.Helper()
	if out, err := exec.Command("mount", "--bind", dir, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	mounted := true
	undo = func() {
		if mounted {
			mounted = false
			if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v: %s", dir, err, out)
			}
		}
	}
	t.Cleanup(undo)
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make a bind mount read-only: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return undo
}

// TestHostileUnwritableRecords (issue 9, item 5): the agent ends while its result record cannot
// be written (results/ read-only, even to root). The supervisor writes what it can (the run
// record), keeps the outcome in its registry entry, retries, and gives up; once results/ is
// writable again, reconcile finishes the job from the entry: the real exit code, not
// "supervisor-lost".
func TestHostileUnwritableRecords(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.must(t, nil, "r-first", h.repo, "hostile:m1", "EXIT=0", "--wait") // makes results/
	h.must(t, nil, "r-1", h.repo, "hostile:m1", "WAITFOR=go-r-1 EXIT=3")
	h.waitAgent("r-1", 30*time.Second)
	e, err := h.layout().ReadEntry("r-1")
	if err != nil || e == nil {
		t.Fatalf("no registry entry: %v", err)
	}

	writable := readOnly(t, h.statePath("results"))
	if err := os.WriteFile(h.dir+"/go-r-1", nil, 0o600); err != nil { // the agent exits 3 now
		t.Fatal(err)
	}
	// The supervisor gives up after about 30 s of retries, its outcome in its entry.
	deadline := time.Now().Add(2 * time.Minute)
	for supervise.SupervisorAlive(e.PID, "r-1") {
		if time.Now().After(deadline) {
			t.Fatal("the supervisor is still retrying after 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	kept, err := h.layout().ReadEntry("r-1")
	if err != nil || kept == nil || kept.Outcome == nil || kept.Outcome.ExitCode != 3 {
		t.Fatalf("the entry after the supervisor gave up: %+v, %v; want the outcome (exit 3) kept", kept, err)
	}
	if res, err := record.ReadResult(h.store().ResultPath("r-1")); err != nil || res.Status != record.StatusRunning {
		t.Fatalf("the result record while results/ is read-only: %+v, %v; want it still running", res, err)
	}

	writable()
	out := h.must(t, nil, "reconcile")
	if !strings.Contains(out, "r-1: closed as failed (agent-exit-3)") {
		t.Errorf("reconcile did not finish r-1 from its entry:\n%s", out)
	}
	run, res := finalRecords(t, h.fleet, "r-1")
	for what, exit := range map[string]*int64{"run": run.ExitCode, "result": res.ExitCode} {
		if exit == nil || *exit != 3 {
			t.Errorf("%s record's exit code %v, want 3", what, exit)
		}
	}
	if res.Status != record.StatusFailed || res.Reason != "agent-exit-3" || !res.WillRetry {
		t.Errorf("result: %s (%s), will_retry %v; want failed (agent-exit-3), will_retry", res.Status, res.Reason, res.WillRetry)
	}
	if e, _ := h.layout().ReadEntry("r-1"); e != nil {
		t.Errorf("the entry is still there: %+v", e)
	}
}
