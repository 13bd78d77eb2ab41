package swarm

import (
	"encoding/json"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// Events of a worker (swarm spawn --on-event CMD): its supervisor runs CMD, as ralph's loops run
// theirs (internal/ralph/hook: one JSON object a line on its stdin, no shell, its own process
// group, bounded), when the agent starts waiting for input and when it exits.
//
// Each event is run by a process of its own, started detached (RunHookFlag of the supervisor's
// own command): the supervisor waits for none, so a hook that hangs or fails holds neither the
// agent, its supervisor, its records, swarm wait (which waits for the supervisor to be gone)
// nor the next event; the runner kills it at its bound, with whatever it left behind.

// RunHookFlag, after the supervisor's command (Options.Supervisor), runs one event's hook:
// SUPERVISOR --run-hook EVENT-JSON -- CMD... (cmd/internal/supervisorverb).
const RunHookFlag = "--run-hook"

// metaOnEvent keeps a worker's --on-event command line in its metadata, for respawn.
const metaOnEvent = "on_event"

// Event is what a worker's hook reads on its stdin: one JSON object, the fields of ralph's
// events (internal/ralph/hook.Event, which the runner reads it as) that a worker has.
type Event struct {
	Kind     string `json:"kind"`  // KindWorker
	Event    string `json:"event"` // EventWaiting or EventExit
	Worker   string `json:"worker"`
	ExitCode *int   `json:"exit_code,omitempty"` // the agent's (EventExit; absent when not known)
	Status   string `json:"status"`              // running, stopped
	Reason   string `json:"reason,omitempty"`    // why it stopped (agent-exit-3, killed, ...)
	Log      string `json:"log,omitempty"`       // the agent's output log
	Time     string `json:"time"`                // RFC 3339, UTC
}

// A worker's events: its kind, and the transitions.
const (
	KindWorker   = "worker"
	EventWaiting = "waiting"
	EventExit    = "exit"
)

// eventHook sends a worker's events to its hook.
type eventHook struct {
	argv    []string // the hook's command line
	runner  []string // the supervisor's command, which runs one event with RunHookFlag
	dir     string   // the agent's directory, the hook's too
	worker  string
	log     string
	waiting bool // the agent waits for input, as last told
}

// newEventHook is the hook of the spec handed to a supervisor; nil when it has none.
func newEventHook(hs *handoffSpec) *eventHook {
	if len(hs.OnEvent) == 0 || len(hs.HookRunner) == 0 {
		return nil
	}
	return &eventHook{argv: hs.OnEvent, runner: hs.HookRunner, dir: hs.Attempt.Dir, worker: hs.Worker, log: hs.Attempt.LogPath}
}

// input is told whether the agent waits for input now: the event when it starts to.
func (h *eventHook) input(waiting bool) {
	if h == nil || waiting == h.waiting {
		return
	}
	h.waiting = waiting
	if waiting {
		h.send(Event{Event: EventWaiting, Status: worker.StatusRunning})
	}
}

// exited is the event of the agent's end.
func (h *eventHook) exited(out supervise.Outcome) {
	if h == nil {
		return
	}
	e := Event{Event: EventExit, Status: worker.StatusStopped, Reason: out.Reason}
	if !out.UnknownExit {
		code := int(out.ExitCode)
		e.ExitCode = &code
	}
	h.send(e)
}

// send starts the runner of e, and does not wait for it (proc.StartDetached reaps it).
func (h *eventHook) send(e Event) {
	e.Kind, e.Worker, e.Log = KindWorker, h.worker, h.log
	e.Time = time.Now().UTC().Format(time.RFC3339)
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	argv := append(append(append([]string{}, h.runner...), RunHookFlag, string(b), "--"), h.argv...)
	proc.StartDetached(argv, proc.Detached{Dir: h.dir})
}
