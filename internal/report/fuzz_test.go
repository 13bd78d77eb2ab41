package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/record/hostile"
)

// FuzzRawData: whatever run record the reader accepts, its raw_data element is one JSON object
// holding the run's fields and the three result fields, never broken JSON in the report.
func FuzzRawData(f *testing.F) {
	for _, seed := range []string{
		`{"bead":"bd-a","agent":"claude","started_at":"'$START'","attempt":1,"prompt":"Review PR"}`,
		`{}`,
		"\xef\xbb\xbf{\"bead\":\"a\",\"result_status\":\"x\"}",
		`{"bead":"a","verification":{"overall":"pass"},"result_file":"state/results/a.json"}`,
		`{"bead":"a","prompt":"\u2028 \" \\ </script>"}`,
	} {
		f.Add([]byte(seed), "done", true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, status string, verify bool) {
		if _, err := record.DecodeRun(doc); err != nil {
			return
		}
		res := &record.Result{Status: status, Reason: "r"}
		var v json.RawMessage
		if verify {
			v = json.RawMessage(`{"overall":"pass"}`)
		}
		raw, err := rawData(doc, res, v)
		if err != nil {
			// The reader took it, so the report must be able to carry it.
			t.Fatalf("rawData(%q) = %v", doc, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("rawData(%q) = %s, not a JSON object: %v", doc, raw, err)
		}
		for _, k := range []string{"result_status", "result_finished_at", "result_reason"} {
			if _, ok := got[k]; !ok {
				t.Errorf("rawData(%q) lacks %s", doc, k)
			}
		}
		if _, ok := got["verification"]; verify && !ok {
			t.Errorf("rawData(%q) lacks the verification", doc)
		}
		// It is written indented as jq printed it (json.Indent's form), as it goes.
		var want, indented bytes.Buffer
		json.Indent(&want, raw, "    ", "  ")
		w := bufio.NewWriter(&indented)
		writeIndented(w, raw, "    ", "  ")
		w.Flush()
		if indented.String() != want.String() {
			t.Errorf("writeIndented(%s) =\n%s\nwant\n%s", raw, indented.String(), want.String())
		}
	})
}

// TestRawDataReplacesInPlace: a run that already has a field the report appends gets its value
// replaced where it stands, as jq's + did (once, a later duplicate dropped, an escaped name
// matched), without a map of its members (a record of a million keys made one of 200 MB).
func TestRawDataReplacesInPlace(t *testing.T) {
	doc := []byte(`{"a":1,"result_status":"x","b":{"c":[1,"}\",]"]},"result_status":"y","result\u005freason":"z","d":null}`)
	fin := "2026-01-01T00:00:00Z"
	raw, err := rawData(doc, &record.Result{Status: "done", FinishedAt: &fin}, json.RawMessage(`{"overall":"pass"}`))
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	json.Compact(&c, raw)
	want := `{"a":1,"result_status":"done","b":{"c":[1,"}\",]"]},"result_reason":null,"d":null,"result_finished_at":"2026-01-01T00:00:00Z","verification":{"overall":"pass"}}`
	if c.String() != want {
		t.Errorf("rawData =\n%s\nwant\n%s", c.String(), want)
	}
}

// FuzzScan: whatever a state directory holds (runs, results, verifications and attempts from
// the fuzzer, links to /dev/zero, to a record, to themselves, to nothing, a named pipe, a
// directory named like a record, keys of a megabyte, names holding escapes), analyze-runs'
// reader emits or skips each bead, follows no link, waits on no pipe, never panics, and every
// raw_data element it builds is one JSON object.
func FuzzScan(f *testing.F) {
	for _, seed := range []struct {
		layout string
		a, b   string
	}{
		{"\x00\x01\x02\x03\x04\x05\x06\x07", `{"bead":"bd-0","agent":"claude","started_at":"'$START'","attempt":"2","prompt":"Fix","result_status":"x"}`, `{"bead":"bd-0","status":"done","finished_at":"2026-01-01T00:00:00Z","attempt":2.0,"reason":"\u001b]0;x\u0007"}`},
		{"\x08\x88\x01", `{"schema_version":1e400,"status":-1e400,"x":[1e999]}`, `[[[[[[[[[[]]]]]]]]]]`},
		{"\x00\x01", "\xef\xbb\xbf{\"\\u001b[2J\":1,\"verification\":{\"overall\":\"pass\"}}", `{"a":1} {"b":2}`},
	} {
		f.Add([]byte(seed.layout), []byte(seed.a), []byte(seed.b))
	}
	f.Fuzz(func(t *testing.T, layout, a, b []byte) {
		state := t.TempDir()
		plantFuzzed(t, filepath.Join(state, "runs"), layout, a, b)
		plantFuzzed(t, filepath.Join(state, "results"), layout, b, a)
		plantFuzzed(t, filepath.Join(state, "attempts", "bd-1"), layout, a, b)
		os.WriteFile(filepath.Join(state, "results", "bd-2-verify.json"), b, 0o600)
		src := Source{Dir: state, Attempts: true, Raw: true, Workers: 3}
		var emitted, skipped int
		done := make(chan error, 1)
		go func() {
			done <- src.Scan(func(bd *Bead) {
				emitted++
				var v map[string]json.RawMessage
				if err := json.Unmarshal(bd.Raw, &v); err != nil {
					t.Errorf("bead %s: raw_data %q is not a JSON object: %v", bd.ID, bd.Raw, err)
				}
				if len(bd.Agent) > maxText+len("…") || len(bd.Reason) > maxText+len("…") {
					t.Errorf("bead %s keeps a name of %d bytes", bd.ID, len(bd.Agent))
				}
			}, func(sk Skipped) {
				skipped++
				if fi, err := os.Lstat(sk.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 && !strings.Contains(sk.Err.Error(), "symbolic link") {
					t.Errorf("%s is a link, skipped for %v: it must not be followed", sk.Path, sk.Err)
				}
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Scan = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Scan takes over 20 s: something waits for ever")
		}
	})
}

// cheapShapes are the hostile shapes a fuzz run can plant at every execution: links, a named
// pipe, a directory. The record shapes of 16 MiB are the memory testscripts'; here records come
// from the fuzzer, with keys as long as it asks.
var cheapShapes = []hostile.Shape{hostile.LinkToZero, hostile.LinkToRecord, hostile.LinkLoop, hostile.Dangling,
	hostile.FIFO, hostile.Directory}

// plantFuzzed fills dir from a fuzzer's layout: each byte an entry (at most 8): a record from
// docs, one of cheapShapes, or a record with a key of up to 2 MiB (the byte says how long), under
// a name that may hold a newline or an escape.
func plantFuzzed(t *testing.T, dir string, layout []byte, docs ...[]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, c := range layout {
		if i == 8 {
			break
		}
		name := fmt.Sprintf("bd-%d.json", i)
		if c&0x80 != 0 {
			name = fmt.Sprintf("bd-%d\x1b]0;x\a\n.json", i)
		}
		if strings.Contains(dir, "attempts") {
			name = fmt.Sprintf("%s-%d.json", []string{"run", "result", "verify"}[i%3], i/3)
		}
		path := filepath.Join(dir, name)
		var err error
		switch k := int(c&0x7f) % (len(docs) + len(cheapShapes) + 1); {
		case k < len(docs):
			err = os.WriteFile(path, docs[k], 0o600)
		case k < len(docs)+len(cheapShapes):
			err = hostile.Plant(dir, name, cheapShapes[k-len(docs)])
		default:
			key := strings.Repeat("k", int(c)<<13)
			err = os.WriteFile(path, []byte(`{"bead":"bd-k","`+key+`":`+string(docs[0])+`}`), 0o600)
		}
		if err != nil {
			t.Fatalf("planting %q: %v", name, err)
		}
	}
}
