package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/record"
)

// writeFiles writes name → content under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scan runs a Source over dir and returns the beads and the skipped files' names.
func scan(t *testing.T, src Source) ([]*Bead, []string) {
	t.Helper()
	var beads []*Bead
	var skipped []string
	err := src.Scan(func(b *Bead) { beads = append(beads, b) }, func(s Skipped) {
		skipped = append(skipped, filepath.ToSlash(strings.TrimPrefix(s.Path, src.Dir+string(filepath.Separator))))
	})
	if err != nil {
		t.Fatal(err)
	}
	return beads, skipped
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"runs/bd-a.json":           `{"bead":"bd-a","agent":"claude","model":"opus","started_at":"2026-01-01T00:00:00Z","attempt":2,"prompt":"Fix a"}`,
		"results/bd-a.json":        `{"bead":"bd-a","status":"failed","finished_at":"2026-01-01T00:01:00Z","attempt":2,"reason":"tests-failed"}`,
		"results/bd-a-verify.json": `{"lint":"pass","tests":"fail","overall":"fail"}`,
		"runs/bd-b.json":           "\xef\xbb\xbf" + `{"bead":"bd-b","agent":"codex","started_at":"2026-01-02T00:00:00Z","attempt":1}`,
		"results/bd-orphan.json":   `{"bead":"bd-orphan","status":"done"}`, // no run: not counted
		"runs/bd-c.json":           `{"bead":"bd-c","attempt":"one"}`,
		"results/bd-c.json":        `{"bead":"bd-c","status":"done"}`,
		"runs/bd-d.json":           `{"bead":"bd-d","agent":"claude","started_at":"2026-01-03T00:00:00Z"}`,
		"results/bd-d.json":        `{"bead":"bd-d","status":`, // truncated: the whole bead is left out
		"runs/bd-e.json":           `{"bead":"bd-e","agent":"claude"}`,
		"results/bd-e-verify.json": `[1]`, // a bad verification is reported, the bead still counts
		"runs/notes.txt":           "not a record",
		"runs/.bd-f.json.tmp-123":  "a write in progress",
		"runs/bd-a.json.lock":      "", // sidecar locks older writers left beside the records
		"results/bd-a.json.lock":   "",
		"locks/runs/bd-a.lock":     "",
		"attempts/bd-a/run-1.json": `{"bead":"bd-a","agent":"claude","started_at":"2025-12-31T00:00:00Z","attempt":1,"prompt":"Fix a"}`,
	})
	if err := os.Mkdir(filepath.Join(dir, "runs", "bd-dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	beads, skipped := scan(t, Source{Dir: dir, Raw: true})

	var ids []string
	for _, b := range beads {
		ids = append(ids, b.ID+"/"+b.Outcome())
	}
	if want := []string{"bd-a/failed", "bd-b/running", "bd-e/running"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Scan beads = %q, want %q", ids, want)
	}
	wantSkipped := []string{"runs/bd-c.json", "results/bd-d.json", "runs/bd-dir.json", "results/bd-e-verify.json"}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("Scan skipped = %q, want %q", skipped, wantSkipped)
	}
	a := beads[0]
	if a.Verified != "fail" || !a.HasSeconds || a.Seconds != 60 || a.Reason != "tests-failed" {
		t.Errorf("bd-a = %+v, want verified fail, 60 s, reason tests-failed", a)
	}
	var raw map[string]any
	if err := json.Unmarshal(a.Raw, &raw); err != nil {
		t.Fatalf("bd-a raw_data %s: %v", a.Raw, err)
	}
	if raw["result_status"] != "failed" || raw["prompt"] != "Fix a" || raw["verification"].(map[string]any)["tests"] != "fail" {
		t.Errorf("bd-a raw_data = %v, want the run, result_status failed and the verification", raw)
	}

	// With --attempts, the earlier attempt counts too, before the current one.
	beads, _ = scan(t, Source{Dir: dir, Attempts: true})
	ids = nil
	for _, b := range beads {
		ids = append(ids, b.ID+"/"+b.Outcome()+"/"+b.StartedAt)
	}
	want := []string{"bd-a/running/2025-12-31T00:00:00Z", "bd-a/failed/2026-01-01T00:00:00Z", "bd-b/running/2026-01-02T00:00:00Z", "bd-e/running/"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("Scan with attempts = %q, want %q", ids, want)
	}
}

func TestScanAttempts(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"runs/bd-a.json":    `{"bead":"bd-a","agent":"claude","attempt":3,"started_at":"2026-01-03T00:00:00Z"}`,
		"results/bd-a.json": `{"bead":"bd-a","status":"done","attempt":3}`,
		// Two layouts side by side; the copy of the current attempt is not counted twice.
		"attempts/bd-a/run-1.json":    `{"bead":"bd-a","agent":"claude","attempt":1,"started_at":"2026-01-01T00:00:00Z"}`,
		"attempts/bd-a/result-1.json": `{"bead":"bd-a","status":"failed","attempt":1,"reason":"tests-failed"}`,
		"attempts/bd-a/2.run.json":    `{"bead":"bd-a","agent":"claude","started_at":"2026-01-02T00:00:00Z"}`,
		"attempts/bd-a/2.result.json": `{"bead":"bd-a","status":"timeout"}`,
		"attempts/bd-a/2.verify.json": `{"overall":"fail"}`,
		"attempts/bd-a/run-3.json":    `{"bead":"bd-a","agent":"claude","attempt":3}`,
		"attempts/bd-a/result-4.json": `{"bead":"bd-a","status":"done","attempt":4}`, // no run: left out
		"attempts/bd-z/run-1.json":    `{"bead":"bd-z","agent":"codex","attempt":1}`, // no current run
		"attempts/bd-z/bad-2.json":    `{`,
	})
	beads, skipped := scan(t, Source{Dir: dir, Attempts: true})
	var got []string
	for _, b := range beads {
		got = append(got, b.ID+"/"+string(rune('0'+b.Attempt))+"/"+b.Outcome()+"/"+b.Reason+"/"+b.Verified)
	}
	want := []string{"bd-a/1/failed/tests-failed/", "bd-a/2/timeout//fail", "bd-a/3/done//", "bd-z/1/running//"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan attempts = %q, want %q", got, want)
	}
	if want := []string{"attempts/bd-z/bad-2.json"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("Scan skipped = %q, want %q", skipped, want)
	}
	// Without --attempts the report is the original's.
	beads, _ = scan(t, Source{Dir: dir})
	if len(beads) != 1 {
		t.Errorf("Scan without attempts = %d beads, want 1", len(beads))
	}
}

func TestScanRunNamedOtherwise(t *testing.T) {
	// The original joined by the bead field, not the file name.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"runs/copy-of-bd-a.json": `{"bead":"bd-a","agent":"claude"}`,
		"results/bd-a.json":      `{"bead":"bd-a","status":"done"}`,
		"runs/bd-b.json":         `{"bead":"../../etc/passwd","agent":"claude"}`,
		"results/bd-b.json":      `{"bead":"bd-b","status":"done"}`,
	})
	beads, skipped := scan(t, Source{Dir: dir})
	var got []string
	for _, b := range beads {
		got = append(got, b.ID+"/"+b.Outcome())
	}
	// A bead id that is not a safe file name never becomes a path: the file name's result is used.
	want := []string{"../../etc/passwd/done", "bd-a/done"}
	if !reflect.DeepEqual(got, want) || len(skipped) != 0 {
		t.Errorf("Scan = %q (skipped %q), want %q", got, skipped, want)
	}
}

func TestScanNoResults(t *testing.T) {
	// No results/ at all: every run is running, whatever bead it names.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"runs/bd-a.json":   `{"bead":"bd-a"}`,
		"runs/copy-b.json": `{"bead":"bd-b"}`,
	})
	beads, skipped := scan(t, Source{Dir: dir})
	if len(beads) != 2 || beads[0].Outcome() != OutcomeRunning || beads[1].Outcome() != OutcomeRunning || len(skipped) != 0 {
		t.Errorf("Scan = %d beads, skipped %q; want 2 running, none skipped", len(beads), skipped)
	}
}

func TestScanMissing(t *testing.T) {
	dir := t.TempDir()
	err := Source{Dir: filepath.Join(dir, "nope")}.Scan(func(*Bead) {}, func(Skipped) {})
	if !errors.Is(err, ErrNoStateDir) {
		t.Errorf("Scan(missing) = %v, want ErrNoStateDir", err)
	}
	// An existing state directory without runs/ or results/ is empty, not an error.
	beads, skipped := scan(t, Source{Dir: dir})
	if len(beads)+len(skipped) != 0 {
		t.Errorf("Scan(empty) = %d beads, %d skipped, want none", len(beads), len(skipped))
	}
}

func TestUnion(t *testing.T) {
	entries := []entry{{name: "a", run: true}, {name: "c", run: true}}
	got := union(entries, []string{"b", "c", "d"}, func(e *entry) { e.result = true })
	want := []entry{{name: "a", run: true}, {name: "b", result: true}, {name: "c", run: true, result: true}, {name: "d", result: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("union() = %+v, want %+v", got, want)
	}
	// Names all among the entries (every result with its run) are marked in place.
	entries = []entry{{name: "a", run: true}, {name: "b", run: true}, {name: "c", run: true}}
	want = []entry{{name: "a", run: true, result: true}, {name: "b", run: true}, {name: "c", run: true, result: true}}
	if allocs := testing.AllocsPerRun(1, func() { got = union(entries, []string{"a", "c"}, func(e *entry) { e.result = true }) }); allocs != 0 {
		t.Errorf("union() of names all among the entries made %.0f allocations, want none", allocs)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("union() = %+v, want %+v", got, want)
	}
	for _, names := range [][]string{{"0"}, {"a", "bb"}, {"c", "d"}, {"a", "b", "c", "d"}} {
		entries = []entry{{name: "a", run: true}, {name: "b", run: true}, {name: "c", run: true}}
		want = nil
		for _, n := range append([]string{"a", "b", "c"}, names...) {
			if !slices.ContainsFunc(want, func(e entry) bool { return e.name == n }) {
				want = append(want, entry{name: n, run: n == "a" || n == "b" || n == "c", result: slices.Contains(names, n)})
			}
		}
		slices.SortFunc(want, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		if got = union(entries, names, func(e *entry) { e.result = true }); !reflect.DeepEqual(got, want) {
			t.Errorf("union(%q) = %+v, want %+v", names, got, want)
		}
	}
}

func TestRawData(t *testing.T) {
	done, at := "done", "2026-01-01T00:00:00Z"
	tests := []struct {
		name   string
		run    string
		res    *record.Result
		verify string
		want   string
	}{
		{"no result", `{"bead":"a"}`, nil, "",
			`{"bead":"a","result_status":null,"result_finished_at":null,"result_reason":null}`},
		{"legacy result without reason", "\xef\xbb\xbf {\n \"bead\": \"a\" }\n", &record.Result{Status: done, FinishedAt: &at}, "",
			`{"bead":"a","result_status":"done","result_finished_at":"2026-01-01T00:00:00Z","result_reason":null}`},
		{"empty run", `{}`, nil, "",
			`{"result_status":null,"result_finished_at":null,"result_reason":null}`},
		{"verification", `{"bead":"a"}`, &record.Result{Status: done, Reason: "status-file"}, `{"overall":"pass"}`,
			`{"bead":"a","result_status":"done","result_finished_at":null,"result_reason":"status-file","verification":{"overall":"pass"}}`},
		{"run with a field of the same name: replaced, as jq's + did", `{"bead":"a","result_status":"x"}`, &record.Result{Status: done}, "",
			`{"bead":"a","result_finished_at":null,"result_reason":null,"result_status":"done"}`},
	}
	for _, tt := range tests {
		var verify json.RawMessage
		if tt.verify != "" {
			verify = json.RawMessage(tt.verify)
		}
		got, err := rawData([]byte(tt.run), tt.res, verify)
		if err != nil {
			t.Errorf("%s: rawData(%q) error %v", tt.name, tt.run, err)
			continue
		}
		var c bytes.Buffer
		json.Compact(&c, got)
		if !jsonEqual(t, c.Bytes(), []byte(tt.want)) {
			t.Errorf("%s: rawData(%q) = %s, want %s", tt.name, tt.run, c.Bytes(), tt.want)
		}
		// Compact: WriteJSON indents it for its place in raw_data as it writes it.
		if !bytes.Equal(got, c.Bytes()) {
			t.Errorf("%s: rawData(%q) = %q, want it compact", tt.name, tt.run, got)
		}
		var indented bytes.Buffer
		w := bufio.NewWriter(&indented)
		writeIndented(w, got, "    ", "  ")
		w.Flush()
		if len(got) > 2 && !bytes.Contains(indented.Bytes(), []byte("\n      \"")) {
			t.Errorf("%s: writeIndented(%s) = %q, want it indented for its place in raw_data", tt.name, got, indented.Bytes())
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestSpool(t *testing.T) {
	defer func(n int) { spoolMemory = n }(spoolMemory)
	for _, limit := range []int{1 << 20, 100} { // in memory, and spilled to a file
		spoolMemory = limit
		var s Spool
		var want []string
		for i := range 50 {
			elem := strings.Repeat(string(rune('a'+i%26)), i*7)
			want = append(want, elem)
			s.Add([]byte(elem))
		}
		var got []string
		if err := s.Each(func(b []byte) error { got = append(got, string(b)); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || s.Len() != 50 {
			t.Errorf("Spool (memory limit %d): read back %d elements, want the 50 added", limit, len(got))
		}
		if spilled := s.file != nil; spilled != (limit == 100) {
			t.Errorf("Spool (memory limit %d): spilled = %v", limit, spilled)
		}
		s.Close()
	}
}

func TestListVerifyOrder(t *testing.T) {
	// Stripping "-verify" reorders names: the union needs them sorted again.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"runs/a.json":               `{"bead":"a"}`,
		"runs/a-b.json":             `{"bead":"a-b"}`,
		"results/a-verify.json":     `{"overall":"pass"}`,
		"results/a-b-verify.json":   `{"overall":"fail"}`,
		"results/a-b-c-verify.json": `{"overall":"fail"}`,
	})
	entries, err := Source{Dir: dir}.list()
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{{name: "a", run: true, verify: true}, {name: "a-b", run: true, verify: true}, {name: "a-b-c", verify: true}}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("list() = %+v, want %+v", entries, want)
	}
}

// TestScanGivesBackItsBudget: each bead's reservation is given back once the bead is emitted.
// It was not (read set a copy of its batch's held bytes), so after 64 MiB of records every
// reader but the head waited: 100,000 pairs --json ran on 1.13 cores instead of 1.75 (issue 22).
func TestScanGivesBackItsBudget(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 50 {
		bead := "bd-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		files["runs/"+bead+".json"] = `{"bead":"` + bead + `","agent":"claude","started_at":"2026-01-01T00:00:00Z","attempt":1}`
		files["results/"+bead+".json"] = `{"bead":"` + bead + `","status":"done","finished_at":"2026-01-01T00:01:00Z"}`
	}
	writeFiles(t, dir, files)
	for _, raw := range []bool{false, true} {
		budget := record.NewBudget(memoryBudget)
		n := 0
		err := Source{Dir: dir, Raw: raw, Workers: 4}.scan(budget, func(*Bead) { n++ }, func(s Skipped) { t.Errorf("skipped %s: %v", s.Path, s.Err) })
		if err != nil || n != 50 {
			t.Fatalf("scan (raw %v) = %v, %d beads; want nil, 50", raw, err, n)
		}
		if used := budget.Used(); used != 0 {
			t.Errorf("scan (raw %v) left %d bytes of the budget held after every bead was emitted, want 0", raw, used)
		}
	}
}

// TestListAllocations: listing runs/ and results/ costs a few allocations, not one or more a
// name: a million pairs' names as strings of their own were 85 MB and 1.3 s of CPU, a fifth of
// a report through the cache (issue 22).
func TestListAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the listing without a string a name is Linux's")
	}
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 2000 {
		bead := fmt.Sprintf("bd-%06d", i)
		files["runs/"+bead+".json"] = "{}"
		files["results/"+bead+".json"] = "{}"
	}
	writeFiles(t, dir, files)
	allocs := testing.AllocsPerRun(3, func() {
		if entries, err := (Source{Dir: dir}).list(); err != nil || len(entries) != 2000 {
			t.Fatalf("list() = %d entries, %v", len(entries), err)
		}
	})
	if allocs > 100 {
		t.Fatalf("listing 2000 pairs made %.0f allocations, want a few", allocs)
	}
}
