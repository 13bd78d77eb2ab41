package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// DefaultOrchestrator is the relay agent dispatch.sh reported to
// (DISPATCH_RELAY_ORCHESTRATOR_AGENT).
const DefaultOrchestrator = "athena"

// HeartbeatEvery is how often an agent's relay heartbeat is sent, as dispatch.sh's runner did.
const HeartbeatEvery = time.Minute

// Relay is dispatch.sh's relay integration: the relay binary and the orchestrator it reports
// to. Its commands' output is discarded and their failures change nothing, as in dispatch.sh;
// a failure is reported on console.
type Relay struct {
	Bin          string `json:"bin"`
	Orchestrator string `json:"orchestrator"`
}

// Orchestrator reads DISPATCH_RELAY_ORCHESTRATOR_AGENT (default DefaultOrchestrator).
func Orchestrator(getenv func(string) string) string {
	if v := getenv("DISPATCH_RELAY_ORCHESTRATOR_AGENT"); v != "" {
		return v
	}
	return DefaultOrchestrator
}

func (r *Relay) run(ctx context.Context, env []string, console io.Writer, args ...string) {
	c := Command{Path: r.Bin, Args: args, Env: env, Timeout: RelayTimeout}
	code, err := c.Run(ctx)
	if console == nil {
		return
	}
	switch {
	case err != nil:
		fmt.Fprintf(console, "supervisor: relay %s: %v\r\n", args[0], err)
	case code != 0:
		fmt.Fprintf(console, "supervisor: relay %s exited %d\r\n", args[0], code)
	}
}

// send is dispatch.sh's relay_send_message: relay send TO BODY --agent FROM --priority P
// [--thread T] [--tag TAGS].
func (r *Relay) send(ctx context.Context, env []string, console io.Writer, to, body, from, thread, priority, tags string) {
	args := []string{"send", to, body, "--agent", from, "--priority", priority}
	if thread != "" {
		args = append(args, "--thread", thread)
	}
	if tags != "" {
		args = append(args, "--tag", tags)
	}
	r.run(ctx, env, console, args...)
}

// Dispatch is the event dispatch.sh sent when an agent was started.
type Dispatch struct {
	Type      string `json:"type"` // "dispatch"
	Bead      string `json:"bead"`
	Session   string `json:"session"`
	Repo      string `json:"repo"`
	Agent     string `json:"agent"`
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`  // its first 200 characters
	Attempt   string `json:"attempt"` // "N/MAX"
	Timestamp string `json:"timestamp"`
}

// DispatchOf is the dispatch event of a running run record.
func DispatchOf(run *record.Run, now time.Time) Dispatch {
	return Dispatch{Type: "dispatch", Bead: run.Bead, Session: run.SessionName, Repo: run.Repo, Agent: run.Agent,
		Model: run.Model, Prompt: run.Prompt, Attempt: fmt.Sprintf("%d/%d", run.Attempt, run.MaxRetries),
		Timestamp: record.FormatTime(now)}
}

// Dispatched sends the dispatch event to the agent's session and to the orchestrator, as
// dispatch.sh did once the session was started.
func (r *Relay) Dispatched(ctx context.Context, ev Dispatch, env []string, console io.Writer) {
	payload := compact(ev)
	r.send(ctx, env, console, ev.Session, payload, r.Orchestrator, ev.Bead, "high", "dispatch,relay")
	if r.Orchestrator != ev.Session {
		r.send(ctx, env, console, r.Orchestrator, payload, r.Orchestrator, ev.Bead, "high", "dispatch,relay")
	}
}

// Register registers the agent's session with the relay and keeps its heartbeat every
// HeartbeatEvery until the returned stop is called, as dispatch.sh's runner did around the
// agent. It returns at once: the relay is never waited for before the agent runs.
func (r *Relay) Register(session, agent, model, bead string, env []string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	task := "bead " + bead + " running"
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// No console: the heartbeat runs while the agent owns the screen, and dispatch.sh
		// discarded all of it.
		r.run(ctx, env, nil, "register", session, "--program", agent, "--model", model, "--task", task, "--bead", bead)
		tick := time.NewTicker(HeartbeatEvery)
		defer tick.Stop()
		for {
			r.run(ctx, env, nil, "heartbeat", "--agent", session, "--task", task)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// Completion is the event dispatch.sh's runner sent when the agent ended.
type Completion struct {
	Type       string `json:"type"` // "completion"
	Bead       string `json:"bead"`
	Session    string `json:"session"`
	Agent      string `json:"agent"`
	Model      string `json:"model"`
	Repo       string `json:"repo"`
	Status     string `json:"status"` // done or failed
	ExitCode   int64  `json:"exit_code"`
	FinishedAt string `json:"finished_at"`
}

// CompletionOf is the completion event of an agent that ended with exit code at finished.
func CompletionOf(run *record.Run, exitCode int64, finished time.Time) Completion {
	status := record.StatusFailed
	if exitCode == 0 {
		status = record.StatusDone
	}
	return Completion{Type: "completion", Bead: run.Bead, Session: run.SessionName, Agent: run.Agent,
		Model: run.Model, Repo: run.Repo, Status: status, ExitCode: exitCode, FinishedAt: record.FormatTime(finished)}
}

// Completed is the relay's part of an agent's end, in dispatch.sh's order: the runner released
// the session's claims and sent the completion event to the orchestrator; the watcher then read
// the orchestrator's messages from the session in the bead's thread, marking them read.
func (r *Relay) Completed(ctx context.Context, c Completion, env []string, console io.Writer) {
	r.run(ctx, env, console, "release", "--all", "--agent", c.Session)
	r.run(ctx, env, console, "send", r.Orchestrator, compact(c), "--agent", c.Session, "--thread", c.Bead,
		"--priority", "high", "--tag", "completion,dispatch")
	r.run(ctx, env, console, "read", "--agent", r.Orchestrator, "--from", c.Session, "--thread", c.Bead,
		"--last", "20", "--mark-read", "--json")
}

// Wake sends the wake message to the orchestrator, from itself, as dispatch.sh did.
func (r *Relay) Wake(ctx context.Context, bead, msg string, env []string, console io.Writer) {
	r.send(ctx, env, console, r.Orchestrator, msg, r.Orchestrator, bead, "high", "wake,dispatch")
}

// compact is v as jq -c prints it: one line, "<>&" as they are.
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // the events are plain structs of strings and numbers: it cannot fail
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}
