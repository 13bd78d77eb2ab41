package ralphloop

import (
	"context"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// LogsCommand is `logs NAME [--live] [--lines N]`: the loop's iterations.log.
func LogsCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "logs", Operand: "loops", Usage: "a loop's iteration log", UsageText: c.usageText("TOOL logs NAME [--live] [--lines N]"),
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "live", Usage: "keep printing new lines (Ctrl-C ends)"},
			&ucli.IntFlag{Name: "lines", Value: -1, Usage: "only the last `N` lines"},
		},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			return ls.Logs(ctx, name, loop.LogsOptions{Lines: uc.Int("lines"), Live: uc.Bool("live")}, s.Out)
		}),
	}
}
