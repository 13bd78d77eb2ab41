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
		Help: "ralph report [LOOP_ID] [--format text|markdown|json] - a loop's iterations, time, cost and checks\n",
		Flags: []ucli.Flag{&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format"}, Choices: []string{"text", "markdown", "json"},
			Invalid: func(v string) error { return cli.Usagef("--format %q: use text, markdown or json", v) }}, loopIDFlag(), &ucli.BoolFlag{Name: "json"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			format := c.String("format")
			switch {
			case c.Bool("json"):
				format = "json"
			case format == "":
				format = "text"
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
