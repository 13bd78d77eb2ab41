package attempt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

func TestCombineVerifications(t *testing.T) {
	ws := &record.Verification{Lint: "pass", Tests: "skipped", UBS: "clean", Overall: "pass"}
	for _, tt := range []struct {
		name    string
		ws, own *record.Verification
		want    *record.Verification
	}{
		{"neither", nil, nil, nil},
		{"verify.sh only", ws, nil, ws},
		{"own only", nil, &record.Verification{Tests: "fail", Overall: "fail"}, &record.Verification{Tests: "fail", Overall: "fail"}},
		{"own fails", ws, &record.Verification{Tests: "fail", Overall: "fail"},
			&record.Verification{Lint: "pass", Tests: "fail", UBS: "clean", Overall: "fail"}},
		{"both pass", ws, &record.Verification{Tests: "pass", Overall: "pass"},
			&record.Verification{Lint: "pass", Tests: "pass", UBS: "clean", Overall: "pass"}},
		{"verify.sh fails", &record.Verification{Lint: "fail", Tests: "fail", Overall: "fail"}, &record.Verification{Tests: "pass", Overall: "pass"},
			&record.Verification{Lint: "fail", Tests: "fail", Overall: "fail"}},
	} {
		got := combine(tt.ws, tt.own)
		if (got == nil) != (tt.want == nil) || (got != nil && (got.Lint != tt.want.Lint || got.Tests != tt.want.Tests ||
			got.UBS != tt.want.UBS || got.Overall != tt.want.Overall)) {
			t.Errorf("combine(%s) = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if ws.Tests != "skipped" {
		t.Error("combine changed its argument")
	}
}

func TestWorkspaceVerifies(t *testing.T) {
	for _, tt := range []struct {
		status, reason string
		want           bool
	}{
		{record.StatusDone, "agent-exit-0", true},
		{record.StatusFailed, "agent-exit-3", true},
		{record.StatusFailed, "agent-signal-SIGKILL", true},
		{record.StatusFailed, supervise.ReasonStartFailed, true},
		{record.StatusTimeout, "watch-timeout-60s", true},
		{record.StatusFailed, supervise.ReasonKilled, false},
		{record.StatusFailed, supervise.ReasonSessionKilled, false},
		{record.StatusFailed, "supervisor-signal-SIGTERM", false},
		{record.StatusFailed, supervise.ReasonDiskExhausted, false},
	} {
		if got := workspaceVerifies(&supervise.Outcome{Status: tt.status, Reason: tt.reason}); got != tt.want {
			t.Errorf("workspaceVerifies(%s, %s) = %v, want %v", tt.status, tt.reason, got, tt.want)
		}
	}
}

// TestFinishedRunsTheHooksAroundTheRecords: verify.sh before the records (its checks in them),
// the others after, with the records final and the bead's lock let go; each once, though the
// supervisor calls Finished again while a write fails.
func TestFinishedRunsTheHooksAroundTheRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := NewDir(filepath.Join(dir, "state"))
	root := filepath.Join(dir, "ws")
	log := filepath.Join(dir, "hooks.log")
	lock := d.Layout.LockPath("bd-1")
	result := d.Store.ResultPath("bd-1")
	// Each hook logs its name, the result record's status as it sees it, and whether the
	// bead's lock is free (flock -n on it).
	hook := "#!/bin/sh\nst=$(grep -o '\"status\":\"[a-z]*\"' " + result + ")\n" +
		"if flock -n " + lock + " true; then l=free; else l=held; fi\n" +
		"echo \"$(basename \"$0\") $st $l\" >>" + log + "\n"
	for _, name := range []string{workspace.ScriptVerify, workspace.ScriptValidateState, workspace.ScriptWake} {
		body := hook
		if name == workspace.ScriptVerify {
			body += `echo '{"checks": {"lint": "pass", "tests": "pass", "ubs": "clean"}, "overall": "pass"}'` + "\n"
		}
		p := filepath.Join(root, "scripts", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := running("bd-1", 1)
	if err := d.Store.WriteRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	res := record.Result{SchemaVersion: record.SchemaVersion, Bead: "bd-1", Agent: "fake", Status: record.StatusRunning,
		Reason: ReasonDispatched, StartedAt: run.StartedAt, Attempt: 1, MaxRetries: 2, SessionName: run.SessionName}
	if err := d.Store.WriteResult(ctx, &res); err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{Dir: d, Spec: &Spec{Run: run, Hooks: &workspace.Hooks{Root: root, Instruction: "tell me"}}}
	a := &supervise.Attempt{Name: "bd-1", Dir: dir}
	out := &supervise.Outcome{Status: record.StatusDone, Reason: "agent-exit-0", Finished: time.Now()}
	var console bytes.Buffer
	if err := rec.Finished(ctx, a, out, &console); err != nil {
		t.Fatal(err)
	}
	want := `verify.sh "status":"running" free
validate-state.sh "status":"done" free
wake-gateway.sh "status":"done" free
`
	if got := readOrEmpty(log); got != want {
		t.Errorf("hooks saw:\n%s\nwant:\n%s", got, want)
	}
	got, err := record.ReadResult(result)
	if err != nil || got.Verification == nil || got.Verification.UBS != "clean" || got.Verification.Overall != "pass" {
		t.Errorf("result's verification = %+v, %v", got.Verification, err)
	}
	if _, err := os.Stat(d.State().Verify("bd-1")); err != nil {
		t.Errorf("verify.sh's output not kept: %v", err)
	}
	memory, _ := filepath.Glob(filepath.Join(root, "memory", "*.md"))
	if len(memory) != 1 || !strings.Contains(readOrEmpty(memory[0]), "- Bead `bd-1`: agent=fake model=m attempt=1/2 status=done") {
		t.Errorf("memory files %v: %q", memory, readOrEmpty(memory[0]))
	}

	// The same outcome again (a retried write): verify.sh does not run a second time.
	os.Remove(log)
	if err := rec.Finished(ctx, a, out, &console); err != nil {
		t.Fatal(err)
	}
	if got := readOrEmpty(log); strings.Contains(got, "verify.sh") {
		t.Errorf("verify.sh ran again for the same outcome:\n%s", got)
	}

	// Records that belong to a newer attempt are left alone, and no one is woken for this one.
	newer := running("bd-1", 2)
	d.Store.WriteRun(ctx, &newer)
	os.Remove(log)
	old := &Recorder{Dir: d, Spec: &Spec{Run: run, Hooks: &workspace.Hooks{Root: root}}}
	if err := old.Finished(ctx, a, &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonSessionKilled, Finished: time.Now()}, &console); err != nil {
		t.Fatal(err)
	}
	if got := readOrEmpty(log); got != "" {
		t.Errorf("hooks ran for an attempt whose records were replaced:\n%s", got)
	}
}

func readOrEmpty(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
