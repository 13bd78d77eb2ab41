package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/cli"
)

// TestVerbHelpWithOperand: every verb of ralph (and of ralph queue) given an
// operand and --help, before or after it (before the command of spawn), prints its help and exits 0, as argparse did
// ("ralph clean agent --help"; it was "No help topic for 'w'", exit 1).
func TestVerbHelpWithOperand(t *testing.T) {
	t.Setenv("SWARM_DIR", t.TempDir())
	testVerbHelp(t, "ralph", nil, newTool().Commands)
}

func testVerbHelp(t *testing.T, prefix string, path []string, cmds []*cli.Command) {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		verb := append(append([]string{}, path...), c.Name)
		if len(c.Commands) > 0 {
			testVerbHelp(t, prefix, verb, c.Commands)
			continue
		}
		name := prefix + " " + strings.Join(verb, " ")
		forms := [][]string{{"agent", "--help"}, {"-h", "agent"}}
		if c.Remainder {
			// After the first operand everything is the command to run, --help included.
			forms = [][]string{{"--name", "agent", "--help", "--", "sh"}, {"-h", "agent"}}
		}
		for _, form := range forms {
			args := append(append([]string{}, verb...), form...)
			var out, errb bytes.Buffer
			code := newTool().Main(append([]string{prefix}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != 0 || !strings.HasPrefix(out.String(), name) || errb.Len() > 0 {
				t.Errorf("%s %q = %d, stdout %.60q, stderr %q; want 0 and the help of %s", prefix, args, code, out.String(), errb.String(), name)
			}
		}
	}
}
