package record

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fastSeeds are records of every shape the fast path must read or leave to encoding/json.
var fastSeeds = []string{
	`{"agent":"claude","attempt":1,"bead":"bd-000000","duration_seconds":541,"exit_code":0,"failure_reason":null,"finished_at":"2026-01-01T00:09:01Z","max_retries":2,"model":"opus","output_summary":null,"prompt":"Fix it","prompt_full":"Fix it","prompt_hash":"bfc6","repo":"/srv/repo","result_file":"state/results/bd-000000.json","schema_version":1,"session_name":"agent-bd-000000","started_at":"2026-01-01T00:00:00Z","status":"done","template_name":"feature"}`,
	`{"agent":"claude","attempt":1,"bead":"bd-000000","duration_seconds":541,"exit_code":0,"finished_at":"2026-01-01T00:09:01Z","max_retries":2,"output_summary":null,"reason":"status-file","schema_version":1,"session_name":"agent-bd-000000","started_at":"2026-01-01T00:00:00Z","status":"done","will_retry":false}`,
	"\xef\xbb\xbf {\"bead\":\"bd-d\",\"started_at\":\"'$START'\",\"attempt\":\"2\",\"prompt\":\"x\"} \n",
	`{"bead":"bd-e","prompt":"line\nnext \"quoted\" \u00e9 \ud83d\ude00 \ud800","agent":"caf\u00e9","model":"ü"}`,
	"{\"bead\":\"bd-f\",\"prompt\":\"bad \xff utf-8\"}",
	`{"bead":"bd-g","verification":{"lint":"pass","tests":"fail","ubs":"clean","overall":"fail","lint_details":{"a":[1,2.5e3,null,true]}}}`,
	`{"bead":"bd-h","verification":{"lint":null}}`,
	`{"bead":"bd-h","verification":{"Lint":"pass"}}`,
	`{"bead":"bd-h","verification":{"extra":[{}],"overall":"pass"},"verification":null}`,
	`{"Bead":"bd-i","AGENT":"x"}`,
	`{"bead":"bd-j","bead":"bd-k"}`,
	`{"bead":"bd-l","extra":{"nested":[1,{"x":"y"}]},"x-y":-0.5e-3}`,
	`{"bead":"bd-m","attempt":2.0,"max_retries":"","exit_code":null,"duration_seconds":1e400}`,
	`{"bead":"bd-n","attempt":2.5}`,
	`{"bead":"bd-n","attempt":{}}`,
	`{"bead":1}`,
	`{"bead":"bd-o","will_retry":"true","status":null}`,
	`{"bead":"bd-o","will_retry":true,"finished_at":null}`,
	`{"bead":"bd-p",}`,
	`{"bead":"bd-p"} x`,
	`{"bead":"bd-p","x":01}`,
	`{"bead":"bd-p","x":"\x01"}`,
	`{"bead":"bd-p","x":"\q"}`,
	`{"\u0062ead":"bd-q"}`,
	`{"ſtatus":"done","bead":"bd-r"}`,
	`[]`, ``, `{}`, `null`, `{"bead":"bd-s"`,
}

// TestFastDecodeTakesTheRecords: the records dispatch writes (and genrecords makes for the
// benchmarks) are read by the fast path, not by encoding/json.
func TestFastDecodeTakesTheRecords(t *testing.T) {
	for _, i := range []int{0, 2, 3, 5, 11, 12} {
		if _, ok := fastRun([]byte(fastSeeds[i])); !ok {
			t.Errorf("the fast path left run %s to encoding/json", fastSeeds[i])
		}
	}
	if _, ok := fastResult([]byte(fastSeeds[1])); !ok {
		t.Errorf("the fast path left result %s to encoding/json", fastSeeds[1])
	}
	for _, i := range []int{7, 9, 10, 13, 14, 15, 18, 19, 20, 21, 22, 23, 24} {
		if _, ok := fastRun([]byte(fastSeeds[i])); ok {
			t.Errorf("the fast path read %s, which is encoding/json's to judge", fastSeeds[i])
		}
	}
}

// FuzzFastDecode: whatever the fast path reads, encoding/json reads too, to the same record.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	for _, dir := range []string{"runs", "results"} {
		files, _ := filepath.Glob(filepath.Join("../../../shared/compat/validate-state/state", dir, "*.json"))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if fast, ok := fastRun(b); ok {
			var slow Run
			if err := decode(b, slow.decode); err != nil {
				t.Fatalf("the fast path read run %q, encoding/json: %v", b, err)
			}
			if !reflect.DeepEqual(fast, &slow) {
				t.Fatalf("run %q: fast path %+v, encoding/json %+v", b, fast, &slow)
			}
		}
		if fast, ok := fastResult(b); ok {
			var slow Result
			if err := decode(b, slow.decode); err != nil {
				t.Fatalf("the fast path read result %q, encoding/json: %v", b, err)
			}
			if !reflect.DeepEqual(fast, &slow) {
				t.Fatalf("result %q: fast path %+v, encoding/json %+v", b, fast, &slow)
			}
		}
	})
}
