package testenv

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/cli"
)

// VerbHelp checks that every verb of the tool newTool makes (its verbs of verbs too), given an
// operand and --help (or -h before it), prints that verb's help on stdout and exits 0, as
// argparse did ("swarm kill w --help"; it was "No help topic for 'w'", exit 1). A verb that
// takes the rest of the line as a command (Remainder) is given --help before the "--".
func VerbHelp(t *testing.T, prog string, newTool func() *cli.Tool) {
	t.Helper()
	verbHelp(t, prog, nil, newTool().Commands, newTool)
}

func verbHelp(t *testing.T, prog string, path []string, cmds []*cli.Command, newTool func() *cli.Tool) {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		verb := append(append([]string{}, path...), c.Name)
		if len(c.Commands) > 0 {
			verbHelp(t, prog, verb, c.Commands, newTool)
			continue
		}
		name := prog + " " + strings.Join(verb, " ")
		forms := [][]string{{"agent", "--help"}, {"-h", "agent"}}
		if c.Remainder {
			// After the first operand everything is the command to run, --help included.
			forms = [][]string{{"--name", "agent", "--help", "--", "sh"}, {"-h", "agent"}}
		}
		for _, form := range forms {
			args := append(append([]string{}, verb...), form...)
			var out, errb bytes.Buffer
			code := newTool().Main(append([]string{prog}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != 0 || !strings.HasPrefix(out.String(), name) || errb.Len() > 0 {
				t.Errorf("%s %q = %d, stdout %.60q, stderr %q; want 0 and the help of %s", prog, args, code, out.String(), errb.String(), name)
			}
		}
	}
}
