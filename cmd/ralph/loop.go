package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/agentfleet/fleet/cmd/internal/ralphloop"
	"github.com/agentfleet/fleet/cmd/internal/swarmhost"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
)

// loopConfig is how ralph runs swarm's loops' verbs (cmd/internal/ralphloop, which `swarm
// ralph` shares): typed "ralph VERB", their workers supervised by this binary (swarmhost).
func loopConfig() ralphloop.Config {
	return ralphloop.Config{Tool: tool, Swarm: swarmhost.Options}
}

// routedCommand is a verb of both kinds of loops (status, pause, resume): AIWG's when its
// first operand is a loop id (ralph-<slug>-<8 hex>), else swarm's loops' verb of the name.
func routedCommand(aiwgVerb *cli.Command) *cli.Command {
	name := aiwgVerb.Name
	var loopVerb *cli.Command
	for _, c := range ralphloop.Commands(loopConfig()) {
		if c.Name == name {
			loopVerb = c
		}
	}
	return &cli.Command{Name: name, OwnSignals: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		path := tool + " " + name
		if firstOperandIsLoopID(args) {
			return cli.Run(ctx, aiwgVerb.App(path, s), append([]string{path}, args...))
		}
		// swarm's loops' verbs run with a context that SIGINT and SIGTERM cancel, as every
		// verb that does not catch them itself.
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return cli.Run(ctx, loopVerb.App(path, s), append([]string{path}, args...))
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
