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
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/ralph/queue"
	"github.com/agentfleet/fleet/internal/supervise"
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
	case verb == "" || verb == "help" && len(args) == 2 || verb == "-h" || verb == "--help":
		if verb == "" { // a usage error: the usage goes to stderr, as ralph queue's does
			usage(stderr)
			return cli.ExitUsage
		}
		usage(stdout)
		return cli.ExitOK
	case verb == "help":
		// ralph help VERB is VERB --help, wherever VERB lives.
		return run(append([]string{args[0], args[2], "--help"}, args[3:]...))
	case verb == "--version" || verb == "version":
		fmt.Fprintf(stdout, "ralph version %s\n", cli.Version())
		return cli.ExitOK
	case verb == supervise.SuperviseVerb:
		// The supervisor of a loop's worker: this binary runs it as swarm does.
		return superviseTool.Main(args, cli.Streams{In: stdin, Out: stdout, Err: stderr})
	case verb == "queue":
		return queue.Run(append([]string{"ralph queue"}, args[2:]...), stdin, stdout, stderr)
	case verb == "start" || verb == "abort" || verb == "report" || verb == "list" || verb == "ls":
		// ralph list shows the loops of both kinds (swarm ralph list, swarm's alone).
		if verb == "ls" {
			args = append([]string{args[0], "list"}, args[2:]...)
		}
		return aiwg.Run(append([]string{"ralph"}, args[1:]...), stdin, stdout, stderr)
	case (verb == "status" || verb == "pause" || verb == "resume") && firstOperandIsLoopID(args[2:]):
		return aiwg.Run(append([]string{"ralph"}, args[1:]...), stdin, stdout, stderr)
	}
	if !slices.Contains(loopVerbs, verb) {
		fmt.Fprintf(stderr, "ralph: error: invalid choice: '%s' (choose from %s)\nralph: hint: run 'ralph --help' for usage\n",
			verb, "'"+strings.Join(allVerbs, "', '")+"'")
		return cli.ExitUsage
	}
	return loop.Run(append([]string{"ralph"}, args[1:]...), swarmOptions(), stdin, stdout, stderr)
}

// loopVerbs go to swarm's loops; allVerbs are every verb the help lists.
var (
	loopVerbs = []string{"spawn", "run", "status", "pause", "resume", "stop", "logs", "clean", "init", "template"}
	allVerbs  = append(slices.Clip(loopVerbs), "start", "abort", "report", "list", "queue")
)

func usage(w io.Writer) {
	fmt.Fprint(w, `ralph - run an agent again and again on one task until it is done

Usage:
   ralph <verb> [options] [args]

swarm's loops (an interactive agent as a swarm worker, fed a prompt file each iteration):
   spawn     start a loop: ralph spawn --name N --prompt-file F [options] -- CMD...
   run       run a loop's monitor here (spawn starts one in the background)
   status    a loop's progress (NAME, or an AIWG loop id)
   pause     pause a loop after its current iteration (NAME or loop id)
   resume    resume a paused loop, restarting a monitor that died (NAME or loop id)
   stop      stop a loop and its worker
   logs      a loop's iteration log
   clean     remove loops' state (not their workers)
   init      write PROMPT.md, a starter prompt
   template  print the starter prompt

AIWG's loops (a task run headless until a completion command passes):
   start     ralph start "TASK" --completion "CMD" [options]
   abort     stop a loop for good (--revert resets the working tree)
   report    a loop's iterations, durations, cost and checks

Both:
   list      every loop of both kinds (also: ls; --json)

The task queue (a plan's tasks, several agents, dependencies, retries, a budget):
   queue     ralph queue init|run|status|retry|skip|add PLAN ...

'ralph <verb> --help' (or 'ralph help <verb>') shows a verb's options; docs/ralph.md has the
rest. Exit status: 0 ok, 1 failure, 2 usage error.
`)
}

func firstOperandIsLoopID(args []string) bool {
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			return aiwg.IsLoopID(a)
		}
	}
	return false
}
