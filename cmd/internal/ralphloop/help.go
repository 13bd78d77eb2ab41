package ralphloop

import (
	"fmt"
	"io"
	"strings"
)

// The manual of the loops, for people and for the agents that run them: what the Python
// swarm's ralph said in its help (the workflow, how to write a prompt, a quick reference,
// examples), said again in our words and true of our verbs. TOOL is the program as typed
// ("ralph", "swarm ralph"), replaced by Config.usageText.

// guide is the how-to of `TOOL --help`, after the list of verbs.
const guide = `A loop runs one agent on one prompt file again and again. Each iteration starts the agent as
a swarm worker in tmux, types the prompt into it and watches it, until the agent exits, its
screen stays unchanged for --inactivity-timeout seconds, or it prints the --done-pattern; the
next iteration is a fresh agent with a fresh context. What carries over is the repository and
its task list, so an agent works through a long list across many context windows, unattended.

How to use it:
  1. Write the work down as a task list in the repository (IMPLEMENTATION_PLAN.md, say).
  2. Write the prompt: 'TOOL init' writes a starter PROMPT.md to adapt.
  3. Start the loop, in the git repository (each loop works in a worktree of its own):
       TOOL spawn --name dev --prompt-file PROMPT.md --max-iterations 50 -- claude
     (an unattended claude usually needs --dangerously-skip-permissions: see 'TOOL spawn --help')

Each iteration the agent reads the prompt, takes the next open task, does it, commits, and
marks it done in the list. The loop ends after --max-iterations, when the done pattern shows,
after 5 failed iterations in a row, or when you stop it.

Prompt Design Principles (writing the prompt):
  - Keep it short (20 lines at most): every line of it is context the work cannot use.
  - ONE task per iteration, so that no iteration ends with a task half done.
  - Have the agent read the code as it is before changing it, never assume what is there.
  - Have it commit (and push) before the iteration ends: the next one starts from the repository.
  - Have it update the task list, so that the next iteration knows what is left.
  The file is read again at each iteration: edit it to steer a running loop.

Quick Reference:
QUICKREF

Background on the Ralph Wiggum pattern: https://github.com/ghuntley/how-to-ralph-wiggum
`

const spawnDescription = `Starts a loop: its state, the first iteration's worker in tmux (in a git worktree
<repo>-worktrees/NAME unless --no-worktree), the prompt typed into it once the agent is ready,
and the loop's monitor in the background; spawn then returns. --foreground runs the monitor
here instead, until the loop ends; --no-run starts none ('TOOL run NAME' does, later). The
command after -- is the agent, started again for each iteration.`

const spawnEpilog = `Examples:
  # A loop in the background (spawn returns at once)
  TOOL spawn --name dev --prompt-file PROMPT.md --max-iterations 50 -- claude --dangerously-skip-permissions

  # The same, the monitor running here until the loop ends
  TOOL spawn --name dev --prompt-file PROMPT.md --max-iterations 50 --foreground \
    -- claude --dangerously-skip-permissions

  # In the current directory rather than a worktree of its own
  TOOL spawn --name dev --prompt-file PROMPT.md --no-worktree -- claude --dangerously-skip-permissions

  # Start over: end the loop and worker called dev first (a worktree holding work is kept and
  # the new loop runs in it)
  TOOL spawn --name dev --replace --prompt-file PROMPT.md -- claude --dangerously-skip-permissions

  # Forget an earlier loop's state (iteration count, log) of that name before starting
  TOOL spawn --name dev --clean-state --prompt-file PROMPT.md -- claude --dangerously-skip-permissions

  # End the loop as soon as the agent prints the pattern (--no-check-done-continuous: only
  # when it exits)
  TOOL spawn --name dev --prompt-file PROMPT.md --max-iterations 100 \
    --done-pattern 'All tasks complete' -- claude --dangerously-skip-permissions

  # Start the worker now and the loop later
  TOOL spawn --name dev --prompt-file PROMPT.md --no-run -- claude --dangerously-skip-permissions
  TOOL run dev

  # A repository whose hooks or tests keep the screen still for minutes
  TOOL spawn --name dev --prompt-file PROMPT.md --inactivity-timeout 300 -- claude --dangerously-skip-permissions

Usage and rate limits:
  When the agent says it hit a usage limit, the loop waits until the time the message names
  (30 minutes when it names none), then types 'continue' into it, or runs the same iteration
  again if the agent exited; no failure is counted. A heartbeat is a further nudge for long
  unattended runs: it types its message into each iteration's agent when the agent is idle.
  # every 4 hours, for 24 hours
  TOOL spawn --name dev --prompt-file PROMPT.md --max-iterations 100 \
    --heartbeat 4h --heartbeat-expire 24h -- claude --dangerously-skip-permissions
  # with a message of your own
  TOOL spawn --name dev --prompt-file PROMPT.md --heartbeat 4h \
    --heartbeat-message 'go on from where you stopped' -- claude --dangerously-skip-permissions

Rails:
  # End the loop once its agent reported $5 in all, at most 20 iterations an hour, and run a
  # script of yours on its start, end, limits and failure (one JSON event on its stdin, no
  # shell; docs/ralph.md has ntfy and Slack examples)
  TOOL spawn --name dev --prompt-file PROMPT.md --budget 5 --max-calls-per-hour 20 \
    --on-event ~/bin/notify-loop -- claude --dangerously-skip-permissions
  # A commit per iteration (trailers Ralph-Loop, Ralph-Iteration); later, all of it undone
  TOOL spawn --name dev --prompt-file PROMPT.md --commit-each -- claude --dangerously-skip-permissions
  TOOL abort dev --revert

Intervention:
  swarm send dev "wrap up and commit what you have"
  swarm send dev "drop that approach; use X instead"
  Or edit the prompt file: the next iteration reads it again.

Monitoring:
  TOOL status dev        iteration i/N, average time per iteration, time left
  TOOL logs dev          one line per iteration event (--live to keep watching)
  swarm peek dev         the agent's screen now
  swarm attach dev       the agent live (detach: Ctrl-B D)
  swarm logs dev --follow

Safety:
  An unattended agent runs without its permission prompts (claude
  --dangerously-skip-permissions) and can do whatever your user can. For overnight loops,
  consider a sandbox: 'swarm init --with-sandbox' writes a Docker one (sandbox.sh).

See also: TOOL status --help, TOOL logs --help, TOOL pause --help, TOOL run --help.`

const initEpilog = `Writes PROMPT.md in the current directory: a short starting prompt for a loop (take the most
important open task, check the code before assuming, test, commit, update the plan). It is
small on purpose; customize it for your project:
  - the command that runs its tests,
  - the files the agent should read first,
  - how to deploy, if that is part of a task.
An existing PROMPT.md is refused (an error) unless --force. 'TOOL template' prints the same
text, to pipe it elsewhere.

Examples:
  TOOL init && $EDITOR PROMPT.md
  TOOL init --force          # back to the starter text
  TOOL init; $EDITOR PROMPT.md; TOOL spawn --name dev --prompt-file PROMPT.md -- claude

See also: TOOL template --help, TOOL spawn --help.`

const runEpilog = `Runs the loop's monitor (the monitoring loop) in this terminal until the loop ends (or it
is paused or stopped): what 'TOOL spawn' starts in the background, or runs here with
--foreground. Use it after 'TOOL spawn --no-run'. One monitor runs per loop: a second is
refused. SIGTERM pauses the loop (the iteration in flight finishes; 'TOOL resume NAME' goes
on); Ctrl-C (SIGINT) or a closed terminal stops watching at once, the agent left running
('TOOL resume NAME' starts a monitor that takes it over). Exit status 1 when the loop ended
failed.

Examples:
  TOOL spawn --name dev --prompt-file PROMPT.md --no-run -- claude --dangerously-skip-permissions
  TOOL run dev

See also: TOOL spawn --help, TOOL status --help.`

const statusEpilog = `The loop's progress, not the worker's: for whether the agent's process runs, see
'swarm status NAME'. It shows:
  - the loop's status (running, paused, stopped, failed), "possibly stuck" when the screen
    has not changed for a minute, with the agent's last lines;
  - the iteration i/N, with the average time per iteration and, while running, the time left;
  - when it started, when the current iteration started, failures in a row and in all;
  - the inactivity timeout and the last screen change, the done pattern, a usage limit waited out;
  - why it ended (done_pattern, max_iterations, killed, failed, ...), or monitor_disconnected
    with the worker's status when its monitor died while the worker went on.

Examples:
  TOOL status dev
  TOOL status dev --json     # the loop's state file, with worker_status

See also: TOOL logs --help, TOOL pause --help, swarm status --help.`

// quickRef is the guide's quick reference: a command as typed (TOOL replaced), what it does.
var quickRef = [][2]string{
	{`TOOL init`, "write a starter PROMPT.md"},
	{`TOOL spawn ... -- claude`, "start a loop (its monitor runs in the background)"},
	{`TOOL status NAME`, "where it is: iteration i/N, average time, time left"},
	{`TOOL logs NAME`, "the iterations so far (--live to keep watching)"},
	{`TOOL pause NAME`, "no new iteration after the current one"},
	{`TOOL resume NAME`, "go on (and restart a monitor that died)"},
	{`TOOL list`, "every loop"},
	{`TOOL stop NAME`, "end the loop and stop its worker"},
	{`swarm send NAME "message"`, "say something to the agent during an iteration"},
	{`swarm attach NAME`, "watch the agent live (detach: Ctrl-B D)"},
}

// Guide writes the loops' how-to (the workflow, how to write a prompt, a quick reference) for
// tool, for a help that lists the loop verbs among others (`ralph --help`).
func Guide(w io.Writer, tool string) {
	width := 0
	for _, r := range quickRef {
		width = max(width, len(strings.ReplaceAll(r[0], "TOOL", tool)))
	}
	var ref strings.Builder
	for _, r := range quickRef {
		fmt.Fprintf(&ref, "  %-*s  %s\n", width, strings.ReplaceAll(r[0], "TOOL", tool), r[1])
	}
	fmt.Fprint(w, strings.ReplaceAll(strings.Replace(guide, "QUICKREF\n", ref.String(), 1), "TOOL", tool))
}
