package ralphloop

import (
	"context"
	"errors"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// RunCommand is `run NAME`: the loop's monitor, here, until the loop ends (spawn starts it in
// the background this way). It catches SIGINT, SIGTERM and SIGHUP itself.
func RunCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "run", Operand: "loops", Usage: "run a loop's monitor here (spawn starts one in the background)", UsageText: c.usageText("TOOL run NAME"),
		Epilog:     c.usageText(runEpilog),
		OwnSignals: true,
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			name, err := one(uc)
			if err != nil {
				return err
			}
			return runMonitor(ctx, ls, name)
		}),
	}
}

// runMonitor runs the loop's monitor here; exit status 1 when the loop ended failed (its state
// and its log say why).
func runMonitor(ctx context.Context, ls *loop.Loops, name string) error {
	err := ls.RunMonitor(ctx, name)
	if errors.Is(err, loop.ErrFailed) {
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return err
}
