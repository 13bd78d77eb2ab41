package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentfleet/fleet/cmd/internal/ralphloop"
	"github.com/agentfleet/fleet/cmd/internal/swarmhost"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/statedir"
)

// loopConfig is how ralph runs swarm's loops' verbs (cmd/internal/ralphloop, which `swarm
// ralph` shares): typed "ralph VERB", their workers supervised by this binary (swarmhost).
func loopConfig() ralphloop.Config {
	return ralphloop.Config{Tool: tool, Swarm: swarmhost.Options}
}

// routedCommand is a verb of both kinds of loops (status, pause, resume): AIWG's when its
// first operand is a loop id (ralph-<slug>-<8 hex>) and no swarm loop only has that name
// (toAIWG), else swarm's loops' verb of the name.
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
		if toAIWG(args) {
			return cli.Run(ctx, aiwgVerb.App(path, s), append([]string{path}, args...))
		}
		// swarm's loops' verbs run with a context that SIGINT and SIGTERM cancel, as every
		// verb that does not catch them itself.
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return cli.Run(ctx, loopVerb.App(path, s), append([]string{path}, args...))
	}}
}

// toAIWG says whether a verb of both kinds of loops is AIWG's: its first argument that is not a
// flag is a loop id (ralph-<slug>-<8 hex>), and it is not the name of one of swarm's loops that
// no AIWG loop of the workspace has for its id (a swarm loop may be called ralph-pause-5366125f:
// the Python swarm allowed it).
func toAIWG(args []string) bool {
	id := ""
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			id = a
			break
		}
	}
	if !aiwg.IsLoopID(id) {
		return false
	}
	if ws, err := workspace(); err == nil && ws.Exists(id) == nil {
		return true
	}
	sw, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return true
	}
	_, err = os.Lstat(sw.RalphDir(id))
	return err != nil // none of swarm's either: AIWG says where its loops are
}

// abortRouted is `ralph abort`: swarm's loops' abort when its first operand names one of
// swarm's loops that is not also an AIWG loop id of the workspace, else AIWG's (whose operand
// is optional: the workspace's one loop).
func abortRouted() *cli.Command {
	aiwgVerb := abortCommand()
	var loopVerb *cli.Command
	for _, c := range ralphloop.Commands(loopConfig()) {
		if c.Name == "abort" {
			loopVerb = c
		}
	}
	return &cli.Command{Name: "abort", Operand: "loops", OwnSignals: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		path := tool + " abort"
		if !toSwarmLoop(args) {
			return cli.Run(ctx, aiwgVerb.App(path, s), append([]string{path}, args...))
		}
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return cli.Run(ctx, loopVerb.App(path, s), append([]string{path}, args...))
	}}
}

// toSwarmLoop says whether the first operand that is not a flag names one of swarm's loops
// (its directory under $SWARM_DIR/ralph) and is not a loop id of the workspace's AIWG loops.
func toSwarmLoop(args []string) bool {
	name := ""
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			name = a
			break
		}
	}
	if name == "" || statedir.CheckName(statedir.KindWorker, name) != nil {
		return false
	}
	if aiwg.IsLoopID(name) {
		if ws, err := workspace(); err == nil && ws.Exists(name) == nil {
			return false
		}
	}
	sw, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(sw.RalphDir(name))
	return err == nil && fi.IsDir()
}
