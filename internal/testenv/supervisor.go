package testenv

import (
	"context"
	"fmt"
	"os"

	"github.com/agentfleet/fleet/internal/cli"
	"golang.org/x/term"
)

// Supervisor is a TestMain's stand-in for a binary's hidden supervisor verb, for a test binary
// that its code under test starts as the supervisor: it reads the verb's arguments (args,
// after the verb) as the binaries do (cli.ParseSupervisorArgs) and runs supervise on them with
// the terminal on stdin, if any, as the keyboard. It returns the exit code: 0, or 1 with the
// error on stderr.
func Supervisor(args []string, supervise func(ctx context.Context, a cli.SupervisorArgs, input *os.File) error) int {
	a, err := cli.ParseSupervisorArgs(args)
	if err == nil {
		var input *os.File
		if term.IsTerminal(int(os.Stdin.Fd())) {
			input = os.Stdin
		}
		err = supervise(context.Background(), a, input)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
