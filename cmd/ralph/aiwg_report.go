package main

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

// reportCommand is `ralph report [LOOP_ID] [--format text|markdown|json]`: an AIWG loop's
// iterations, their time and cost, and its completion checks.
// reportOptions are ralph report's flags.
type reportOptions struct {
	format, loopID string
	json           bool // --format json
}

// AddFlags appends ralph report's flags, each writing into o, to flags.
func (o *reportOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Destination: &o.format}, Choices: []string{"text", "markdown", "json"},
			Invalid: func(v string) error { return cli.Usagef("--format %q: use text, markdown or json", v) }},
		loopIDFlag(&o.loopID), &ucli.BoolFlag{Name: "json", Destination: &o.json})
}

func reportCommand() *cli.Command {
	var o reportOptions
	return &cli.Command{
		Name: "report", OwnSignals: true,
		Help:  "ralph report [LOOP_ID] [--format text|markdown|json] - a loop's iterations, time, cost and checks\n",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			format := o.format
			switch {
			case o.json:
				format = "json"
			case format == "":
				format = "text"
			}
			ws, id, err := namedLoop(ctx, c, o.loopID)
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
