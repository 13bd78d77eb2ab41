package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// waitOptions are wait's flags.
type waitOptions struct {
	timeout string // seconds or a duration, read by the action
	all     bool
}

// AddFlags appends wait's flags, each writing into o, to flags.
func (o *waitOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "timeout", Destination: &o.timeout, Usage: "give up after `S` seconds (or a duration: 90s, 30m, 1h30m); 0: never"},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "every running worker"},
	)
}

func waitCommand() *cli.Command {
	var o waitOptions
	return &cli.Command{
		Name: "wait", Operand: "workers", Usage: "wait for workers to exit", UsageText: "swarm wait [NAME] [--timeout S] [--all]",
		Flags: o.AddFlags(nil),
		ExitCodes: []cli.ExitCode{{Code: 0, Meaning: "exited with 0"}, {Code: 1, Meaning: "timeout or failure"},
			{Code: 2, Meaning: "usage error"}, {Code: 3, Meaning: "and above: the worker's exit code (--all: the first non-zero)"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return runWait(ctx, c, s, &o)
		},
	}
}

// runWait waits for the workers named (or every running one) to exit, within --timeout; its
// error carries the exit code of the first that failed.
func runWait(ctx context.Context, c *ucli.Context, s cli.Streams, o *waitOptions) error {
	var timeout time.Duration
	if t := o.timeout; t != "" && t != "0" {
		var err error
		if timeout, err = worker.Duration(t); err != nil {
			return cli.Usagef("argument --timeout: invalid value: '%s'%s", t, worker.DurationNote(err))
		}
	}
	sw, st, err := load(ctx, s)
	if err != nil {
		return err
	}
	ws, err := workersToWait(ctx, c, sw, st, o.all)
	if err != nil {
		return err
	}
	start := time.Now()
	code := 0
	pending := ws
	for len(pending) > 0 {
		if timeout > 0 && time.Since(start) > timeout {
			for _, w := range pending {
				fmt.Fprintf(s.Out, "%s: still running (timeout)\n", w.Name)
			}
			return &cli.ExitError{Code: 1}
		}
		var exited int
		pending, exited = reapExited(ctx, s, sw, pending)
		if code == 0 {
			code = exited
		}
		if len(pending) > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if code != 0 {
		return &cli.ExitError{Code: code}
	}
	return nil
}

// workersToWait are the workers wait waits for: every running one with --all (the lost ones
// closed on the way), else the one named.
func workersToWait(ctx context.Context, c *ucli.Context, sw *swarm.Swarm, st *worker.State, all bool) ([]*worker.Worker, error) {
	if all {
		var ws []*worker.Worker
		lives := sw.LiveAll(ctx, st.Workers) // the lost ones closed in one write
		for i, w := range st.Workers {
			if lives[i].Running {
				ws = append(ws, w)
			}
		}
		return ws, nil
	}
	if c.NArg() == 0 {
		return nil, errors.New("name required (or use --all)")
	}
	w, err := one(st, c.Args().First(), 1)
	if err != nil {
		return nil, err
	}
	return []*worker.Worker{w}, nil
}

// reapExited says "exited" for each of pending that has, and returns those still running and
// the exit code of the first that exited with one not zero (0: none).
func reapExited(ctx context.Context, s cli.Streams, sw *swarm.Swarm, pending []*worker.Worker) (still []*worker.Worker, code int) {
	for _, w := range pending {
		live := sw.Live(ctx, w)
		if live.Running {
			still = append(still, w)
			continue
		}
		if live.Supervised {
			sw.WaitGone(ctx, w, 5*time.Second)
			if live.Outcome == nil {
				// Stopped before its end was recorded (its window killed, the
				// agent still being stopped): the record is there now.
				live = sw.Live(ctx, w)
			}
		}
		fmt.Fprintf(s.Out, "%s: exited\n", w.Name)
		if c := exitCode(s, w, live); code == 0 {
			code = c
		}
	}
	return still, code
}

// exitCode is the status wait exits with for a worker that stopped: its agent's exit code
// (capped to 255), 1 when it cannot be known (said why), 0 for a worker the Python swarm
// started (it had none to give).
func exitCode(s cli.Streams, w *worker.Worker, live swarm.Liveness) int {
	if !live.Supervised {
		return 0
	}
	if live.Outcome == nil || live.Outcome.ExitCode == nil {
		reason := "no outcome recorded"
		if live.Outcome != nil {
			reason = live.Outcome.Reason
		}
		warnf(s, "%s: exit code unknown (%s)", w.Name, reason)
		return 1
	}
	c := int(*live.Outcome.ExitCode)
	if c < 0 || c > 255 {
		return 1
	}
	return c
}
