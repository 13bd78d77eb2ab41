// Command dispatch starts an AI coding agent on a bead (a task) in a repository and supervises
// it: a drop-in for dispatch.sh whose outcomes are known, not guessed.
//
// Usage:
//
//	dispatch BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE] [--branch B] [--force] [--wait [--retry]]
//	         [--worktree] [--verify CMD] [--timeout DUR] [--no-tmux] [--no-context] [--relay|--no-relay]
//	dispatch ps [--json]          live agents, stale ones, the last results
//	dispatch wait BEAD...         block until the beads' outcomes are final
//	dispatch kill BEAD            stop an agent; its records say "killed"
//	dispatch reconcile [--all] [--json]   close the records of supervisors that died
//	dispatch attach BEAD          watch an agent's tmux session
//	dispatch help [VERB]          the help, or a verb's (its flags and exit codes)
//
// Flags may come before or after the verb and the arguments: every verb takes --state-dir DIR
// (STATE_DIR; set but empty, it is a usage error). --version prints the version. The verbs,
// help and version are never bead ids.
//
// PROMPT is the text itself, @FILE for a file's content, or - for standard input; it reaches the
// agent on its stdin (or as its config says), never through a shell. AGENT is any entry of the
// agents config with a "command": CONFIG_FILE when set (a missing or broken file is an error),
// else the workspace's config/agents.json when dispatch runs through a workspace's shim
// (FLEET_WORKSPACE), else ./config/agents.json; claude and codex are built in when the binary
// runs outside any workspace and there is none.
//
// dispatch runs a supervisor (itself, under a hidden verb) in the tmux session agent-BEAD on
// DISPATCH_TMUX_SOCKET, or as a detached process with --no-tmux. The supervisor starts the agent
// as its child, on a terminal of its own, so the agent's real exit code decides the outcome:
// done only for exit 0. It writes
// the run record (state/runs/BEAD.json) and the result record (state/results/BEAD.json), keeps
// the agent's output in state/logs/BEAD.log, and earlier attempts in state/attempts/BEAD/.
//
// Environment: DISPATCH_TMUX_SOCKET (/tmp/openclaw-coding-agents.sock), DISPATCH_MAX_RETRIES (2),
// DISPATCH_WATCH_TIMEOUT (3600 s), DISPATCH_WATCH_INTERVAL (accepted; nothing is polled),
// DISPATCH_FORCE, DISPATCH_<AGENT>_MODEL, DISPATCH_CODEX_REASONING_EFFORT, DISPATCH_BACKEND
// (tmux or process), DISPATCH_KILL_GRACE (10 s between TERM and KILL), DISPATCH_MIN_FREE_MB (100;
// twice that is needed to start), CONFIG_FILE, STATE_DIR (./state; a workspace's shim uses
// the workspace's state/).
//
// Exit status: 0 dispatched (with --wait: done), 1 failure (refused, launch failed, max retries
// reached; with --wait: failed), 2 usage error, 124 with --wait: timed out.
package main

import "os"

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
