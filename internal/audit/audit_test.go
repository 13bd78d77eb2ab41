package audit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestKindFromPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"state/runs", "run"},
		{"state/runs/", "run"},
		{"state/runs/bd-1.json", "run"},
		{"/ws/state/results/bd-1.json", "result"},
		{"results", "result"},
		{"state/swarm.json", ""},
		{"runs-old/bd-1.json", ""},
		{".claude/ralph/task-queue-plan.json", "task-queue"},
		{"/ws/.claude/ralph/retry-queue-p.json", "retry-queue"},
		{".claude/ralph/progress-p.json", "progress"},
		{".claude/ralph/agent-state-agent-1.json", "agent-state"},
		{".claude/ralph/progress-.json", ""},
		{".claude/ralph/archive/task-queue-p-20261126T041500Z.json", "task-queue"},
		{".claude/ralph/archive/progress-p.json", ""},
		{"notes/progress-p.json", ""},
		{"state/runs/task-queue-p.json", "run"},
		{"/home/u/.swarm/ralph/fix/state.json", "ralph-state"},
		{".aiwg/ralph/loops/ralph-fix-1a2b3c4d/state.json", "loop-state"},
		{"other/loops/x/state.json", ""},
		{".aiwg/ralph/loops/ralph-fix-1a2b3c4d/analytics/analytics.json", "loop-analytics"},
		{".aiwg/ralph/loops/ralph-fix-1a2b3c4d/analytics.json", ""},
		{"state.json", ""},
	}
	for _, tt := range tests {
		if got := KindFromPath(tt.path); got != tt.want {
			t.Errorf("KindFromPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestKindLabel(t *testing.T) {
	tests := map[string]string{"run": "Run records", "result": "Result records", "swarm-state": "Swarm state files",
		"task-queue": "Task queue files", "manifest": "Manifests", "execution": "Execution states"}
	for kind, want := range tests {
		if got := KindLabel(kind); got != want {
			t.Errorf("KindLabel(%q) = %q, want %q", kind, got, want)
		}
	}
	for _, k := range Kinds {
		if !KnownKind(k) {
			t.Errorf("KnownKind(%q) = false", k)
		}
	}
	if KnownKind("runs") {
		t.Error(`KnownKind("runs") = true`)
	}
}

func TestWriteBackupNeverOverwrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bd-1.json")
	var got []string
	for _, content := range []string{"first", "second", "third"} {
		name, err := writeBackup(path, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, filepath.Base(name))
		if b, _ := os.ReadFile(name); string(b) != content {
			t.Errorf("backup %s holds %q, want %q", name, b, content)
		}
	}
	if want := []string{"bd-1.json.bak", "bd-1.json.bak.1", "bd-1.json.bak.2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("backups = %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(path + ".bak"); string(b) != "first" {
		t.Errorf("the first backup now holds %q: it was overwritten", b)
	}
}

func TestTally(t *testing.T) {
	tally := Tally{}
	for _, r := range []Report{{Kind: "result", Valid: true}, {Kind: "run", Valid: false}, {Kind: "run", Valid: true}, {Kind: "manifest"}} {
		tally.Add(r)
	}
	if got, want := tally.SortedKinds(), []string{"run", "result", "manifest"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortedKinds = %v, want %v (the order of Kinds)", got, want)
	}
	if tally.Failed() != 2 || *tally["run"] != (Count{Passed: 1, Failed: 1}) {
		t.Errorf("tally = %+v, failed %d", tally, tally.Failed())
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		name, kind string
		want       bool
	}{
		{"bd-1.json", "run", true},
		{".bd-1.json.tmp-123", "run", false},
		{"bd-1.json.bak", "run", false},
		{"bd-1.json.lock", "run", false}, // the sidecar locks of writers before statedir
		{"work.yaml", "manifest", true},
		{"work.yaml", "run", false},
		{"notes.txt", "run", false},
	}
	for _, tt := range tests {
		if got := matches(tt.name, tt.kind); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.name, tt.kind, got, tt.want)
		}
	}
}

// TestRunIgnoresOldLockFiles: validate-state over a state directory that record writers before
// statedir used reports the records only, not the <bead>.json.lock files beside them.
func TestRunIgnoresOldLockFiles(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	os.Mkdir(runs, 0o700)
	os.WriteFile(filepath.Join(runs, "bd-1.json"), []byte(`{"bead":"bd-1"}`), 0o600)
	os.WriteFile(filepath.Join(runs, "bd-1.json.lock"), nil, 0o600)
	a, _, err := New(Options{}, []string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	a.Run([]Target{{Path: runs, Kind: "run"}}, func(r Report) { paths = append(paths, filepath.Base(r.Path)) })
	if want := []string{"bd-1.json"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("Run reported %q, want %q", paths, want)
	}
}

// TestFixReadsThePartnerRecord: --fix completes a legacy run from its result in results/.
func TestFixReadsThePartnerRecord(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "runs"), 0o700)
	os.Mkdir(filepath.Join(dir, "results"), 0o700)
	run := filepath.Join(dir, "runs", "bd-x.json")
	os.WriteFile(run, []byte(`{"bead":"bd-x","agent":"claude","model":"sonnet","repo":"/r","started_at":"'$START'","attempt":1,"prompt":"p"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "results", "bd-x.json"), []byte(`{"bead":"bd-x","status":"failed","finished_at":"2026-02-12T10:05:00Z","attempt":1,"duration_seconds":300}`), 0o600)
	a, _, err := New(Options{Fix: true, MaxRetries: 2}, []string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var got []Report
	a.Run([]Target{{Path: filepath.Join(dir, "runs"), Kind: "run"}}, func(r Report) { got = append(got, r) })
	if len(got) != 1 || !got[0].Valid {
		t.Fatalf("Run(--fix) = %+v, want one valid report", got)
	}
	b, _ := os.ReadFile(run)
	if !strings.Contains(string(b), `"status":"failed"`) || !strings.Contains(string(b), `"started_at":"2026-02-12T10:00:00Z"`) {
		t.Errorf("fixed run lacks what its result says:\n%s", b)
	}
}

// TestDryRunJudgesTheFileOnDisk: with --dry-run the verdict is of the file as it is, and says
// whether the planned changes would mend it; verify.sh's <bead>-verify.json beside the results
// is no result record, neither checked nor fixed.
func TestDryRunJudgesTheFileOnDisk(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	os.Mkdir(results, 0o700)
	legacy := []byte(`{"bead":"bd-x","status":"done","finished_at":"2026-02-12T10:05:00Z","attempt":1}`)
	os.WriteFile(filepath.Join(results, "bd-x.json"), legacy, 0o600)
	verify := []byte(`{"overall":"pass"}`)
	os.WriteFile(filepath.Join(results, "bd-x-verify.json"), verify, 0o600)
	os.Mkdir(filepath.Join(dir, "runs"), 0o700)
	os.WriteFile(filepath.Join(dir, "runs", "bd-x.json"), []byte(`{"bead":"bd-x","agent":"claude","model":"m","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":1,"prompt":"p"}`), 0o600)
	for _, dry := range []bool{true, false} {
		a, _, err := New(Options{Fix: true, DryRun: dry, MaxRetries: 2, StateDir: dir}, []string{"result"})
		if err != nil {
			t.Fatal(err)
		}
		var got []Report
		a.Run([]Target{{Path: results, Kind: "result"}}, func(r Report) { got = append(got, r) })
		if len(got) != 1 || filepath.Base(got[0].Path) != "bd-x.json" {
			t.Fatalf("dry-run %v: reports %+v, want bd-x.json only (not the verify output)", dry, got)
		}
		r := got[0]
		if dry && (r.Valid || !r.FixWouldMend || r.Fixed || len(r.Changes) == 0) {
			t.Errorf("dry run: %+v; want invalid as on disk, mendable, not fixed", r)
		}
		if !dry && (!r.Valid || !r.Fixed || r.Backup == "") {
			t.Errorf("fix: %+v; want valid, fixed, backed up", r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(results, "bd-x-verify.json")); string(b) != string(verify) {
		t.Errorf("--fix rewrote the verify output: %s", b)
	}
}

// TestProblemsAreCapped: a file of thousands of wrong fields keeps its first MaxProblems
// problems and counts the rest, so the reports waiting to be printed stay small.
func TestProblemsAreCapped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	os.MkdirAll(dir, 0o700)
	var b strings.Builder
	b.WriteString(`{"x0":0`)
	for i := 1; i < 1000; i++ {
		b.WriteString(`,"x` + strings.Repeat("y", i%7) + string(rune('a'+i%26)) + strings.Repeat("z", i/26) + `":0`)
	}
	b.WriteString(`}`)
	os.WriteFile(filepath.Join(dir, "bd-1.json"), []byte(b.String()), 0o600)
	a, _, err := New(Options{}, []string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var got []Report
	a.Run([]Target{{Path: dir, Kind: "run"}}, func(r Report) { got = append(got, r) })
	if len(got) != 1 || len(got[0].Problems) != MaxProblems || got[0].MoreProblems != 1000+17-MaxProblems {
		t.Errorf("Run(1,017 problems) = %d problems listed, %d more; want %d and %d", len(got[0].Problems), got[0].MoreProblems, MaxProblems, 1017-MaxProblems)
	}
}

func TestIsLeftover(t *testing.T) {
	tests := []struct {
		name, record string
		ok           bool
	}{
		{".bd-1.json.tmp-123", "bd-1.json", true},
		{".bd-1.json.bak.tmp-4567", "bd-1.json", true},
		{".bd.x.json.tmp-1", "bd.x.json", true},
		{"bd-1.json.tmp-123", "", false},
		{".bd-1.json.tmp-", "", false},
		{".bd-1.json.tmp-12a", "", false},
		{".bd-1.txt.tmp-1", "", false},
		{".template-scores.json", "", false},
	}
	for _, tt := range tests {
		rec, ok := isLeftover(tt.name)
		if rec != tt.record || ok != tt.ok {
			t.Errorf("isLeftover(%q) = %q, %v; want %q, %v", tt.name, rec, ok, tt.record, tt.ok)
		}
	}
}
