package attempt

import (
	"bytes"
	"context"
	"errors"
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
	for _, p := range []string{d.State().AttemptRun("bd-1", 1), d.State().AttemptResult("bd-1", 1), d.State().AttemptOutput("bd-1", 1)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("attempt 1 not archived: %v", err)
		}
	}
	o.Close()
	// Over the limit: refused, before anything is touched.
	if o, err := OpenWithin(ctx, d, "bd-1", Where{Backend: supervise.BackendProcess}, false, 1); !isRefusal(err) {
		if o != nil {
			o.Close()
		}
		t.Errorf("OpenWithin over the limit = %v; want a refusal", err)
	}
}

func isRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
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
	if archived != nil && (archived.FinishedAt != nil || archived.DurationSeconds != nil) {
		t.Errorf("lost attempt finished at %v after %v s; with no log, its end is unknown (null)", archived.FinishedAt, archived.DurationSeconds)
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

// TestRefusalIsNoAttempt: over DISPATCH_MAX_RETRIES the attempt is refused before anything is
// touched, on every further call: no record rewritten (dispatch.sh rewrote both as failed,
// max-retries-reached), nothing archived, the real last attempt kept once.
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
	runBefore, _ := os.ReadFile(d.Store.RunPath("bd-r"))
	resBefore, _ := os.ReadFile(d.Store.ResultPath("bd-r"))
	for call := 1; call <= 3; call++ {
		o, err := OpenWithin(ctx, d, "bd-r", Where{Backend: supervise.BackendProcess}, false, 2)
		var r *Refusal
		if !errors.As(err, &r) {
			if o != nil {
				o.Close()
			}
			t.Fatalf("call %d: OpenWithin = %v; want a refusal", call, err)
		}
		if r.Last == nil || r.Last.Attempt != 2 || r.LastResult == nil || r.LastResult.Reason != "agent-exit-4" || r.Running {
			t.Errorf("call %d: refusal = %+v; want it to name attempt 2, failed agent-exit-4", call, r)
		}
		runAfter, _ := os.ReadFile(d.Store.RunPath("bd-r"))
		resAfter, _ := os.ReadFile(d.Store.ResultPath("bd-r"))
		if !bytes.Equal(runAfter, runBefore) || !bytes.Equal(resAfter, resBefore) {
			t.Errorf("call %d: the refusal rewrote the records:\n%s\n%s", call, runAfter, resAfter)
		}
	}
	if entries, _ := os.ReadDir(d.State().AttemptDir("bd-r")); len(entries) != 0 {
		t.Errorf("a refusal archived %d files; want none", len(entries))
	}
	// A higher limit later lets the bead go on: attempt 3, attempt 2 archived once.
	o, err := OpenWithin(ctx, d, "bd-r", Where{Backend: supervise.BackendProcess}, false, 3)
	if err != nil || o.Number != 3 {
		t.Fatalf("OpenWithin under a higher limit = %+v, %v; want attempt 3", o, err)
	}
	o.Close()
	if res, _ := record.ReadResult(d.State().AttemptResult("bd-r", 2)); res == nil || res.Reason != "agent-exit-4" {
		t.Errorf("the archived attempt 2 is %+v; want the real one (agent-exit-4)", res)
	}
}

// Issue 17: a re-dispatch at the retry cap rewrote a bead that finished done at attempt 2/2 as
// failed/max-retries-reached, with the new call's model and prompt. A refusal never overwrites a
// finished record.
func TestRefusalKeepsAFinishedSuccess(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	last := running("bd-ok", 2)
	d.Store.WriteRun(ctx, &last)
	rec := &Recorder{Dir: d, Spec: &Spec{Run: last}}
	var console bytes.Buffer
	out := &supervise.Outcome{Status: record.StatusDone, Reason: "agent-exit-0", Finished: time.Now()}
	if err := rec.Finished(ctx, &supervise.Attempt{Name: "bd-ok"}, out, &console); err != nil {
		t.Fatal(err)
	}
	_, err := OpenWithin(ctx, d, "bd-ok", Where{Backend: supervise.BackendProcess}, true, 2)
	if !isRefusal(err) {
		t.Fatalf("OpenWithin at the cap = %v; want a refusal", err)
	}
	run, _ := record.ReadRun(d.Store.RunPath("bd-ok"))
	res, _ := record.ReadResult(d.Store.ResultPath("bd-ok"))
	if run == nil || res == nil || run.Status != record.StatusDone || res.Status != record.StatusDone || res.Reason != "agent-exit-0" {
		t.Errorf("after the refusal: run %+v, result %+v; want the success kept", run, res)
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
	// With no log, nothing tells when bd-st and bd-min ended: their end is unknown (null), never
	// their start and 0 s (issue 17: 0 s flattened every average).
	finishes := map[string]string{"bd-st": "", "bd-min": "", "bd-log": "2026-02-03T11:00:00Z", "bd-ph": "2026-02-04T09:30:00Z"}
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
		run, _ := record.ReadRun(d.Store.RunPath(bead))
		switch {
		case res == nil || run == nil || res.Status != record.StatusFailed:
			t.Errorf("%s closed as %+v; want failed", bead, res)
		case fin == "" && (res.FinishedAt != nil || res.DurationSeconds != nil || run.FinishedAt != nil || run.DurationSeconds != nil):
			t.Errorf("%s closed as finished at %v after %v s; want its end unknown (null)", bead, res.FinishedAt, res.DurationSeconds)
		case fin != "" && (res.FinishedAt == nil || *res.FinishedAt != fin):
			t.Errorf("%s closed as %+v; want failed, finished at %s (never now)", bead, res, fin)
		}
		// Nothing of ours will retry a record no supervisor of ours ran.
		if res != nil && res.WillRetry {
			t.Errorf("%s closed with will_retry true; nothing will retry it", bead)
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

// Issue 17: an unreadable run record blocked its bead for good ("repair it or move it away"),
// and --fix could not repair it. dispatch.sh read no attempt from it and dispatched attempt 1.
// It is set aside in the attempts archive, nothing lost, and the bead goes on.
func TestOpenSetsAsideAnUnreadableRecord(t *testing.T) {
	for _, bad := range []string{`{"bead":"bd-1", "attempt": 1`, `{"bead":"bd-1","attempt":"two","status":"failed"}`} {
		d := NewDir(t.TempDir())
		os.MkdirAll(d.State().Runs(), 0o700)
		os.MkdirAll(d.State().Logs(), 0o700)
		os.WriteFile(d.Store.RunPath("bd-1"), []byte(bad), 0o600)
		os.WriteFile(d.State().Log("bd-1"), []byte("its output\n"), 0o600)
		o, err := Open(context.Background(), d, "bd-1", Where{Backend: supervise.BackendProcess}, false)
		if err != nil {
			t.Fatalf("Open over %s = %v; want it set aside and attempt 1", bad, err)
		}
		o.Close()
		if o.Number != 1 || o.Aside == nil || o.Unreadable == nil {
			t.Fatalf("Open over %s = attempt %d, aside %+v (%v); want attempt 1, set aside", bad, o.Number, o.Aside, o.Unreadable)
		}
		if !strings.HasPrefix(o.Aside.Dir, d.State().AttemptDir("bd-1")+"/unreadable-") {
			t.Errorf("set aside in %s; want the attempts archive, named as unreadable", o.Aside.Dir)
		}
		if b, _ := os.ReadFile(filepath.Join(o.Aside.Dir, "run.json")); string(b) != bad {
			t.Errorf("the set-aside record holds %q, want %q", b, bad)
		}
		if b, _ := os.ReadFile(filepath.Join(o.Aside.Dir, "output.log")); string(b) != "its output\n" {
			t.Errorf("the set-aside log holds %q", b)
		}
		if _, err := os.Lstat(d.Store.RunPath("bd-1")); !os.IsNotExist(err) {
			t.Errorf("the unreadable record is still in runs/: %v", err)
		}
	}
}

// An unreadable run record is numbered after what the result and the archive know, so that the
// new attempt never takes the number (and later the archive name) of a kept one.
func TestOpenNumbersPastAnUnreadableRecord(t *testing.T) {
	ctx := context.Background()
	d := NewDir(t.TempDir())
	res := record.Result{SchemaVersion: 1, Bead: "bd-2", Agent: "fake", Status: record.StatusFailed, Reason: "agent-exit-1",
		StartedAt: "2026-02-03T10:00:00Z", Attempt: 2, MaxRetries: 3, SessionName: "agent-bd-2"}
	if err := d.Store.WriteResult(ctx, &res); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(d.State().Runs(), 0o700)
	os.WriteFile(d.Store.RunPath("bd-2"), []byte(`{"bead":`), 0o600)
	o, err := OpenWithin(ctx, d, "bd-2", Where{Backend: supervise.BackendProcess}, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if o.Number != 3 {
		t.Errorf("Open numbered attempt %d after an unreadable record whose result says attempt 2; want 3", o.Number)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Aside.Dir, "result.json")); !strings.Contains(string(b), `"attempt":2,`) {
		t.Errorf("the result was not kept beside the set-aside record: %q", b)
	}
}
