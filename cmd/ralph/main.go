// Command ralph runs a coding agent again and again on one task until it is done, and works
// through a plan's tasks with several agents at once. Three kinds of work share the name:
//
//   - swarm's loops (internal/ralph/loop): an interactive agent as a swarm worker, fed a prompt
//     file each iteration, watched for a done pattern, inactivity and context use:
//     ralph spawn|run|status|pause|resume|stop|list|logs|clean|init|template NAME …
//     (`swarm ralph …` is the same code: cmd/internal/ralphloop).
//   - AIWG's loops (internal/ralph/aiwg): a task run headless until a completion command
//     passes: ralph start|abort|report, and status|pause|resume with a loop id.
//   - the task queue (internal/ralph/queue): ralph queue init|run|status|retry|skip|add PLAN.
//
// `ralph list` shows the loops of both kinds.
//
// The command line is one cli.Tool in the Labelled dialect: every diagnostic is "ralph:
// error: …", a usage error's hint "ralph: hint: run 'ralph VERB --help' for usage". Each verb
// of AIWG's loops and of the queue is a file of its own (aiwg_*.go, queue_*.go) that parses its
// flags into a typed spec and calls its library; swarm's loops' verbs are cmd/internal/ralphloop's
// commands, shared with `swarm ralph` (loop.go: their settings, and status|pause|resume routed
// to AIWG for a loop id).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentfleet/fleet/cmd/internal/ralphloop"
	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/statedir"
)

const tool = "ralph"

func main() {
	os.Exit(run(os.Args))
}

// run runs ralph's command line args (args[0] the program) and returns the exit status.
func run(args []string) int {
	return newTool().Main(args, cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// newTool is ralph's command line. Its verbs are in the order of the list an unknown verb is
// answered with (argparse's, as the Python swarm's ralph said it): swarm's loops' first. Each
// call makes new flags: urfave/cli keeps the values it parsed in them.
func newTool() *cli.Tool {
	lc := loopConfig()
	return &cli.Tool{
		Name: tool, Dialect: cli.Labelled, Usage: usage, Manual: manual, Names: names,
		Commands: []*cli.Command{
			ralphloop.SpawnCommand(lc), ralphloop.RunCommand(lc),
			statusCommand(), pauseCommand(), resumeCommand(),
			ralphloop.StopCommand(lc), ralphloop.LogsCommand(lc), ralphloop.CleanCommand(lc), ralphloop.InitCommand(lc),
			ralphloop.TemplateCommand(lc),
			startCommand(), abortRouted(), reportCommand(), listCommand(), queueCommand(),
			supervisorverb.Command(supervisorverb.Worker,
				"run a loop worker's supervisor (started by the loop)", "%s is started by swarm spawn, not by hand"),
		},
	}
}

// names are what `ralph __complete KIND` lists for the completions, read and never changed:
// swarm's loops ($SWARM_DIR/ralph/) and the plans queued in the current directory's
// .claude/ralph/ (queue's --repo default).
var names = map[string]func() ([]string, error){
	"loops": func() ([]string, error) {
		d, err := statedir.SwarmFromEnv(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		return d.LoopNames()
	},
	"plans": func() ([]string, error) {
		ids, err := store.In(".").Plans()
		var valid []string
		for _, id := range ids {
			if plan.CheckID(id) == nil {
				valid = append(valid, id)
			}
		}
		return valid, err
	},
}

func usage(w io.Writer) {
	fmt.Fprint(w, usageText)
	fmt.Fprint(w, "\nHow swarm's loops work, and how to use them:\n\n")
	ralphloop.Guide(w, tool)
	fmt.Fprint(w, usageEnd)
}

// usageText is ralph's help before the loops' guide; usageEnd after it.
const usageText = `ralph - run an agent again and again on one task until it is done

Usage:
   ralph <verb> [options] [args]

swarm's loops (an interactive agent as a swarm worker, fed a prompt file each iteration):
   spawn     start a loop: ralph spawn --name N --prompt-file F [options] -- CMD...
   run       run a loop's monitor here (spawn starts one in the background)
   status    a loop's progress (NAME, or an AIWG loop id)
   pause     pause a loop after its current iteration (NAME or loop id)
   resume    resume a paused loop, restarting a monitor that died (NAME or loop id)
   stop      stop a loop and its worker
   abort     end a loop for good: ralph abort NAME [--revert] (its tree back to its start)
   logs      a loop's iteration log
   clean     remove loops' state (not their workers)
   init      write PROMPT.md, a starter prompt
   template  print the starter prompt

AIWG's loops (a task run headless until a completion command passes):
   start     ralph start "TASK" --completion "CMD" [options]
   abort     stop a loop for good (LOOP_ID; --revert resets the working tree)
   report    a loop's iterations, durations, cost and checks

Both:
   list      every loop of both kinds (also: ls; --json; --format table|json|names: swarm's alone)

The task queue (a plan's tasks, several agents, dependencies, retries, a budget):
   queue     ralph queue init|run|status|retry|skip|add PLAN ...
`

const usageEnd = `
'ralph <verb> --help' (or 'ralph help <verb>') shows a verb's options and examples;
docs/ralph.md has the rest. Exit status: 0 ok, 1 failure, 2 usage error.
`
