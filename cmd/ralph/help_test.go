package main

import (
	"testing"

	"github.com/agentfleet/fleet/internal/testenv"
)

// TestVerbHelpWithOperand: every verb of ralph (and of ralph queue) given an
// operand and --help, before or after it (before the command of spawn), prints its help and exits 0, as argparse did
// ("ralph clean agent --help"; it was "No help topic for 'w'", exit 1).
func TestVerbHelpWithOperand(t *testing.T) {
	t.Setenv("SWARM_DIR", t.TempDir())
	testenv.VerbHelp(t, "ralph", newTool)
}
