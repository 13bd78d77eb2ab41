package loop

import (
	"context"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/statedir"
)

// A swarm loop's rails have no timeouts (they are AIWG's, in the Rails type both kinds of loop
// share): a state or a seal that names them is read without them, as it was before the type
// was shared. Else an agent that writes "iteration_timeout_seconds" into its loop's rails in
// state.json has every later write of the state refused by the ralph-state schema (whose
// rails allow no such key), and its monitor can record nothing, its end included.

// TestStateRailsHaveNoTimeouts: the state read keeps the rails it knows, and is written back.
func TestStateRailsHaveNoTimeouts(t *testing.T) {
	st, err := decodeState([]byte(`{"worker_name": "w", "prompt_file": "p", "max_iterations": 3,
		"rails": {"budget_usd": 1, "iteration_timeout_seconds": 5, "inactivity_timeout_seconds": 7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Rails.Equal(&rails.Rails{BudgetUSD: usd(1)}) {
		t.Errorf("the state's rails are %+v, want its budget alone", st.Rails)
	}
	if _, err := st.checked(); err != nil {
		t.Errorf("the state read cannot be written back: %v", err)
	}
}

// TestSealedRailsHaveNoTimeouts: the seal read keeps the rails it knows.
func TestSealedRailsHaveNoTimeouts(t *testing.T) {
	l := &app{dir: statedir.Swarm{Root: t.TempDir()}}
	l.st = store{dir: l.dir, name: "l1"}
	if err := statedir.MkdirFor(l.sealPath()); err != nil {
		t.Fatal(err)
	}
	seal := `{"loop": "l1", "rails": {"max_calls_per_hour": 2, "inactivity_timeout_seconds": 7}, "cost_usd": 0.5}`
	if err := os.WriteFile(l.sealPath(), []byte(seal), 0o600); err != nil {
		t.Fatal(err)
	}
	s, ok := l.readSeal()
	if !ok || !s.Rails.Equal(&rails.Rails{MaxCallsPerHour: 2}) || s.CostUSD != 0.5 {
		t.Errorf("readSeal = %+v (rails %+v), %v; want the calls per hour alone and $0.50", s, s.Rails, ok)
	}
}

// TestSpawnRefusesTimeoutsInRails: a spawn given timeouts in its rails is refused before
// anything starts, not left to fail the schema once the loop runs.
func TestSpawnRefusesTimeoutsInRails(t *testing.T) {
	l := newLab(t)
	prompt := filepath.Join(l.root, "PROMPT.md")
	os.WriteFile(prompt, []byte("go on\n"), 0o644)
	_, err := l.ls.Spawn(context.Background(), SpawnSpec{Name: "t0", PromptFile: prompt, MaxIterations: 2, Cwd: l.root,
		Rails: &rails.Rails{IterationTimeoutSeconds: 60}, Cmd: []string{"sh", l.agent, "/dev/null", "/dev/null"}})
	if err == nil || !strings.Contains(err.Error(), "no iteration or inactivity timeout") {
		t.Fatalf("Spawn with a timeout in its rails = %v, want it refused", err)
	}
	if w, _ := l.ls.Swarm().Worker("t0"); w != nil {
		t.Fatalf("the refused spawn left a worker: %+v", w)
	}
}
