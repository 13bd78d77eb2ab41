package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary the local attempts' supervisor (Local starts it as
// "BINARY __supervise --state-dir DIR --handoff fd:3 slot:SLOT", serving a slot, as swarm's `run
// __supervise` verb; "--handoff H BEAD" for one attempt) and
// the runner the adoption case kills (killedRunVerb).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
		}))
	}
	if len(os.Args) > 1 && os.Args[1] == killedRunVerb {
		os.Exit(killedRunMain(os.Args[2:]))
	}
	os.Exit(sweep.Guard(m).Run())
}

// killedRunVerb is a runner that starts one attempt on an executor and SIGKILLs itself at STEP:
// "numbered" (the attempt has its number, before it starts) or "launched" (its supervisor has
// it): "BINARY __conformance_killed_run SETUP_JSON JOB_JSON STEP". It prints "launched N" when
// the attempt is numbered.
const killedRunVerb = "__conformance_killed_run"

func killedRunMain(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: __conformance_killed_run SETUP_JSON JOB_JSON STEP")
		return 2
	}
	var s setup
	var j jobSpec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.Unmarshal([]byte(args[1]), &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	e, err := s.open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	job := j.job()
	die := func(step string) {
		if step == args[2] {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	job.Launched = func(n int) {
		fmt.Printf("launched %d\n", n)
		die("numbered")
	}
	job.Checkpoint = die
	out := e.Run(context.Background(), e.Slots()[0], job)
	fmt.Fprintf(os.Stderr, "the attempt ended before it was launched: %+v\n", out)
	return 3
}

var _ executor.Executor = (*executor.Local)(nil)
var _ executor.Executor = (*executor.Remote)(nil)
