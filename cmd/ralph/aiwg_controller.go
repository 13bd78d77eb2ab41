package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
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

// startSupervisor is `ralph start __supervise --state-dir DIR --handoff H BEAD`: an
// iteration's supervisor, started detached by the loop's controller (attempt.Launch), which
// hands it its spec.
var startSupervisor = supervisorverb.Command(supervisorverb.Attempt, "run an iteration's supervisor (started by ralph start)",
	"ralph start %s is started by ralph, not by hand")
