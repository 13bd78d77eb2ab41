package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/agentfleet/fleet/internal/swarmrun"
	ucli "github.com/urfave/cli/v2"
)

// The exit codes of swarm run wait and follow: swarm run's for the execution's end.
var runEndExitCodes = []cli.ExitCode{{Code: 0, Meaning: "every task completed (or was skipped)"},
	{Code: 1, Meaning: "a task failed or is blocked, or --halt stopped the run, or the run was killed before its end"},
	{Code: 2, Meaning: "usage error, or no such execution"},
	{Code: exitInterrupted, Meaning: "the execution is paused (interrupted; --resume continues it), or this command was"}}

// runWaitCommand is `swarm run wait [ID]`: block until the execution's run ends (at once when
// none is at work), print its summary line, exit with its status.
func runWaitCommand() *cli.Command {
	return &cli.Command{
		Name: "wait", Usage: "wait until the current (or a given) execution's run ends; exit with its status",
		UsageText: "swarm run wait [ID]", ExitCodes: runEndExitCodes,
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return watchRun(ctx, c, s, "wait", func(runevents.Event) {})
		},
	}
}

// runFollowCommand is `swarm run follow [ID] [--json]`: the execution's events so far, then
// each as it happens until its run ends; exit with its status.
func runFollowCommand() *cli.Command {
	var asJSON bool // follow's one flag
	return &cli.Command{
		Name: "follow", Usage: "print the current (or a given) execution's events as they happen, until its run ends",
		UsageText: "swarm run follow [ID] [--json]", ExitCodes: runEndExitCodes,
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &asJSON, Usage: "print each event as a line of JSON (docs/swarm-run.md)"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return watchRun(ctx, c, s, "follow", func(e runevents.Event) { printEvent(s.Out, e, asJSON) })
		},
	}
}

// watchRun watches the execution named by the verb's argument (swarmrun.Watch), telling fn
// each event, and ends as the execution's run did.
func watchRun(ctx context.Context, c *ucli.Context, s cli.Streams, verb string, fn func(runevents.Event)) error {
	if c.NArg() > 1 {
		return cli.Usagef("give at most one execution id: swarm run %s [ID]", verb)
	}
	repo, err := repoOf(ctx, nil, ".")
	if err != nil {
		return err
	}
	st, err := swarmrun.Watch(ctx, swarmrun.Paths{Root: repo}, c.Args().First(), fn)
	switch {
	case errors.Is(err, swarmrun.ErrNotFound):
		return &cli.ExitError{Code: 2, Err: err}
	case err != nil && ctx.Err() != nil:
		return &cli.ExitError{Code: exitInterrupted, Err: errors.New("stopped; the run goes on")}
	case err != nil:
		return err
	}
	if verb == "wait" && st.Summary != nil {
		fmt.Fprintln(s.Out, summaryLine(st))
	}
	return runEndStatus(s.Err, st)
}

// runEndStatus is the exit status of an execution's end, as swarm run's: 0 completed, 1
// failed, 130 paused; one still "running" with no run at work lost its run (killed): 1.
func runEndStatus(stderr io.Writer, st *swarmrun.State) error {
	id := record.Printable(st.ExecutionID)
	switch st.Status {
	case swarmrun.ExecCompleted:
		return nil
	case swarmrun.ExecPaused:
		fmt.Fprintf(stderr, "swarm: execution %s is paused; 'swarm run MANIFEST --resume' continues it\n", id)
		return &cli.ExitError{Code: exitInterrupted}
	case swarmrun.ExecRunning:
		return &cli.ExitError{Code: 1, Err: fmt.Errorf("the run of execution %s ended before the execution did (killed?); 'swarm run MANIFEST --resume' continues it", id)}
	}
	return &cli.ExitError{Code: 1}
}

// summaryLine is the first line of swarm run's summary.
func summaryLine(st *swarmrun.State) string {
	sum := st.Summary
	return fmt.Sprintf("%s %s: %d tasks: %d completed, %d failed, %d blocked, %d skipped, %d not run; %.0f s, speedup %.2f",
		st.ExecutionID, st.Status, sum.TotalTasks, sum.Completed, sum.Failed, sum.Blocked, sum.Skipped, sum.Pending, sum.TotalDurationSeconds, sum.ParallelSpeedup)
}

// printEvent prints an event read back from the events file: its time and words, or (asJSON)
// the event as one line of JSON, made again from the fields read (what else the line held is
// not passed on).
func printEvent(w io.Writer, e runevents.Event, asJSON bool) {
	if asJSON {
		b, err := json.Marshal(e)
		if err == nil {
			fmt.Fprintf(w, "%s\n", b)
		}
		return
	}
	fmt.Fprintf(w, "%s %s\n", record.Printable(e.Time), eventText(e))
}
