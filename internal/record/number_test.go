package record

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDecodeIntegers: an integer field is read the way the schema's "integer" reads it (ajv and
// gojsonschema: any number whose value is whole, 2.0 and 1e400 included), and as older tools
// wrote it ("attempt": "2"). Before, "2" and 2.0 made the whole record unreadable, and dispatch
// took such a bead for one with no previous attempt (issue 9, item 7).
func TestDecodeIntegers(t *testing.T) {
	tests := []struct {
		literal string
		want    int64
	}{
		{`2`, 2},
		{`2.0`, 2},
		{`2e0`, 2},
		{`20e-1`, 2},
		{`0.2e1`, 2},
		{`-0`, 0},
		{`"2"`, 2},
		{`"2.0"`, 2},
		{`" 3 "`, 3},
		{`9007199254740992`, MaxInteger},
		{`9007199254740993`, MaxInteger},
		{`12345678901234567890`, MaxInteger},
		{`1e400`, MaxInteger},
		{`-1e400`, -MaxInteger},
		{`1e-400`, 0},
	}
	for _, tt := range tests {
		doc := fmt.Sprintf(`{"bead":"bd-1","attempt":%[1]s,"max_retries":%[1]s,"schema_version":%[1]s,"exit_code":%[1]s,"duration_seconds":%[1]s}`, tt.literal)
		r, err := DecodeRun([]byte(doc))
		if err != nil {
			t.Errorf("DecodeRun(attempt %s) = %v, want attempt %d", tt.literal, err, tt.want)
			continue
		}
		if r.Attempt != int(tt.want) || r.MaxRetries != int(tt.want) || r.SchemaVersion != int(tt.want) ||
			r.ExitCode == nil || *r.ExitCode != tt.want || r.DurationSeconds == nil || *r.DurationSeconds != tt.want {
			t.Errorf("DecodeRun(integers %s) = attempt %d, max_retries %d, schema_version %d, exit_code %v, duration %v; want %d",
				tt.literal, r.Attempt, r.MaxRetries, r.SchemaVersion, r.ExitCode, r.DurationSeconds, tt.want)
		}
		res, err := DecodeResult([]byte(doc))
		if err != nil || res.Attempt != int(tt.want) || res.MaxRetries != int(tt.want) || res.ExitCode == nil || *res.ExitCode != tt.want {
			t.Errorf("DecodeResult(integers %s) = %+v, %v; want %d", tt.literal, res, err, tt.want)
		}
	}

	// Null, an empty string (a shell variable that was not set) and absence are unknown.
	for _, literal := range []string{`null`, `""`} {
		r, err := DecodeRun([]byte(`{"attempt":` + literal + `,"exit_code":` + literal + `}`))
		if err != nil || r.Attempt != 0 || r.ExitCode != nil {
			t.Errorf("DecodeRun(attempt %s) = %+v, %v; want attempt 0 and exit_code nil", literal, r, err)
		}
	}

	// What no reader could take for a whole number is an error naming the field.
	for _, literal := range []string{`2.5`, `"two"`, `true`, `{}`, `[2]`, `"0x10"`, `"2 3"`, `"1e"`} {
		_, err := DecodeRun([]byte(`{"attempt":` + literal + `}`))
		if err == nil || !strings.Contains(err.Error(), "attempt") {
			t.Errorf("DecodeRun(attempt %s) = %v, want an error naming attempt", literal, err)
		}
	}
}

// TestReaderAcceptsWhatTheSchemaAccepts: for every integer field of both records, a value the
// embedded schema accepts is one the reader reads (validate-state called 1.0 and 1e400 valid
// while analyze-runs and dispatch could not read them: issue 9, item 11).
func TestReaderAcceptsWhatTheSchemaAccepts(t *testing.T) {
	run, _ := Marshal(fullRun("bd-1"))
	res, _ := Marshal(&Result{SchemaVersion: 1, Bead: "bd-1", Agent: "claude", Status: StatusDone, Reason: "exit-0",
		StartedAt: "2026-01-01T00:00:00Z", FinishedAt: Str("2026-01-01T00:01:00Z"), DurationSeconds: Int(60),
		Attempt: 1, MaxRetries: 2, ExitCode: Int(0), SessionName: "agent-bd-1"})
	fields := []string{"schema_version", "attempt", "max_retries", "exit_code", "duration_seconds"}
	literals := []string{"1", "1.0", "1e0", "10e-1", "1.00000", "2", "2.0", "1e400", "-1e400", "0", "-0.0", "1e-400", "1.5", `"1"`, "99999999999999999999"}
	for _, doc := range []struct {
		kind Kind
		base []byte
	}{{KindRun, run}, {KindResult, res}} {
		for _, field := range fields {
			for _, lit := range literals {
				var m map[string]json.RawMessage
				json.Unmarshal(doc.base, &m)
				m[field] = json.RawMessage(lit)
				b, _ := json.Marshal(m)
				if Check(doc.kind, b) != nil {
					continue // the schema refuses it: the reader may too
				}
				var err error
				if doc.kind == KindRun {
					_, err = DecodeRun(b)
				} else {
					_, err = DecodeResult(b)
				}
				if err != nil {
					t.Errorf("the %s schema accepts %s = %s, the reader does not: %v", doc.kind, field, lit, err)
				}
			}
		}
	}
}

// TestMigrateReadsIntegersAsTheReader: the migrations read the integers they compute with as the
// reader does: a failed legacy result of attempt "1" out of 2.0 will be retried.
func TestMigrateReadsIntegersAsTheReader(t *testing.T) {
	res := []byte(`{"bead":"bd-r","status":"failed","finished_at":"2026-02-12T10:05:00Z","attempt":"1","max_retries":2.0,"duration_seconds":3e2,"started_at":"'$START'"}`)
	m, err := MigrateResult(res, nil, Defaults{MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	json.Unmarshal(m.Output, &got)
	if string(got["will_retry"]) != "true" || string(got["started_at"]) != `"2026-02-12T10:00:00Z"` {
		t.Errorf("MigrateResult(attempt \"1\", max_retries 2.0, duration 3e2) = %s; want will_retry true and the start resolved", m.Output)
	}
}
