package main

import (
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// superviseApp is the hidden verb that runs one attempt's supervisor, started by launch inside
// the bead's tmux session or as a detached process; it takes its spec from launch's handoff
// socket, so the prompt and the environment never touch the disk.
func superviseApp(stdout, stderr io.Writer) *ucli.App {
	flags := []ucli.Flag{&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"}}
	return newApp(tool+" "+supervise.SuperviseVerb, "run one attempt's supervisor (started by dispatch)", "", flags, stdout, stderr,
		func(c *ucli.Context) error {
			if c.NArg() != 1 || c.String("handoff") == "" {
				return cli.Usagef("%s is started by dispatch, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if term.IsTerminal(int(os.Stdin.Fd())) {
				input = os.Stdin
			}
			return attempt.Supervise(c.Context, c.String("state-dir"), c.String("handoff"), c.Args().First(), os.Stdout, input)
		})
}
