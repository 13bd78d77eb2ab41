package record

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
)

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 2, 12, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Time
		wantOK bool
	}{
		{"2026-02-12T10:00:00Z", want, true},
		{"2026-02-12T10:00:00.123456Z", want.Add(123456 * time.Microsecond), true},
		{"2026-02-12T11:00:00+01:00", want, true},
		{"2026-02-12T10:00:00", want, true},
		{"2026-02-12T10:00:00.5", want.Add(500 * time.Millisecond), true},
		{"2026-02-12 10:00:00", want, true},
		{"'$START'", time.Time{}, false},
		{"$START", time.Time{}, false},
		{"", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseTime(tt.in)
		if ok != tt.wantOK || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestCheckBead(t *testing.T) {
	for _, ok := range []string{"bd-1", "bd-1.2", "A.b_c-9", strings.Repeat("x", 128)} {
		if err := CheckBead(ok); err != nil {
			t.Errorf("CheckBead(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a/b", "a..b", "a b", "a;rm", "$(x)", "é", strings.Repeat("x", 129), "ps\n",
		"bd-1.", "x.lock", "HEAD", "bd-1-verify"} {
		if err := CheckBead(bad); err == nil {
			t.Errorf("CheckBead(%q) = nil, want an error", bad)
		}
	}
}

func TestDecodeForms(t *testing.T) {
	legacy := "\xef\xbb\xbf" + `{"bead":"bd-d","agent":"claude","model":"sonnet","repo":"/tmp/repo","started_at":"'$START'","attempt":1,"prompt":"Review PR"}`
	r, err := DecodeRun([]byte(legacy))
	if err != nil {
		t.Fatalf("DecodeRun(legacy with BOM) = %v", err)
	}
	if r.Bead != "bd-d" || r.Attempt != 1 || !IsPlaceholder(r.StartedAt) || r.SchemaVersion != 0 {
		t.Errorf("DecodeRun(legacy) = %+v", r)
	}
	for _, bad := range []string{"", "null", "[1]", `{"bead":`, `{"attempt":"one"}`, `{"attempt":1.5}`} {
		if _, err := DecodeRun([]byte(bad)); err == nil {
			t.Errorf("DecodeRun(%q) = nil error, want one", bad)
		}
	}
}

func fullRun(bead string) *Run {
	return &Run{
		SchemaVersion: 1, Bead: bead, Agent: "aider", Model: "m", Repo: "/r",
		Prompt: "p", PromptHash: PromptHash("p"), PromptFull: "p",
		StartedAt: "2026-01-01T00:00:00Z", Status: StatusRunning, Attempt: 1, MaxRetries: 2,
		SessionName: SessionName(bead), ResultFile: ResultFile("/state", bead),
	}
}

func TestStoreWriteValidatesAndIsAtomic(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	r := fullRun("bd-1")
	if err := s.WriteRun(ctx, r); err != nil {
		t.Fatalf("WriteRun(valid) = %v", err)
	}
	got, err := ReadRun(s.RunPath("bd-1"))
	if err != nil || got.Agent != "aider" || got.FinishedAt != nil {
		t.Fatalf("ReadRun = %+v, %v", got, err)
	}
	fi, _ := os.Stat(s.RunPath("bd-1"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode = %v, want 0600 (records hold prompts)", fi.Mode().Perm())
	}

	bad := fullRun("bd-1")
	bad.Status = "finished"
	err = s.WriteRun(ctx, bad)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "/status") {
		t.Errorf("WriteRun(invalid status) = %v, want ErrInvalid naming /status", err)
	}
	again, _ := ReadRun(s.RunPath("bd-1"))
	if again.Status != StatusRunning {
		t.Errorf("after a refused write the record says %q, want the old %q", again.Status, StatusRunning)
	}
	// The locks are under locks/: runs/ holds the records and nothing else.
	if entries, _ := os.ReadDir(filepath.Dir(s.RunPath("bd-1"))); len(entries) != 1 {
		t.Errorf("runs/ holds %d entries, want the record only (no lock beside it)", len(entries))
	}
	if _, err := os.Stat(s.Paths().RunLock("bd-1")); err != nil {
		t.Errorf("no run lock under locks/: %v", err)
	}
	if err := s.WriteRun(ctx, fullRun("../escape")); err == nil {
		t.Error("WriteRun(bead ../escape) = nil, want a refusal")
	}

	res := &Result{SchemaVersion: 1, Bead: "bd-1", Agent: "aider", Status: StatusDone, Reason: "exit-0",
		StartedAt: "2026-01-01T00:00:00Z", FinishedAt: Str("2026-01-01T00:01:00Z"), DurationSeconds: Int(60),
		Attempt: 1, MaxRetries: 2, ExitCode: Int(0), SessionName: SessionName("bd-1")}
	if err := s.WriteResult(ctx, res); err != nil {
		t.Fatalf("WriteResult(valid) = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(s.ResultPath("bd-1"))); len(entries) != 1 {
		t.Errorf("results/ holds %d entries, want the record only", len(entries))
	}
	if fi, err := os.Stat(s.Paths().Locks()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("locks/ = %v, %v; want a directory 0700", fi, err)
	}
}

func TestStoreWriteWaitsForTheRecordLock(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	lock := s.Paths().RunLock("bd-1")
	os.MkdirAll(filepath.Dir(lock), 0o700)
	unlock, err := fsx.LockFile(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.WriteRun(ctx, fullRun("bd-1")); !errors.Is(err, fsx.ErrLocked) {
		t.Errorf("WriteRun(run lock held) = %v, want ErrLocked", err)
	}
	if err := s.WriteResult(context.Background(), &Result{SchemaVersion: 1, Bead: "bd-1", Agent: "a", Status: StatusRunning,
		Reason: "dispatched", StartedAt: "2026-01-01T00:00:00Z", Attempt: 1, MaxRetries: 2,
		SessionName: SessionName("bd-1")}); err != nil {
		t.Errorf("WriteResult(only the run's lock held) = %v, want it written", err)
	}
}

// usersSchemas are the schemas users keep in their workspaces; migrated records must pass them.
func usersSchema(t *testing.T, kind string) *schema.Schema {
	t.Helper()
	s, err := schema.Load(kind, "../../../shared/compat/schemas")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Source, "compat") {
		t.Skip("compat schemas not found")
	}
	return s
}

func TestMigrateLegacyPair(t *testing.T) {
	run := []byte(`{"bead":"bd-x","agent":"claude","model":"sonnet","repo":"/tmp/repo","started_at":"'$START'","attempt":1,"prompt":"Fix the bug"}`)
	res := []byte(`{"bead":"bd-x","status":"failed","finished_at":"2026-02-12T10:05:00Z","attempt":1,"duration_seconds":300,"reason":"exit-1"}`)

	mr, err := MigrateRun(run, res, Defaults{MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got Run
	if err := json.Unmarshal(mr.Output, &got); err != nil {
		t.Fatal(err)
	}
	if got.StartedAt != "2026-02-12T10:00:00Z" || got.Status != StatusFailed || *got.FinishedAt != "2026-02-12T10:05:00Z" ||
		got.PromptHash != PromptHash("Fix the bug") || got.PromptFull != "Fix the bug" || *got.DurationSeconds != 300 ||
		got.MaxRetries != 2 || got.SessionName != "agent-bd-x" || *got.FailureReason != "exit-1" {
		t.Errorf("MigrateRun = %s", mr.Output)
	}
	if problems, err := usersSchema(t, "run").Validate(mr.Output); err != nil || len(problems) > 0 {
		t.Errorf("migrated run fails the users' schema: %v %v", problems, err)
	}
	mr2, _ := MigrateRun(mr.Output, res, Defaults{MaxRetries: 2})
	if len(mr2.Changes) != 0 {
		t.Errorf("second MigrateRun changed %v, want nothing", mr2.Changes)
	}

	ms, err := MigrateResult(res, mr.Output, Defaults{MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := usersSchema(t, "result").Validate(ms.Output); err != nil || len(problems) > 0 {
		t.Errorf("migrated result fails the users' schema: %v %v\n%s", problems, err, ms.Output)
	}
	var gotRes Result
	json.Unmarshal(ms.Output, &gotRes)
	if !gotRes.WillRetry || gotRes.StartedAt != "2026-02-12T10:00:00Z" || gotRes.Reason != "exit-1" {
		t.Errorf("MigrateResult = %s", ms.Output)
	}
	ms2, _ := MigrateResult(ms.Output, mr.Output, Defaults{MaxRetries: 2})
	if len(ms2.Changes) != 0 {
		t.Errorf("second MigrateResult changed %v, want nothing", ms2.Changes)
	}
}

func TestMigrateKeepsWhatItCannotFix(t *testing.T) {
	run := []byte(`{"bead":"bd-y","agent":"claude","repo":"/r","started_at":"'$START'","attempt":"two","prompt":"p","exit_code":12345678901234567890}`)
	m, err := MigrateRun(run, nil, Defaults{MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := string(m.Output)
	for _, want := range []string{`"attempt":"two"`, `"exit_code":12345678901234567890`, `"started_at":"'$START'"`, `"max_retries":3`, `"status":"running"`} {
		if !strings.Contains(out, want) {
			t.Errorf("MigrateRun output lacks %s:\n%s", want, out)
		}
	}
	if _, err := MigrateRun([]byte(`[1]`), nil, Defaults{MaxRetries: 2}); err == nil {
		t.Error("MigrateRun(array) = nil error, want one")
	}
}

func TestMigrateFullRecordUnchanged(t *testing.T) {
	dir := "../../../shared/compat/analyze-runs/basic/state"
	b, err := os.ReadFile(filepath.Join(dir, "runs", "bd-a.json"))
	if err != nil {
		t.Skip(err)
	}
	m, err := MigrateRun(b, nil, Defaults{MaxRetries: 2})
	if err != nil || len(m.Changes) != 0 {
		t.Errorf("MigrateRun(full record) = %v, %v; want no changes", m.Changes, err)
	}
}

// TestMarshalIsJqCompact pins the bytes dispatch.sh wrote (jq -c, then a newline): one line,
// the original's field order, verification null when there is none, and jq's escapes.
func TestMarshalIsJqCompact(t *testing.T) {
	r := fullRun("bd-1")
	r.TemplateName = Str(DefaultTemplate)
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema_version":1,"bead":"bd-1","agent":"aider","model":"m","repo":"/r","prompt":"p",` +
		`"prompt_hash":"` + PromptHash("p") + `","started_at":"2026-01-01T00:00:00Z","finished_at":null,` +
		`"duration_seconds":null,"status":"running","attempt":1,"max_retries":2,"session_name":"agent-bd-1",` +
		`"result_file":"/state/results/bd-1.json","exit_code":null,"output_summary":null,"failure_reason":null,` +
		`"template_name":"custom","prompt_full":"p","verification":null}` + "\n"
	if string(b) != want {
		t.Errorf("Marshal(run) =\n%s\nwant\n%s", b, want)
	}
	res := &Result{SchemaVersion: 1, Bead: "bd-1", Agent: "claude", Status: StatusFailed, Reason: "max-retries-reached",
		StartedAt: "2026-01-01T00:00:00Z", FinishedAt: Str("2026-01-01T00:00:00Z"), DurationSeconds: Int(0),
		Attempt: 2, MaxRetries: 2, ExitCode: Int(1), SessionName: "agent-bd-1"}
	b, _ = Marshal(res)
	want = `{"schema_version":1,"bead":"bd-1","agent":"claude","status":"failed","reason":"max-retries-reached",` +
		`"started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:00Z","duration_seconds":0,"attempt":2,` +
		`"max_retries":2,"will_retry":false,"exit_code":1,"session_name":"agent-bd-1","output_summary":null,"verification":null}` + "\n"
	if string(b) != want {
		t.Errorf("Marshal(result) =\n%s\nwant\n%s", b, want)
	}
	for _, kind := range []Kind{KindRun} {
		doc, _ := Marshal(r)
		if err := Check(kind, doc); err != nil {
			t.Errorf("the embedded schema refuses what dispatch.sh wrote: %v", err)
		}
	}
}

// TestMarshalEscapesAsJq compares string escapes with what `jq -c` prints (jq 1.6 here):
// printf '<&>\u2028\x7f\x01\b\f\t\n"\\/é\xff' | jq -cR '{s:.}' (the last byte invalid UTF-8).
func TestMarshalEscapesAsJq(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<&>", `"<&>"`},
		{"a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"\x7f\x01\b\f\t\n\"\\/", `"\u007f\u0001\b\f\t\n\"\\/"`},
		{"é\xff", "\"é\ufffd\""},
		{`\u2028 \ufffd`, `"\\u2028 \\ufffd"`}, // a backslash in the text is not an escape
	}
	for _, tt := range tests {
		b, err := Marshal(map[string]string{"s": tt.in})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(strings.TrimPrefix(string(b), `{"s":`), "}\n"); got != tt.want {
			t.Errorf("Marshal(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestMigrateNullDurationIsUnknown: a null duration_seconds is unknown, never 0 (read as 0, it
// made a '$START' record's start its finish, with a 0-second run).
func TestMigrateNullDurationIsUnknown(t *testing.T) {
	run := []byte(`{"bead":"bd-n","agent":"claude","model":"m","repo":"/r","started_at":"'$START'","attempt":1,"prompt":"p","duration_seconds":null}`)
	res := []byte(`{"bead":"bd-n","status":"done","finished_at":"2026-02-12T10:05:00Z","attempt":1,"duration_seconds":null}`)
	mr, err := MigrateRun(run, res, Defaults{MaxRetries: 2, StateDir: "/ws/state"})
	if err != nil {
		t.Fatal(err)
	}
	var got Run
	json.Unmarshal(mr.Output, &got)
	if !IsPlaceholder(got.StartedAt) || got.DurationSeconds != nil {
		t.Errorf("MigrateRun(null duration) started_at %q, duration %v; want '$START' kept and null", got.StartedAt, got.DurationSeconds)
	}
	if got.ResultFile != "/ws/state/results/bd-n.json" {
		t.Errorf("MigrateRun result_file = %q, want the absolute path in the state directory", got.ResultFile)
	}
	ms, _ := MigrateResult(res, run, Defaults{MaxRetries: 2})
	var gotRes Result
	json.Unmarshal(ms.Output, &gotRes)
	if gotRes.StartedAt != "" && !IsPlaceholder(gotRes.StartedAt) || gotRes.DurationSeconds != nil {
		t.Errorf("MigrateResult(null duration) started_at %q, duration %v; want no start invented", gotRes.StartedAt, gotRes.DurationSeconds)
	}
}

// Issue 17: a legacy "attempt": "1" (a quoted shell variable) blocked its bead; --fix said it
// needed a person. It is migrated to the number it spells, as every reader reads it; an empty
// nullable field becomes null; a string that spells no number stays for a person.
func TestMigrateWritesQuotedNumbersAsNumbers(t *testing.T) {
	run := []byte(`{"bead":"bd-1","agent":"claude","model":"m","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":"1","max_retries":" 2 ","exit_code":"","prompt":"p"}`)
	m, err := MigrateRun(run, nil, Defaults{MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"attempt":1,`, `"max_retries":2,`, `"exit_code":null,`} {
		if !strings.Contains(string(m.Output), want) {
			t.Errorf("MigrateRun output lacks %s:\n%s", want, m.Output)
		}
	}
	if err := Check(KindRun, m.Output); err != nil {
		t.Errorf("migrated run does not validate: %v", err)
	}
	res := []byte(`{"bead":"bd-1","status":"failed","finished_at":"2026-02-12T10:05:00Z","attempt":"1","duration_seconds":"300"}`)
	mr, err := MigrateResult(res, m.Output, Defaults{MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"attempt":1,`, `"duration_seconds":300,`, `"will_retry":true,`} {
		if !strings.Contains(string(mr.Output), want) {
			t.Errorf("MigrateResult output lacks %s:\n%s", want, mr.Output)
		}
	}
	if err := Check(KindResult, mr.Output); err != nil {
		t.Errorf("migrated result does not validate: %v", err)
	}
}

// Issue 17: --fix wrote indented JSON, so that grep '"status":"done"' missed every migrated
// record. A migrated record is what dispatch writes: Marshal's one compact line.
func TestMigrateWritesWhatDispatchWrites(t *testing.T) {
	run := []byte("{\n  \"bead\": \"bd-1\", \"agent\": \"claude\", \"model\": \"m\", \"repo\": \"/r\",\n  \"started_at\": \"2026-02-12T10:00:00Z\", \"attempt\": 1, \"prompt\": \"a\\u2028b\",\n  \"status\": \"done\", \"verification\": {\"tests\": \"pass\"}}\n")
	m, err := MigrateRun(run, nil, Defaults{MaxRetries: 2, StateDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRun(m.Output)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Output) != string(want) {
		t.Errorf("MigrateRun wrote\n%s\nwant what dispatch writes\n%s", m.Output, want)
	}
	if !strings.Contains(string(m.Output), `"status":"done",`) {
		t.Errorf("MigrateRun output does not match grep '\"status\":\"done\"':\n%s", m.Output)
	}
}
