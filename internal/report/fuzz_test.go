package report

import (
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
	})
}
