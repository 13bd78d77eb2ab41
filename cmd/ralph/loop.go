package main

import (
	"context"
	"slices"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
)

// loopCommand is the verb name of swarm's loops, run by loop.Run whole (its own flags, help,
// messages and signals: `swarm ralph` is the same code).
func loopCommand(name string) *cli.Command {
	return &cli.Command{Name: name, OwnSignals: true, Raw: func(_ context.Context, s cli.Streams, args []string) error {
		return runLoopVerb(s, name, args)
	}}
}

// runLoopVerb runs swarm's loops' verb name on args; its exit status is kept, and what went
// wrong it has said already.
func runLoopVerb(s cli.Streams, name string, args []string) error {
	return exitStatus(loop.Run(slices.Concat([]string{tool, name}, args), swarmOptions(), s.In, s.Out, s.Err))
}

// exitStatus is a command run whole's exit status as an error (nil for 0), its message said.
func exitStatus(code int) error {
	if code == cli.ExitOK {
		return nil
	}
	return &cli.ExitError{Code: code}
}

// routedCommand is a verb of both kinds of loops (status, pause, resume): AIWG's when its
// first operand is a loop id (ralph-<slug>-<8 hex>), else swarm's loops'.
func routedCommand(aiwgVerb *cli.Command) *cli.Command {
	name := aiwgVerb.Name
	return &cli.Command{Name: name, OwnSignals: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		if !firstOperandIsLoopID(args) {
			return runLoopVerb(s, name, args)
		}
		path := tool + " " + name
		return cli.Run(ctx, aiwgVerb.App(path, s), append([]string{path}, args...))
	}}
}

// firstOperandIsLoopID says whether the first argument that is not a flag is an AIWG loop id.
func firstOperandIsLoopID(args []string) bool {
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			return aiwg.IsLoopID(a)
		}
	}
	return false
}
