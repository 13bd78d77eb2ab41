package ralphloop

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// LogsCommand is `logs NAME [--live] [--lines N]`: the loop's iterations.log.
func LogsCommand(c Config) *cli.Command {
	var o logsOptions
	return &cli.Command{
		Name: "logs", Operand: "loops", Usage: "a loop's iteration log", UsageText: c.usageText("TOOL logs NAME [--live] [--lines N]"),
		Flags: o.AddFlags(nil),
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			return ls.Logs(ctx, name, loop.LogsOptions{Lines: o.lines, Live: o.live}, s.Out)
		}),
	}
}

// logsOptions are logs' flags.
type logsOptions struct {
	live  bool
	lines int // -1: all of them
}

// AddFlags appends logs' flags, each writing into o, to flags.
func (o *logsOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "live", Destination: &o.live, Usage: "keep printing new lines (Ctrl-C ends)"},
		&ucli.IntFlag{Name: "lines", Value: -1, Destination: &o.lines, Usage: "only the last `N` lines"},
	)
}
