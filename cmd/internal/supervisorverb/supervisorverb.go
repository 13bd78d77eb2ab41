// Package supervisorverb is the hidden verb (supervise.SuperviseVerb) under which every binary
// runs its supervisors, defined once: each binary mounts Command where its starters put the
// verb (dispatch and swarm at the top, swarm run, ralph queue and ralph start under theirs).
package supervisorverb

import (
	"context"
	"encoding/json"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"golang.org/x/term"
)

// Kind is which supervisor the verb runs.
type Kind int

const (
	// Attempt is an attempt's supervisor (attempt.Supervise), started by attempt.Launch:
	// --state-dir DIR --handoff PATH BEAD.
	Attempt Kind = iota
	// Worker is a swarm worker's supervisor (swarm.Supervise), started by swarm's Spawn:
	// --swarm-dir DIR --handoff PATH NAME.
	Worker
)

// Command is the hidden verb that runs a supervisor of kind k. usage is its line in the
// verb's help; refusal is what it says to a command line no starter writes (a format with one
// %s, the verb), as "%s is started by dispatch, not by hand". The supervisor catches its own
// signals; its keyboard is the terminal on stdin, if any (a tmux pane).
func Command(k Kind, usage, refusal string) *cli.Command {
	return &cli.Command{
		Name: supervise.SuperviseVerb, Usage: usage, Hidden: true, OwnSignals: true,
		Raw: func(ctx context.Context, s cli.Streams, args []string) error {
			if k == Worker && len(args) > 0 && args[0] == swarm.RunHookFlag {
				return runHook(ctx, args[1:], refusal)
			}
			a, err := cli.ParseSupervisorArgs(args)
			if err != nil || !complete(k, a) {
				return cli.Usagef(refusal, supervise.SuperviseVerb)
			}
			input := terminal(s.In)
			if k == Worker {
				return swarm.Supervise(ctx, a.SwarmDir, a.Handoff, a.Name, s.Out, input, s.Err)
			}
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, s.Out, input)
		},
	}
}

// complete tells whether a has what a supervisor of kind k needs from its starter.
func complete(k Kind, a cli.SupervisorArgs) bool {
	if k == Worker {
		return a.SwarmDir != "" && a.Handoff != ""
	}
	return a.StateDir != "" && a.Handoff != ""
}

// terminal is in when it is a terminal, else nil: a detached supervisor has no keyboard.
func terminal(in io.Reader) *os.File {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// runHook runs one event of a worker's --on-event hook (swarm's events.go), started detached by
// the worker's supervisor: EVENT-JSON -- CMD.... The hook is bounded, and what it leaves
// behind killed, by internal/ralph/hook; its failure goes nowhere (no one waits for this
// process): a hook changes nothing of the worker.
func runHook(ctx context.Context, args []string, refusal string) error {
	var e hook.Event
	if len(args) < 3 || args[1] != "--" || json.Unmarshal([]byte(args[0]), &e) != nil {
		return cli.Usagef(refusal, supervise.SuperviseVerb)
	}
	h := &hook.Hook{Argv: args[2:]}
	return h.Run(ctx, e)
}
