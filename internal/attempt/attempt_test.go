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
)

func running(bead string, n int) record.Run {
	return record.Run{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: "fake", Model: "m", Repo: "/repo",
		Prompt: "p", PromptHash: record.PromptHash("p"), PromptFull: "p", StartedAt: record.FormatTime(time.Now().Add(-time.Minute)),
		Status: record.StatusRunning, Attempt: n, MaxRetries: 2, SessionName: record.SessionName(bead),
		ResultFile: record.ResultFile("/state", bead)}
}

func TestCompleteAndTheRetryRule(t *testing.T) {
	tests := []struct {
		status  string
		attempt int
		retry   bool
	}{
		{record.StatusDone, 1, false},
		{record.StatusFailed, 1, true},
		{record.StatusTimeout, 1, true},
		{record.StatusFailed, 2, false}, // the last attempt
	}
	for _, tt := range tests {
		out := &supervise.Outcome{Status: tt.status, ExitCode: 3, Reason: "agent-exit-3", Finished: time.Now(), Summary: "s"}
		run, res := Complete(running("bd-1", tt.attempt), out, nil)
		if res.WillRetry != tt.retry {
			t.Errorf("Complete(%s, attempt %d).WillRetry = %v, want %v", tt.status, tt.attempt, res.WillRetry, tt.retry)
		}
		if (run.FailureReason != nil) != (tt.status != record.StatusDone) {
			t.Errorf("Complete(%s).FailureReason = %v", tt.status, run.FailureReason)
		}
		if run.ExitCode == nil || *run.ExitCode != 3 || run.DurationSeconds == nil || *run.DurationSeconds < 59 {
			t.Errorf("Complete(%s) exit %v duration %v", tt.status, run.ExitCode, run.DurationSeconds)
		}
	}
	_, res := Complete(running("bd-1", 1), &supervise.Outcome{Status: record.StatusFailed, UnknownExit: true, Finished: time.Now()}, nil)
	if res.ExitCode != nil {
		t.Errorf("an unknown exit was recorded as %d", *res.ExitCode)
	}
}

func TestOpenNumbersAndArchives(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	o, err := Open(ctx, d, "bd-1", Where{Backend: supervise.BackendProcess}, false)
	if err != nil || o.Number != 1 || o.Previous != nil {
		t.Fatalf("Open on an empty state = %+v, %v; want attempt 1", o, err)
	}
	// The first attempt ends; its log is there.
	rec := &Recorder{Dir: d, Spec: &Spec{Run: running("bd-1", 1)}}
	if err := d.Store.WriteRun(ctx, &rec.Spec.Run); err != nil {
		t.Fatal(err)
	}
	o.Close()
	var console bytes.Buffer
	out := &supervise.Outcome{Status: record.StatusFailed, ExitCode: 1, Reason: "agent-exit-1", Finished: time.Now()}
	if err := rec.Finished(ctx, &supervise.Attempt{Name: "bd-1"}, out, &console); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(d.State().Logs(), 0o700)
	os.WriteFile(d.State().Log("bd-1"), []byte("attempt one's output\n"), 0o600)

	o, err = Open(ctx, d, "bd-1", Where{Backend: supervise.BackendProcess}, false)
	if err != nil || o.Number != 2 || o.Previous == nil || o.Previous.Status != record.StatusFailed {
		t.Fatalf("second Open = %+v, %v; want attempt 2 after a failed one", o, err)
	}
	defer o.Close()
	for _, p := range []string{d.State().AttemptRun("bd-1", 1), d.State().AttemptResult("bd-1", 1), d.State().AttemptOutput("bd-1", 1)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("attempt 1 not archived: %v", err)
		}
	}
	// Over the limit: refused, recorded, not run.
	run := running("bd-1", 3)
	if err := o.Refuse(ctx, run); err != nil {
		t.Fatal(err)
	}
	res, err := record.ReadResult(d.Store.ResultPath("bd-1"))
	if err != nil || res.Reason != ReasonMaxRetries || res.WillRetry {
		t.Errorf("refused result = %+v, %v", res, err)
	}
}

func TestOpenClosesALostPredecessorBeforeArchiving(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	run := running("bd-2", 1)
	if err := d.Store.WriteRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	// Its supervisor is registered but long dead (pid 0 never runs a supervisor).
	d.Layout.WriteEntry(&supervise.Entry{Tool: Tool, Name: "bd-2", Attempt: 1, StartedAt: run.StartedAt})
	o, err := Open(ctx, d, "bd-2", Where{Backend: supervise.BackendProcess}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	archived, err := record.ReadRun(d.State().AttemptRun("bd-2", 1))
	if err != nil || archived.Status != record.StatusFailed || archived.FailureReason == nil || *archived.FailureReason != supervise.ReasonLost {
		t.Errorf("archived attempt 1 = %+v, %v; want it closed as supervisor-lost", archived, err)
	}
	if archived != nil && archived.FinishedAt != nil && *archived.FinishedAt != run.StartedAt {
		t.Errorf("lost attempt finished at %s; with no log, its last sign of life is its start %s", *archived.FinishedAt, run.StartedAt)
	}
	if e, _ := d.Layout.ReadEntry("bd-2"); e != nil {
		t.Errorf("the lost supervisor's entry is still there: %+v", e)
	}
}

func TestLostUsesTheOutcomeTheSupervisorKept(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	run := running("bd-3", 1)
	d.Store.WriteRun(ctx, &run)
	kept := &supervise.Outcome{Status: record.StatusDone, ExitCode: 0, Reason: "agent-exit-0", Finished: time.Now(), Summary: "all good"}
	d.Layout.WriteEntry(&supervise.Entry{Tool: Tool, Name: "bd-3", Attempt: 1, StartedAt: run.StartedAt, Outcome: kept})
	lost, err := ReconcileBead(ctx, d, nil, "bd-3")
	if err != nil || lost == nil || lost.Reason != "agent-exit-0" {
		t.Fatalf("ReconcileBead = %+v, %v; want the kept outcome written", lost, err)
	}
	res, _ := record.ReadResult(d.Store.ResultPath("bd-3"))
	if res == nil || res.Status != record.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 ||
		!strings.Contains(*res.OutputSummary, "all good") {
		t.Errorf("result = %+v; want the real outcome, not supervisor-lost", res)
	}
	if again, _ := ReconcileBead(ctx, d, nil, "bd-3"); again != nil {
		t.Errorf("a second reconcile closed %+v again", again)
	}
}

func TestFinishedLeavesANewerAttemptsRecordsAlone(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	newer := running("bd-4", 2)
	d.Store.WriteRun(ctx, &newer)
	rec := &Recorder{Dir: d, Spec: &Spec{Run: running("bd-4", 1)}}
	var console bytes.Buffer
	out := &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonSessionKilled, Finished: time.Now()}
	if err := rec.Finished(ctx, &supervise.Attempt{Name: "bd-4"}, out, &console); err != nil {
		t.Fatal(err)
	}
	cur, _ := record.ReadRun(d.Store.RunPath("bd-4"))
	if cur.Attempt != 2 || cur.Status != record.StatusRunning {
		t.Errorf("attempt 1's end overwrote attempt 2's record: %+v", cur)
	}
	if !strings.Contains(console.String(), "now belong to attempt 2") {
		t.Errorf("console = %q, want it to say why nothing was written", console.String())
	}
}

// TestRefusalIsNoAttempt: over DISPATCH_MAX_RETRIES dispatch.sh recorded the capped attempt
// (attempt = max_retries), failed, max-retries-reached, exit 1, 0 s, and stayed there on every
// further call. No refusal is archived as an attempt; the real last attempt is kept once.
func TestRefusalIsNoAttempt(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	last := running("bd-r", 2)
	d.Store.WriteRun(ctx, &last)
	rec := &Recorder{Dir: d, Spec: &Spec{Run: last}}
	var console bytes.Buffer
	out := &supervise.Outcome{Status: record.StatusFailed, ExitCode: 4, Reason: "agent-exit-4", Finished: time.Now()}
	if err := rec.Finished(ctx, &supervise.Attempt{Name: "bd-r"}, out, &console); err != nil {
		t.Fatal(err)
	}
	for call := 1; call <= 3; call++ {
		o, err := Open(ctx, d, "bd-r", Where{Backend: supervise.BackendProcess}, false)
		if err != nil {
			t.Fatal(err)
		}
		if o.Number != 3 {
			t.Errorf("refusal %d: Open numbered attempt %d, want 3 (the capped attempt stays 2)", call, o.Number)
		}
		run := running("bd-r", o.Number)
		if err := o.Refuse(ctx, run); err != nil {
			t.Fatal(err)
		}
		o.Close()
		r, _ := record.ReadRun(d.Store.RunPath("bd-r"))
		res, _ := record.ReadResult(d.Store.ResultPath("bd-r"))
		if r == nil || res == nil || r.Attempt != 2 || res.Attempt != 2 || res.Reason != ReasonMaxRetries || res.WillRetry ||
			res.ExitCode == nil || *res.ExitCode != 1 || res.DurationSeconds == nil || *res.DurationSeconds != 0 ||
			*r.FinishedAt != r.StartedAt || r.OutputSummary != nil {
			t.Errorf("refusal %d recorded run %+v result %+v; want attempt 2, failed, exit 1, 0 s", call, r, res)
		}
	}
	entries, _ := os.ReadDir(d.State().AttemptDir("bd-r"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "result-2.json run-2.json" {
		t.Errorf("attempts/bd-r holds %v; want the real attempt 2 only, no refusal", names)
	}
	if res, _ := record.ReadResult(d.State().AttemptResult("bd-r", 2)); res == nil || res.Reason != "agent-exit-4" {
		t.Errorf("the archived attempt 2 is %+v; want the real one (agent-exit-4)", res)
	}
}

func TestOpenMakesTheOriginalsStateDirs(t *testing.T) {
	d := NewDir(filepath.Join(t.TempDir(), "state"))
	o, err := Open(context.Background(), d, "bd-d", Where{Backend: supervise.BackendProcess}, false)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	for _, dir := range []string{d.State().Runs(), d.State().Results(), d.State().Watch()} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("Open did not create %s: %v", dir, err)
		}
	}
}

// TestReconcileAllClosesLegacyRecords: records no supervisor of ours registered (dispatch.sh's,
// legacy minimal ones) are closed when left running, completed to full records, finished at
// their last sign of life; the others are left as they are.
func TestReconcileAllClosesLegacyRecords(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	write := func(path, doc string) {
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	feb := "2026-02-03T10:00:00Z"
	// Minimal, with a status: it failed the schema check when closed, before.
	write(d.Store.RunPath("bd-st"), `{"bead":"bd-st","agent":"claude","model":"sonnet","repo":"/r","started_at":"`+feb+`","attempt":1,"prompt":"Fix it","status":"running"}`)
	// Minimal, no status, no result: left running.
	write(d.Store.RunPath("bd-min"), `{"bead":"bd-min","agent":"codex","model":"gpt","repo":"/r","started_at":"`+feb+`","attempt":2,"prompt":"Build it"}`)
	// Minimal, its result says done: not running.
	write(d.Store.RunPath("bd-done"), `{"bead":"bd-done","agent":"codex","model":"gpt","repo":"/r","started_at":"`+feb+`","attempt":1,"prompt":"Build it"}`)
	write(d.Store.ResultPath("bd-done"), `{"bead":"bd-done","status":"done","finished_at":"2026-02-03T10:05:00Z","attempt":1}`)
	// A log written an hour after the start: the last sign of life.
	write(d.Store.RunPath("bd-log"), `{"bead":"bd-log","agent":"claude","model":"sonnet","repo":"/r","started_at":"`+feb+`","attempt":1,"prompt":"Fix it"}`)
	write(d.State().Log("bd-log"), "working\n")
	hourLater := time.Date(2026, 2, 3, 11, 0, 0, 0, time.UTC)
	os.Chtimes(d.State().Log("bd-log"), hourLater, hourLater)
	// '$START' and no log: only the record's own last write is known.
	write(d.Store.RunPath("bd-ph"), `{"bead":"bd-ph","agent":"claude","model":"sonnet","repo":"/r","started_at":"'$START'","attempt":1,"prompt":"Fix it"}`)
	written := time.Date(2026, 2, 4, 9, 30, 0, 0, time.UTC)
	os.Chtimes(d.Store.RunPath("bd-ph"), written, written)
	// No agent to be had: cannot be closed, and says so, without stopping the others.
	write(d.Store.RunPath("bd-noagent"), `{"bead":"bd-noagent","model":"sonnet","repo":"/r","started_at":"`+feb+`","attempt":1,"prompt":"Fix it"}`)

	closed, err := Reconcile(ctx, d, nil, true)
	if err == nil || !strings.Contains(err.Error(), "bd-noagent") || !strings.Contains(err.Error(), "/agent") {
		t.Errorf("Reconcile error = %v; want bd-noagent named, with what it lacks", err)
	}
	var names []string
	for _, c := range closed {
		names = append(names, c.Name+":"+c.Reason)
	}
	if got, want := strings.Join(names, " "), "bd-log:supervisor-lost bd-min:supervisor-lost bd-ph:supervisor-lost bd-st:supervisor-lost"; got != want {
		t.Errorf("Reconcile closed %s, want %s", got, want)
	}
	finishes := map[string]string{"bd-st": feb, "bd-min": feb, "bd-log": "2026-02-03T11:00:00Z", "bd-ph": "2026-02-04T09:30:00Z"}
	for bead, fin := range finishes {
		for _, path := range []string{d.Store.RunPath(bead), d.Store.ResultPath(bead)} {
			doc, _ := os.ReadFile(path)
			kind := record.KindRun
			if path == d.Store.ResultPath(bead) {
				kind = record.KindResult
			}
			if err := record.Check(kind, doc); err != nil {
				t.Errorf("%s: closed record fails the schema: %v", path, err)
			}
		}
		res, _ := record.ReadResult(d.Store.ResultPath(bead))
		if res == nil || res.Status != record.StatusFailed || res.FinishedAt == nil || *res.FinishedAt != fin {
			t.Errorf("%s closed as %+v; want failed, finished at %s (never now)", bead, res, fin)
		}
	}
	if res, _ := record.ReadResult(d.Store.ResultPath("bd-ph")); res != nil && res.DurationSeconds != nil {
		t.Errorf("bd-ph has no known start, yet a duration of %d s", *res.DurationSeconds)
	}
	if res, _ := record.ReadResult(d.Store.ResultPath("bd-min")); res != nil && (res.Attempt != 2 || res.Agent != "codex") {
		t.Errorf("bd-min closed as attempt %d of %s; want its own attempt 2 of codex", res.Attempt, res.Agent)
	}
	if doc, _ := os.ReadFile(d.Store.ResultPath("bd-done")); !strings.Contains(string(doc), `"status":"done"`) {
		t.Errorf("a finished legacy record was touched: %s", doc)
	}
	if again, err := Reconcile(ctx, d, nil, true); len(again) != 0 || err == nil {
		t.Errorf("a second Reconcile closed %v (err %v); want nothing more, bd-noagent still reported", again, err)
	}
}

// TestLostLongAgoFinishesAtTheLogsLastWrite: a registered supervisor lost long ago is closed at
// its log's last write (supervise's lastSign), not at the time of the reconcile.
func TestLostLongAgoFinishesAtTheLogsLastWrite(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	run := running("bd-old", 1)
	run.StartedAt = "2026-02-03T10:00:00Z"
	d.Store.WriteRun(ctx, &run)
	d.Layout.WriteEntry(&supervise.Entry{Tool: Tool, Name: "bd-old", Attempt: 1, StartedAt: run.StartedAt})
	os.MkdirAll(d.State().Logs(), 0o700)
	os.WriteFile(d.State().Log("bd-old"), []byte("last words\n"), 0o600)
	last := time.Date(2026, 2, 3, 10, 42, 0, 0, time.UTC)
	os.Chtimes(d.State().Log("bd-old"), last, last)
	if _, err := Reconcile(ctx, d, nil, false); err != nil {
		t.Fatal(err)
	}
	res, _ := record.ReadResult(d.Store.ResultPath("bd-old"))
	if res == nil || *res.FinishedAt != "2026-02-03T10:42:00Z" || *res.DurationSeconds != 42*60 {
		t.Errorf("lost attempt closed as %+v; want finished at the log's last write, 2520 s", res)
	}
}

func TestOpenNeverReplacesAnUnreadableRecord(t *testing.T) {
	d := NewDir(t.TempDir())
	os.MkdirAll(d.State().Runs(), 0o700)
	bad := []byte(`{"bead":"bd-5","attempt":"two","status":"failed"}`)
	os.WriteFile(d.Store.RunPath("bd-5"), bad, 0o600)
	if o, err := Open(context.Background(), d, "bd-5", Where{Backend: supervise.BackendProcess}, false); err == nil {
		o.Close()
		t.Fatal("Open took an unreadable run record for no previous attempt")
	}
	if b, _ := os.ReadFile(d.Store.RunPath("bd-5")); !bytes.Equal(b, bad) {
		t.Errorf("the unreadable record was changed: %s", b)
	}
}
