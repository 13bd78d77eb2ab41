package queue

import (
	"io"

	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

func notYet(name string) func(io.Reader, io.Writer, io.Writer) *ucli.App {
	return func(_ io.Reader, stdout, stderr io.Writer) *ucli.App {
		return newApp(cli.Spec{Name: tool + " " + name, Action: func(*ucli.Context) error {
			return cli.Usagef("%s is not built yet", name)
		}}, stdout, stderr)
	}
}

var (
	statusApp = notYet("status")
	retryApp  = notYet("retry")
	skipApp   = notYet("skip")
	addApp    = notYet("add")
)
