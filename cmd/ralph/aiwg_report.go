package main

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

// reportCommand is `ralph report [LOOP_ID] [--format text|markdown|json]`: an AIWG loop's
// iterations, their time and cost, and its completion checks.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name: "report", OwnSignals: true,
		Help:  "ralph report [LOOP_ID] [--format text|markdown|json] - a loop's iterations, time, cost and checks\n",
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "format"}, loopIDFlag(), &ucli.BoolFlag{Name: "json"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			format := c.String("format")
			switch {
			case c.Bool("json"):
				format = "json"
			case format == "":
				format = "text"
			case format != "text" && format != "markdown" && format != "json":
				return cli.Usagef("--format %q: use text, markdown or json", format)
			}
			ws, id, err := namedLoop(ctx, c)
			if err != nil {
				return err
			}
			r, err := ws.Report(ctx, id)
			if err != nil {
				return err
			}
			switch format {
			case "json":
				return writeJSON(s.Out, r)
			case "markdown":
				r.Markdown(s.Out)
			default:
				r.Text(s.Out)
			}
			return nil
		},
	}
}
