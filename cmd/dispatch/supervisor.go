package main

import (
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

// superviseApp is the hidden verb that runs one attempt's supervisor, started by launch inside
// the bead's tmux session or as a detached process.
func superviseApp(stdout, stderr io.Writer) *ucli.App {
	return newApp(tool+" "+supervise.SuperviseVerb, "run one attempt's supervisor (started by dispatch)", "", nil, stdout, stderr,
		func(c *ucli.Context) error {
			bead := c.Args().First()
			l := supervise.Layout{Dir: c.String("state-dir")}
			spec, err := l.TakeSpec(bead)
			if err != nil {
				return err
			}
			return supervise.Supervise(spec, os.Stdout)
		})
}
