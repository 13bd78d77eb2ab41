package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/supervise"
)

// Supervise runs the supervisor of the worker name in the swarm directory dir, from the spec
// Spawn offers on the handoff socket: what the hidden verb of Options.Supervisor runs, with the
// arguments Spawn gave it (--swarm-dir dir --handoff handoff name). It starts the agent as its
// child on a terminal of its own, relays it to console (the tmux pane; its keys come from
// input, nil for none), serves the control socket, watches the screen (the activity, the
// heartbeat's beats) and records the end through the Recorder; it returns once the agent
// ended and the end is recorded. It catches SIGINT, SIGTERM and SIGHUP itself: a stop.
// Warnings go to warnings (nil: none).
func Supervise(ctx context.Context, dir, handoff, name string, console io.Writer, input *os.File, warnings io.Writer) error {
	sigs := supervise.CatchSignals() // before the starter lets go: a stop from then on counts
	b, err := supervise.TakeHandoff(handoff)
	if err != nil {
		return err
	}
	var hs handoffSpec
	if err := json.Unmarshal(b, &hs); err != nil {
		return fmt.Errorf("the supervisor's spec: %w", err)
	}
	if hs.Worker != name || hs.Attempt.Name != name {
		return fmt.Errorf("the supervisor's spec is for %q, not %q", hs.Worker, name)
	}
	s, err := Open(dir, Options{Warnings: warnings})
	if err != nil {
		return err
	}
	// The heartbeat is beaten from the Watch; the Python swarm's SIGTERM to its monitor_pid
	// (this process) is no stop of the worker.
	beats := newBeater(s, name, hs.Started)
	hs.Attempt.Watch, hs.Attempt.WatchEvery = activityWatch(hs.Screen, beats)
	filtered := make(chan os.Signal, cap(sigs))
	go beats.filterSignals(sigs, filtered)
	if f, ok := console.(*os.File); ok {
		console = supervise.ConsoleOf(f)
	}
	sup := &supervise.Supervisor{Layout: s.layout, Tool: supervisorTool, Name: name, Backend: hs.Backend, Socket: hs.Socket,
		Session: hs.Session, Console: console, Input: input, Once: true, Signals: filtered}
	if err := sup.Open(ctx); err != nil {
		return err
	}
	defer sup.Close()
	if err := s.stillWanted(name, hs.Started); err != nil {
		return err
	}
	events := newEventHook(&hs)
	out := sup.Run(ctx, &hs.Attempt, &Recorder{Swarm: s, Incarnation: hs.Started, PID: os.Getpid(), events: events})
	events.exited(out) // once recorded: the hook hears of an end ls already shows
	return nil
}
