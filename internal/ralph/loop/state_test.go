package loop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// pyState writes a RalphState dict as the Python swarm's save_ralph_state does.
const pyState = `import json, sys
d = {"worker_name": "w", "prompt_file": "/p/PROMPT.md", "max_iterations": 5, "current_iteration": 2,
     "status": "running", "started": "2026-11-23T19:00:00.123456", "last_iteration_started": "",
     "last_iteration_ended": "", "iteration_durations": [3, 4], "consecutive_failures": 0,
     "total_failures": 1, "done_pattern": "DONE \u00e9 \U0001F600 </done>", "inactivity_timeout": 180,
     "check_done_continuous": True, "exit_reason": None,
     "prompt_baseline_content": "a\"b\\c\n\t\x01\x7f\u2028", "last_screen_change": "2026-11-23T18:00:00.5+00:00",
     "monitor_pid": 123, "max_context": None, "context_nudge_sent": False}
if sys.argv[1] == "extra":
    d["someone_elses"] = {"nested": [1, {"a": None}], "f": 1.5}
    d["empty"] = []
sys.stdout.write(json.dumps(d, indent=2))
`

// TestPythonFormat: a state the Python swarm wrote is read and written back byte for byte (its
// key order, indent, escapes, no final newline), unknown keys kept.
func TestPythonFormat(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	for _, mode := range []string{"plain", "extra"} {
		py, err := exec.Command("python3", "-c", pyState, mode).Output()
		if err != nil {
			t.Fatal(err)
		}
		st, err := decodeState(py)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if st.CurrentIteration != 2 || st.MonitorPID == nil || *st.MonitorPID != 123 || st.DonePattern == nil ||
			*st.DonePattern != "DONE é 😀 </done>" || len(st.IterationDurations) != 2 {
			t.Fatalf("%s: read %+v", mode, st)
		}
		if got := st.encode(); !bytes.Equal(got, py) {
			t.Errorf("%s: written back differently:\n%s\nPython:\n%s", mode, got, py)
		}
	}
}

func TestDecodeState(t *testing.T) {
	st, err := decodeState([]byte(`{"worker_name": "w", "prompt_file": "p", "max_iterations": 3}`))
	if err != nil || st.Status != StatusRunning || st.InactivityTimeout != 180 || st.IterationDurations != nil {
		t.Fatalf("defaults: %+v %v", st, err)
	}
	if !bytes.Contains(st.encode(), []byte(`"iteration_durations": [],`)) {
		t.Errorf("an empty list is written as []:\n%s", st.encode())
	}
	for doc, want := range map[string]string{
		`{"worker_name": "w", "prompt_file": "p"}`:                          `"max_iterations" is missing`,
		`{"worker_name": "w", "prompt_file": "p", "max_iterations": "ten"}`: `"max_iterations" is a JSON string`,
		`[1, 2]`:  `not a JSON object`,
		`{"wor`:   errCorrupt.Error(),
		``:        errCorrupt.Error(),
		`{} junk`: errCorrupt.Error(),
	} {
		if _, err := decodeState([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

func TestContextUse(t *testing.T) {
	for screen, want := range map[string]int{
		"Context: 45% used":                       45,
		"working\n45% context used":               45,
		"Context left until auto-compact: 12%":    88,
		"Context low (8% remaining)":              92,
		"  ctx  \n73% of context":                 73,
		"100% of tests pass\nall good":            -1,
		"Downloading... 97%":                      -1,
		"Context: 45%\n\n\nline\nline\nline\nend": -1, // not among the last three lines
	} {
		got, ok := contextUse(strings.Split(screen, "\n"))
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("%q: %d, want %d", screen, got, want)
		}
	}
}

// TestPromptLines: an output line that is a piece of the prompt (an agent showing the
// conversation again, behind whatever prefix) does not count for the done pattern; the agent's
// own marker does, even when the prompt names it.
func TestPromptLines(t *testing.T) {
	prompt := normalize("Fix the tests.\nWhen everything passes, print /done on a line of its own.")
	re := regexp.MustCompile(`/done`)
	for _, c := range []struct {
		line   string
		counts bool
	}{
		{"When everything passes, print /done on a line of its own.", false},
		{"> When everything passes, print /done", false},
		{"│ passes, print /done on a line │", false},
		{"User: When everything passes, print /done on a line of its own.", false},
		{"[you] When everything passes, print /done", false},
		{"Human:When everything passes, print /done on a line", false},
		{"  » passes, print /done on a line of its own.", false},
		{"2024-05-01 12:00 prompt: print /done on a line of its own.", false},
		{"/done", true},
		{"  /done  ", true},
		{"all tests pass /done", true},
		{"I will print /done on a line of its own when the tests pass", true},
		{"print /done", true}, // too little of the prompt to tell: the agent may say it
		{"no marker here", false},
		{"User: Fix the tests. /done", true},
	} {
		if got := agentSaid(re, c.line, prompt); got != c.counts {
			t.Errorf("%q counts: %v, want %v", c.line, got, c.counts)
		}
	}
	// A done phrase of many words, printed alone, is the agent's.
	long := normalize("Work the list.\nWhen every item is checked, print All tasks complete")
	re = regexp.MustCompile(`All tasks complete`)
	for line, counts := range map[string]bool{
		"All tasks complete":                                   true,
		"Agent: All tasks complete":                            true,
		"agent> checked, print All tasks complete":             false,
		"When every item is checked, print All tasks complete": false,
	} {
		if got := agentSaid(re, line, long); got != counts {
			t.Errorf("%q counts: %v, want %v", line, got, counts)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for secs, want := range map[int64]string{0: "0s", 59: "59s", 60: "1m 0s", 342: "5m 42s", 3600: "1h 0m", 7380: "2h 3m"} {
		if got := formatDuration(secs); got != want {
			t.Errorf("%d: %q, want %q", secs, got, want)
		}
	}
	for n, want := range map[int]int64{1: 1, 2: 2, 3: 4, 4: 8, 9: 256, 10: 300, 60: 300} {
		if got := backoffFor(n); got != want {
			t.Errorf("backoff %d: %d, want %d", n, got, want)
		}
	}
}

// Schema-on-write: a loop state that would not satisfy the ralph-state schema is refused, by
// create and by update, and the file stays as it was.
func TestStateRefusesInvalid(t *testing.T) {
	s := store{dir: statedir.Swarm{Root: t.TempDir()}, name: "w"}
	ctx := context.Background()
	bad := &State{WorkerName: "w", PromptFile: "p", MaxIterations: -1, Status: StatusRunning}
	if err := s.create(ctx, bad); !errors.Is(err, schema.ErrInvalid) || !strings.Contains(err.Error(), "/max_iterations") {
		t.Fatalf("create(max_iterations -1) = %v, want the schema's refusal naming /max_iterations", err)
	}
	if _, err := os.Stat(s.dir.RalphState("w")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused create left a file: %v", err)
	}
	good := &State{WorkerName: "w", PromptFile: "p", MaxIterations: 3, Status: StatusRunning, InactivityTimeout: 180}
	if err := s.create(ctx, good); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(s.dir.RalphState("w"))
	_, err := s.update(ctx, func(st *State) error {
		st.CurrentIteration = 1
		st.Status = "exploded"
		return nil
	})
	var ie *schema.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `/status: expected one of`) {
		t.Fatalf("update(status exploded) = %v, want the schema's refusal naming /status", err)
	}
	if after, _ := os.ReadFile(s.dir.RalphState("w")); !bytes.Equal(after, before) {
		t.Errorf("a refused update changed the state:\n%s\nwas\n%s", after, before)
	}
	if st, err := s.update(ctx, func(st *State) error { st.CurrentIteration = 2; return nil }); err != nil || st.CurrentIteration != 2 {
		t.Errorf("a valid update after the refusal = %+v, %v", st, err)
	}
}
