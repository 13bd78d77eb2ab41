package ralphloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// CleanCommand is `clean [NAME] [--all]`: loops' state goes, not their workers.
func CleanCommand(c Config) *cli.Command {
	var all bool // clean's one flag
	return &cli.Command{
		Name: "clean", Operand: "loops", Usage: "remove loops' state (not their workers)", UsageText: c.usageText("TOOL clean [NAME] [--all]"),
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "all", Destination: &all, Usage: "every loop"}},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			var names []string
			if all {
				names = ls.Names()
			} else {
				if uc.NArg() == 0 {
					return errors.New("must specify worker name or use --all")
				}
				name := uc.Args().First()
				exists, err := ls.Exists(name)
				if err != nil {
					return err
				}
				if !exists {
					return fmt.Errorf("no ralph state found for worker '%s'", name)
				}
				names = []string{name}
			}
			for _, name := range names {
				running, err := ls.Clean(ctx, name)
				if running {
					c.warnf(s, "worker '%s' is still running (only ralph state removed)", name)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "cleaned ralph state for %s\n", name)
			}
			return nil
		}),
	}
}
