package main

import "github.com/agentfleet/fleet/internal/cli"

// manual is what swarm's man page says beyond its command line (`swarm __man`), from
// docs/swarm.md: its exit codes (the verbs' own among them), environment, files and examples.
var manual = cli.Manual{
	Description: "swarm keeps AI coding agents (Claude Code, Codex, any command) running side by side, each in a tmux " +
		"window or as a background process, optionally in a git worktree of its own, and lets scripts type into them, " +
		"read their screens and wait for them. It is a drop-in for the Python swarm tool: the same verbs, flags, " +
		"messages, exit codes and $SWARM_DIR/state.json.\n\n" +
		"Every worker runs under the toolkit's supervisor: the agent is the supervisor's child on a terminal of its " +
		"own, so status, ls and wait know whether it is alive and, once it ended, its exit code.",
	ExitStatus: []cli.ExitCode{
		{Code: cli.ExitOK, Meaning: "ok; swarm status: the worker is running; swarm wait exits with the worker's own exit code"},
		{Code: cli.ExitFailure, Meaning: "failure; swarm status: the worker is stopped; swarm wait: timed out"},
		{Code: cli.ExitUsage, Meaning: "usage error; swarm status and swarm peek: no such worker"},
	},
	Environment: []cli.Entry{
		{Name: "SWARM_DIR", Meaning: "the swarm directory (default ~/.swarm; set but empty: the current directory)"},
		{Name: "SWARM_AGENTS", Meaning: "the agent profiles config (default $SWARM_DIR/agents.json)"},
		{Name: "TMUX_TMPDIR", Meaning: "where tmux keeps its sockets"},
		{Name: "NO_COLOR", Meaning: "swarm top: no colour"},
	},
	Files: []cli.Entry{
		{Name: "$SWARM_DIR/state.json", Meaning: "the workers, as the Python swarm writes them (state.lock: its writers' lock)"},
		{Name: "$SWARM_DIR/logs/NAME.stdout.log, NAME.stderr.log", Meaning: "a process worker's output"},
		{Name: "$SWARM_DIR/heartbeats/WORKER.json", Meaning: "a worker's heartbeat"},
		{Name: "$SWARM_DIR/ralph/NAME/", Meaning: "a ralph loop's state and iteration log (swarm ralph)"},
		{Name: "$SWARM_DIR/supervise/", Meaning: "the supervisors' registry and control sockets"},
		{Name: "$SWARM_DIR/agents.json", Meaning: "agent profiles: ready, busy, waiting and dismiss screen patterns"},
	},
	Examples: []cli.Example{
		{Command: "swarm spawn --name fix-io --tmux --worktree --ready-wait -- claude", Meaning: "Start claude in a tmux window and a worktree of its own, and return once it is ready."},
		{Command: "swarm send fix-io 'Fix the failing test in pkg/io, then commit'", Meaning: "Type a prompt into the worker."},
		{Command: "swarm peek fix-io -n 40", Meaning: "The last 40 lines of its screen."},
		{Command: "swarm wait fix-io --timeout 3600; echo $?", Meaning: "Wait for it to exit, with its exit code."},
		{Command: "swarm top --hosts hosts.yaml", Meaning: "Every agent here and on the hosts of hosts.yaml, live; a host that does not answer is marked offline."},
		{Command: "swarm kill fix-io --rm-worktree", Meaning: "Stop it and remove its worktree (not when it has changes)."},
		{Command: "swarm run work.yaml && swarm run merge --into integration --test 'go test ./...'", Meaning: "Run a manifest's tasks, then land their branches on integration, tested after each merge."},
	},
}
