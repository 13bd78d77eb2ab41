// Package top is the model behind `swarm top`: one row per live or recently ended agent of
// every kind the toolkit runs, read from the supervisors' registries and the tools' state
// files, and the actions a person takes on one (send a line, interrupt, end of input, kill,
// pause, resume and stop a loop), each through the library the command-line verb calls.
// Package top/ui is the full-screen terminal UI over it; cmd/swarm's top verb opens both.
//
// # Where the agents are found
//
//	Sources.SwarmDir   ($SWARM_DIR, else ~/.swarm) swarm's workers (state.json, their
//	                   supervisors in supervise/) → kind "worker"; swarm's ralph loops
//	                   (ralph/<name>/state.json, each iteration a worker of the loop's name)
//	                   → kind "loop", source "swarm", the worker folded into the loop's row
//	Sources.StateDir   (STATE_DIR, else ./state) dispatched beads: the registered supervisors
//	                   (supervisors/), their run records, and results that ended within Recent
//	                   → kind "dispatch"
//	Sources.Workspace  (the git top of the current directory, as ralph finds it) AIWG's loops
//	                   (.aiwg/ralph/loops/<id>/state.json; the current iteration's bead in the
//	                   loop's state_dir) → kind "loop", source "aiwg"; the task queues of
//	                   ralph queue (.claude/ralph/task-queue-<plan>.json; each claim is bead
//	                   <plan>-<task> in StateDir) → kind "task"
//
// A bead that belongs to an AIWG loop or a queue's task is shown in that row, not again as a
// dispatch. A directory that does not exist holds no agents (top never creates one).
//
// # What a row says
//
// Status is each source's own word (running, stopped, done, failed, paused, claimed, ...).
// Activity is read from the supervisor's screen model: a swarm worker's supervisor records it
// (busy, waiting, idle since); for the others top reads the screen over the control socket at
// each refresh and judges it with the generic agent profile's patterns as the swarm's Watch
// does: waiting when a waiting pattern shows, busy when a busy pattern shows or the screen
// changed in the last 3 s, else idle since the last change (the log's last write the first
// time). Screens are read in the background, one read in flight per agent, each bounded by the
// Model's Timeout: Snapshot (the UI) never waits for them and gives each live row what its
// screen said at its last answer, Merge takes in those that answered since (Answers tells
// when), Refresh (--once) waits for them up to the Timeout; a row whose screen has not answered
// within the Timeout says so in ScreenError and keeps what it said last. The last line is the screen's last line with text. Cost is the agent's own report
// (an AIWG loop's total, a queue task's, a dispatched bead's log read as its profile reads
// usage); "-" where the agent reports none (an interactive worker).
//
// Refresh is cheap enough to run every second with hundreds of agents, and only reads: a
// record (run, result, supervisor entry, AIWG loop state) is parsed again only when its file's
// identity (device, inode, size, modification and change times) changed, a log's usage only
// when the log changed, a bead's registry entry is read only when the bead is registered, and
// screens are asked only of live supervisors, several at once. The first refresh of a Model
// closes the records of beads whose supervisors died, as dispatch ps does (so `swarm top
// --once` says what dispatch ps says); later ones take no lock and write nothing: a bead whose
// supervisor dies while top shows it is not live, its EXIT "? supervisor-lost", until a
// dispatch verb (ps, status, kill, a new dispatch) closes its record. A swarm worker whose
// supervisor died is closed by swarm's own liveness check (a write once, as swarm ls does).
package top
