// Package swarm is swarm's workers as a library: AI coding agents (or any command) running
// side by side, each under a supervisor of its own, in a tmux window or as a background
// process, optionally in a git worktree of its own. cmd/swarm is its command line (the Python
// swarm's verbs), and ralph's loops (internal/ralph/loop) run each iteration as one of its
// workers.
//
// # A worker
//
// A worker is an entry in $SWARM_DIR/state.json (internal/worker's Registry: the Python swarm's
// format byte for byte, every change under state.lock with an atomic write) and a supervisor
// process (internal/supervise) whose child is the agent, on a terminal of its own. Its name
// (CheckName) is its tmux window, its log files' and heartbeat's names, its worktree's
// directory and default branch. Workers the Python swarm started are judged as it judged them
// (their window, or their pid), typed into through their tmux pane, stopped as it stopped them.
//
// # Its lifecycle
//
//	Open(dir, Options)        the swarm directory; Options say what a command line knows: the
//	                          agents config, the supervisor command, the agents' environment,
//	                          tmux's socket directory, where warnings go
//	Spawn(ctx, Spec)          entry written (with a journal) → worktree made → supervisor
//	                          started (Options.Supervisor, in a tmux window or detached) and
//	                          handed the agent's spec over a one-time socket → entry completed;
//	                          returns once the agent runs (ReadyWait: once it is ready)
//	Supervise(...)            what the supervisor verb runs: the agent, its screen watched (the
//	                          activity; the heartbeat's beats), a control socket, and at the end
//	                          the Recorder writes the exit code, finish time and reason into the
//	                          worker's metadata and its status "stopped"
//	Live(ctx, w)              running while its supervisor runs; a supervisor that died without
//	                          recording the end is found here and the worker closed as
//	                          supervisor-lost
//	Send, Keys, Screen        through the supervisor's control socket (a send under the
//	                          worker's send lock, Enter once the agent's screen shows the text)
//	Stop, StopAll             the agent's process group through its supervisor, the end
//	                          recorded, the status stopped
//	Release, Remove, Clean    the window gone and the name free; the entry out of state.json
//	                          (Clean: its logs and heartbeat too)
//	Respawn(ctx, w, ...)      the same worker started again from its entry (RespawnSpec)
//
// A spawn killed at any step (SIGKILL, a power cut) leaves a journal in the worker's metadata
// ("spawning"): the next Load finishes the worker if its supervisor runs, or undoes what the
// journal names (window, supervisor entry, worktree, the branch the spawn created, the entry).
// A spawn that fails undoes the same at once and returns an *UndoneError.
//
// # Heartbeats
//
// A heartbeat ($SWARM_DIR/heartbeats/<worker>.json, the Python swarm's format, under
// heartbeat.lock) is typed by the worker's own supervisor, only into an idle agent, and ends
// with the worker. Heartbeat, UpdateHeartbeat, Heartbeats, SettleHeartbeats and StopHeartbeat
// edit the file; nothing is ever signalled.
//
// # The files
//
//	$SWARM_DIR/state.json, state.lock          the workers (internal/worker)
//	$SWARM_DIR/logs/<name>.stdout.log, .stderr.log   a process worker's output (the terminal's:
//	                                           stderr.log stays empty)
//	$SWARM_DIR/heartbeats/<name>.json, heartbeat.lock   heartbeats
//	$SWARM_DIR/agents.json                     the agents config, unless $SWARM_AGENTS
//	$SWARM_DIR/supervise/                      the supervisors' registry, control sockets,
//	                                           locks (a name's, and send/<name>.lock), a tmux
//	                                           worker's output log, one-time handoff sockets
//
// The library reads no environment variable and no os.Args, holds no package-level state that
// anyone sets, and never builds or parses a command line but its supervisor's, whose arguments
// (--swarm-dir DIR --handoff PATH NAME) it appends to Options.Supervisor and Supervise takes.
package swarm
