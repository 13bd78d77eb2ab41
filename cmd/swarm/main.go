// Command swarm keeps AI coding agents (Claude Code, Codex, any command) running side by side,
// each in a tmux window or as a background process, optionally in a git worktree of its own,
// and lets scripts type into them, read their screens and wait for them. It is a drop-in for
// the Python swarm tool: the same verbs, flags, messages, exit codes and $SWARM_DIR/state.json.
//
// Usage:
//
//	swarm spawn --name N [--tmux] [--session S] [--tmux-socket K] [--worktree [--branch B]
//	            [--worktree-dir D]] [--tag T]... [--env K=V]... [--cwd P] [--ready-wait
//	            [--ready-timeout S]] [--profile P] [--heartbeat DUR ...] -- CMD...
//	swarm ls [--format table|json|names] [--status running|stopped|all] [--tag T]
//	swarm status NAME          exit 0 running, 1 stopped, 2 not found
//	swarm peek [NAME] [-n N] [--all]
//	swarm send [NAME] TEXT [--no-enter] [--all] [--raw]
//	swarm interrupt [NAME] [--all]
//	swarm eof NAME
//	swarm kill [NAME] [--rm-worktree] [--force-dirty] [--all]
//	swarm wait [NAME] [--timeout S] [--all]   exits with the worker's exit code
//	swarm logs NAME [--history] [--lines N] [--follow]
//	swarm clean [NAME] [--no-rm-worktree] [--force-dirty] [--all]
//	swarm respawn NAME [--clean-first [--force-dirty]]
//	swarm attach NAME          tmux workers only
//	swarm init [--dry-run] [--file AGENTS.md|CLAUDE.md] [--force] [--with-sandbox]
//	swarm heartbeat start NAME --interval DUR [--expire DUR] [--message M] [--force]
//	swarm heartbeat stop|status|pause|resume NAME;  swarm heartbeat list|ls [--format json]
//	swarm ralph ...            the ralph tool's loops (see cmd/ralph)
//
// spawn also takes --heartbeat DUR [--heartbeat-expire DUR] [--heartbeat-message M]. A
// heartbeat types its message into the worker's agent on a schedule, only while the agent is
// idle; the worker's supervisor types it, so it ends with the worker.
//
// Agent profiles (ready, busy, waiting and dismiss screen patterns; built in: claude, codex,
// shell; more in $SWARM_AGENTS or $SWARM_DIR/agents.json) drive --ready-wait and ls'
// ACTIVITY column.
//
// Every worker runs under the toolkit's supervisor (this binary's hidden __supervise verb, in
// the worker's tmux window or detached): the agent is the supervisor's child on a terminal of
// its own, so status, ls and wait know whether it is alive and, once it ended, its exit code;
// send, peek, interrupt and eof reach it through the supervisor's control socket.
//
// Environment: SWARM_DIR (default ~/.swarm; set but empty means the current directory),
// SWARM_AGENTS (the agents config; default $SWARM_DIR/agents.json),
// TMUX_TMPDIR (where tmux keeps its sockets).
//
// Exit status: 0 ok, 1 failure, 2 usage error; status: 1 stopped, 2 not found; peek: 2 not
// found; wait: the worker's exit code (1 on timeout).
package main

import (
	"os"

	"github.com/agentfleet/fleet/internal/cli"
)

func main() {
	os.Exit(newTool().Main(os.Args, cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
