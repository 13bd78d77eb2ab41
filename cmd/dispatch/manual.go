package main

import "github.com/agentfleet/fleet/internal/cli"

// manual is what dispatch's man page says beyond its command line (`dispatch __man`), from
// docs/dispatch.md: its exit codes, environment, files and examples.
var manual = cli.Manual{
	Description: "dispatch starts an AI coding agent on a bead (a task) in a repository and supervises it: " +
		"the agent runs under dispatch's supervisor (in a tmux session agent-BEAD, or as a detached process), " +
		"which records how it ended, so the outcome is known, not guessed from the screen. " +
		"It is a drop-in for dispatch.sh: the same arguments, environment, config/agents.json, console lines and records.\n\n" +
		"PROMPT is the fourth word that is not a flag, whatever it looks like; the verbs are reserved words, never bead ids. " +
		"Called through a workspace's shim (WORKSPACE/scripts/dispatch.sh), dispatch works on that workspace's state/ and config/agents.json.",
	Synopsis:   []string{formUsage},
	ExitStatus: exitStatus,
	Environment: []cli.Entry{
		{Name: "DISPATCH_TMUX_SOCKET", Meaning: "the tmux server's socket (default /tmp/openclaw-coding-agents.sock)"},
		{Name: "DISPATCH_MAX_RETRIES", Meaning: "attempts allowed per bead (default 2)"},
		{Name: "DISPATCH_WATCH_TIMEOUT", Meaning: "seconds before the agent is stopped (default 3600; --timeout overrides)"},
		{Name: "DISPATCH_WATCH_INTERVAL", Meaning: "accepted and checked; nothing is polled any more"},
		{Name: "DISPATCH_FORCE", Meaning: "1 or true: as --force"},
		{Name: "DISPATCH_<AGENT>_MODEL", Meaning: "the agent's model when no :MODEL suffix is given"},
		{Name: "DISPATCH_CODEX_REASONING_EFFORT", Meaning: "codex's -c model_reasoning_effort"},
		{Name: "DISPATCH_BACKEND", Meaning: "tmux (the default) or process: as --no-tmux"},
		{Name: "DISPATCH_KILL_GRACE", Meaning: "seconds between SIGTERM and SIGKILL (default 10)"},
		{Name: "DISPATCH_MIN_FREE_MB", Meaning: "the free-disk floor while running (default 100); twice this is needed to start"},
		{Name: "DISPATCH_USE_RELAY", Meaning: "true (the default) or false: use the relay when its binary is there"},
		{Name: "DISPATCH_RELAY_BIN", Meaning: "the relay's binary (default $HOME/go/bin/relay)"},
		{Name: "DISPATCH_HOSTS", Meaning: "with --host: the hosts file when --hosts is not given (default hosts.yaml)"},
		{Name: "DISPATCH_HOST_OFFLINE", Meaning: "with --host: seconds without an answer after which the host is offline (default 30)"},
		{Name: "CONFIG_FILE", Meaning: "the agents config; set, it must exist (set but empty: exit 2)"},
		{Name: "STATE_DIR", Meaning: "the state directory (default ./state; through a shim, WORKSPACE/state whatever it says)"},
		{Name: "FLEET_WORKSPACE", Meaning: "set by the shims: the workspace dispatch runs for, its config, state and scripts"},
	},
	Files: []cli.Entry{
		{Name: "config/agents.json", Meaning: "the agents config (CONFIG_FILE, else $FLEET_WORKSPACE/config/agents.json, else ./config/agents.json, else the built-in claude and codex)"},
		{Name: "STATE_DIR/runs/BEAD.json, STATE_DIR/results/BEAD.json", Meaning: "the bead's run and result records"},
		{Name: "STATE_DIR/attempts/BEAD/", Meaning: "each attempt's records and output log (run-N.json, result-N.json, output-N.log)"},
		{Name: "STATE_DIR/logs/BEAD.log", Meaning: "the agent's output, byte for byte"},
		{Name: "STATE_DIR/locks/, STATE_DIR/supervisors/", Meaning: "the beads' locks and the supervisors' registry"},
		{Name: "hosts.yaml", Meaning: "with --host: the hosts an agent may run on (docs/remote.md)"},
	},
	Examples: []cli.Example{
		{Command: "dispatch bd-1 ~/src/app claude 'Fix the failing test in pkg/io'", Meaning: "Start claude on bead bd-1 in a tmux session agent-bd-1, and return."},
		{Command: "dispatch bd-2 ~/src/app codex:o3 prompt.md --worktree --wait", Meaning: "Run codex in a worktree of its own and wait for the outcome (exit 0 done, 1 failed, 124 timeout)."},
		{Command: "dispatch ps --json", Meaning: "The live agents, the stale ones, and the last results, as JSON."},
		{Command: "dispatch kill bd-1", Meaning: "Stop bd-1's agent; its records say killed."},
	},
}
