// Command ralph runs a coding agent again and again on one task until it is done, and works
// through a plan's tasks with several agents at once. Three kinds of work share the name:
//
//   - swarm's loops (internal/ralph/loop): an interactive agent as a swarm worker, fed a prompt
//     file each iteration, watched for a done pattern, inactivity and context use:
//     ralph spawn|run|status|pause|resume|stop|list|logs|clean|init|template NAME …
//     (`swarm ralph …` is the same code).
//   - AIWG's loops (internal/ralph/aiwg): a task run headless until a completion command
//     passes: ralph start|abort|report, and status|pause|resume with a loop id.
//   - the task queue (internal/ralph/queue): ralph queue init|run|status|retry|skip|add PLAN.
//
// `ralph list` shows the loops of both kinds.
package main

import (
	"os"

	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmcli"
)

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	stdin, stdout, stderr := os.Stdin, os.Stdout, os.Stderr
	verb := ""
	if len(args) > 1 {
		verb = args[1]
	}
	switch {
	case verb == supervise.SuperviseVerb:
		// The supervisor of a loop's worker: this binary runs it as swarm does.
		return swarmcli.Run(args, stdin, stdout, stderr)
	case verb == "queue":
		return queue.Run(append([]string{"ralph queue"}, args[2:]...), stdin, stdout, stderr)
	case verb == "start" || verb == "abort" || verb == "report" || verb == "list":
		return aiwg.Run(append([]string{"ralph"}, args[1:]...), stdin, stdout, stderr)
	case (verb == "status" || verb == "pause" || verb == "resume") && firstOperandIsLoopID(args[2:]):
		return aiwg.Run(append([]string{"ralph"}, args[1:]...), stdin, stdout, stderr)
	}
	return loop.Run(append([]string{"ralph"}, args[1:]...), stdin, stdout, stderr)
}

func firstOperandIsLoopID(args []string) bool {
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			return aiwg.IsLoopID(a)
		}
	}
	return false
}
