package remote

import (
	"encoding/json"
	"testing"

	"github.com/agentfleet/fleet/internal/record"
)

// TestFinalNeedsBothRecords: the host's supervisor writes an attempt's final run record, then
// its result; the records verb reads the two without the bead's lock, so a snapshot may hold
// the run record as it was (running) and the result final. That snapshot is not final: its
// records brought back would say the attempt still runs here (issue 18). The next read, with
// both, is.
func TestFinalNeedsBothRecords(t *testing.T) {
	fin := "2026-01-01T00:01:00Z"
	run := func(status string) json.RawMessage {
		b, _ := json.Marshal(record.Run{SchemaVersion: record.SchemaVersion, Bead: "b", Agent: "a", Model: "m", Repo: "/r",
			Prompt: "p", PromptHash: record.PromptHash("p"), PromptFull: "p", StartedAt: "2026-01-01T00:00:00Z", Status: status,
			Attempt: 1, MaxRetries: 3, SessionName: "s", ResultFile: "/f"})
		return b
	}
	res, _ := json.Marshal(record.Result{SchemaVersion: record.SchemaVersion, Bead: "b", Agent: "a", Status: record.StatusDone,
		Reason: "agent-exit-0", StartedAt: "2026-01-01T00:00:00Z", FinishedAt: &fin, Attempt: 1, MaxRetries: 3, SessionName: "s"})
	torn := &Snapshot{Bead: "b", Run: run(record.StatusRunning), Result: res}
	if _, ok := torn.Final(1); ok {
		t.Errorf("a snapshot of a final result and a run record still running is final")
	}
	whole := &Snapshot{Bead: "b", Run: run(record.StatusDone), Result: res}
	if r, ok := whole.Final(1); !ok || r.Status != record.StatusDone {
		t.Errorf("the snapshot of both final records is not final: %+v, %v", r, ok)
	}
}

// TestRefusal: a host's dispatch's refusal is its last line, or, for a usage error, the line
// before the hint to run its --help (which says nothing of why).
func TestRefusal(t *testing.T) {
	for stderr, want := range map[string]string{
		"dispatch: unknown agent \"x\"; configured agents: a\ndispatch: run 'dispatch --help' for usage\n": "dispatch: unknown agent \"x\"; configured agents: a",
		"dispatch: x-1: already ran; to run it again, raise DISPATCH_MAX_RETRIES (now 2)\n":                "dispatch: x-1: already ran; to run it again, raise DISPATCH_MAX_RETRIES (now 2)",
		"starting\ndispatch: no space\n":              "dispatch: no space",
		"dispatch: run 'dispatch --help' for usage\n": "dispatch: run 'dispatch --help' for usage",
	} {
		if got := refusal([]byte(stderr)); got != want {
			t.Errorf("refusal(%q) = %q, want %q", stderr, got, want)
		}
	}
}
