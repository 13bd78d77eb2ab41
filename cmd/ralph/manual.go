package main

import "github.com/agentfleet/fleet/internal/cli"

// manual is what ralph's man page says beyond its command line (`ralph __man`), from
// docs/ralph.md: its exit codes, environment, files and examples.
var manual = cli.Manual{
	Description: "ralph runs a coding agent again and again on one task until it is done, and works through a plan's " +
		"tasks with several agents at once. Three kinds of work share the name: swarm's loops (an interactive agent " +
		"as a swarm worker, fed a prompt file each iteration: spawn, run, status, pause, resume, stop, abort, logs, " +
		"clean, init, template), AIWG's loops (a task run headless until a completion command passes: start, abort, " +
		"report, and status, pause, resume with a loop id), and the task queue (ralph queue). ralph list shows the " +
		"loops of both kinds.",
	ExitStatus: []cli.ExitCode{
		{Code: cli.ExitOK, Meaning: "ok"},
		{Code: cli.ExitFailure, Meaning: "failure"},
		{Code: cli.ExitUsage, Meaning: "usage error"},
	},
	Environment: []cli.Entry{
		{Name: "SWARM_DIR", Meaning: "swarm's directory, where swarm's loops are kept (default ~/.swarm)"},
		{Name: "STATE_DIR", Meaning: "where the iterations' run and result records go (spawn's default --state-dir; AIWG's loops: else .aiwg/ralph/state)"},
		{Name: "CONFIG_FILE, FLEET_WORKSPACE", Meaning: "the agents config of AIWG's loops and the queue, found as dispatch finds it"},
		{Name: "DISPATCH_WATCH_TIMEOUT", Meaning: "ralph queue run: the default --iteration-timeout"},
	},
	Files: []cli.Entry{
		{Name: "$SWARM_DIR/ralph/NAME/state.json, iterations.log", Meaning: "a swarm loop's state and iteration log"},
		{Name: ".aiwg/ralph/", Meaning: "AIWG's loops of the workspace (registry.json, loops/ID/state.json)"},
		{Name: ".claude/ralph/task-queue-PLAN.json", Meaning: "a plan's task queue (with retry-queue-PLAN.json, progress-PLAN.json, agent-state-AGENT.json, archive/)"},
		{Name: ".claude/ralph/merge-PLAN.json", Meaning: "what ralph queue merge landed, and where it stopped"},
		{Name: "PROMPT.md", Meaning: "the starter prompt ralph init writes"},
	},
	Examples: []cli.Example{
		{Command: "ralph init && ralph spawn --name docs --prompt-file PROMPT.md --done-pattern 'ALL DONE' -- claude", Meaning: "A swarm loop: claude fed PROMPT.md each iteration until it prints ALL DONE."},
		{Command: "ralph status docs", Meaning: "Its progress: iteration i/N, average iteration time, ETA."},
		{Command: "ralph start 'Make the tests pass' --completion 'go test ./...'", Meaning: "An AIWG loop: run the agent headless until go test passes."},
		{Command: "ralph queue init plan.md && ralph queue run plan --agents 3", Meaning: "Queue a plan's tasks and work through them with 3 agents at once."},
		{Command: "ralph queue merge plan --into integration --test 'go test ./...'", Meaning: "Land the done tasks' branches (a run with --worktree) on integration, tested after each merge."},
	},
}
