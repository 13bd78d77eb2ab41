package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentfleet/fleet/internal/record"
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
