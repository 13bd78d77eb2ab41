package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	ucli "github.com/urfave/cli/v2"
)

// runController is `ralph start __run LOOP_ID`: a loop's background controller, started by
// ralph start and resume in the loop's workspace, its output in the loop's controller.log.
func runController(ctx context.Context, s cli.Streams, args []string) error {
	if len(args) != 1 || !aiwg.IsLoopID(args[0]) {
		return cli.Usagef("ralph start %s is started by ralph start, not by hand", controllerVerb)
	}
	ws, err := workspaceHere()
	if err != nil {
		return err
	}
	rt, err := runtime(ws, s.Err, s.Err)
	if err != nil {
		return err
	}
	status, err := ws.RunLoop(ctx, args[0], rt)
	if err == nil {
		fmt.Fprintf(s.Err, "%s loop %s: %s\n", time.Now().UTC().Format(time.RFC3339), args[0], status)
	}
	return err
}

// startSuperviseCommand is `ralph start __supervise --state-dir DIR --handoff H BEAD`: an
// iteration's supervisor, started detached by the loop's controller (attempt.Launch), which
// hands it its spec.
func startSuperviseCommand() *cli.Command {
	return &cli.Command{
		Name: supervisorVerb, Hidden: true, OwnSignals: true,
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "state-dir"}, &ucli.StringFlag{Name: "handoff"}},
		Action: func(ctx context.Context, c *ucli.Context, _ cli.Streams) error {
			if c.NArg() != 1 || c.String("handoff") == "" || c.String("state-dir") == "" {
				return cli.Usagef("ralph start %s is started by ralph, not by hand", supervisorVerb)
			}
			return attempt.Supervise(ctx, c.String("state-dir"), c.String("handoff"), c.Args().First(), os.Stdout, nil)
		},
	}
}
