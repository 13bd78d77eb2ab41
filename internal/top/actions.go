package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/tmux"
)

// The actions on a row. Each goes through the library its command-line verb calls: a worker's
// through internal/swarm (swarm send, interrupt, eof, kill), a swarm loop's through
// internal/ralph/loop (ralph pause, resume, stop; swarm kill), an AIWG loop's through
// internal/ralph/aiwg (ralph pause, abort), a bead's through its supervisor's control socket
// and internal/attempt (dispatch kill).

// ErrNotLive is an action that needs a live agent, on one that ended.
var ErrNotLive = errors.New("the agent is not running")

// A host's row (swarm top --hosts) is acted on by its host's swarm (hostAct): the same
// method, run there.

// onHost refuses what is not done on another host's agent from here: attaching to its pane
// (its tmux server is the host's; the shell action opens a session there).
func onHost(r *Row) error {
	if r.Host == "" {
		return nil
	}
	return fmt.Errorf("%s runs on host %s: attach to it there (ssh to it and use swarm attach or dispatch attach)", r.Name, r.Host)
}

// onHostDo carries out a host's row's action there; ok is false for a row of this machine's.
func (m *Model) onHostDo(ctx context.Context, r *Row, q ActRequest) (ok bool, err error) {
	if r.Host == "" {
		return false, nil
	}
	_, err = m.hostAct(ctx, r, q)
	return true, err
}

// Send types text into r's agent and presses Enter, as swarm send does.
func (m *Model) Send(ctx context.Context, r *Row, text string) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActSend, Text: text}); ok {
		return err
	}
	if !r.Live {
		return ErrNotLive
	}
	if r.worker != nil && m.sw != nil {
		return m.sw.Send(ctx, r.worker, text, swarm.SendOptions{})
	}
	return m.control(r, supervise.Request{Op: supervise.OpSend, Text: text}, supervise.Request{Op: supervise.OpKeys, Keys: []string{"enter"}})
}

// Key presses a named key (interrupt, eof, escape, ...) in r's agent, as swarm interrupt and
// eof do.
func (m *Model) Key(ctx context.Context, r *Row, key string) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActKey, Key: key}); ok {
		return err
	}
	if !r.Live {
		return ErrNotLive
	}
	if r.worker != nil && m.sw != nil {
		return m.sw.Keys(ctx, r.worker, key)
	}
	return m.control(r, supervise.Request{Op: supervise.OpKeys, Keys: []string{key}})
}

func (m *Model) control(r *Row, reqs ...supervise.Request) error {
	if r.Control == "" {
		return fmt.Errorf("%s has no supervisor to ask", r.Name)
	}
	c, err := supervise.DialControl(r.Control, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, req := range reqs {
		if _, err := c.Do(req); err != nil {
			return err
		}
	}
	return nil
}

// Kill stops r's agent and records it killed, as its tool's kill does: swarm kill for a
// worker (and for a swarm loop, whose loop ends first), ralph abort for an AIWG loop, dispatch
// kill for a bead or a task's claim.
func (m *Model) Kill(ctx context.Context, r *Row) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActKill}); ok {
		return err
	}
	switch {
	case r.Kind == KindLoop && r.aiwg:
		_, err := aiwg.Workspace{Root: r.loopWS}.Abort(ctx, r.Name)
		return err
	case r.Kind == KindLoop && m.loops != nil:
		_, err := m.loops.Stop(ctx, r.Name, loop.StopOptions{})
		return err
	case r.worker != nil && m.sw != nil:
		loop.Kill(ctx, m.sw, r.Name, false, io.Discard)
		return m.sw.Stop(ctx, r.worker)
	case r.Bead != "":
		if !r.Live || r.entry == nil {
			return ErrNotLive
		}
		d := attempt.NewDir(r.StateDir)
		where := attempt.Where{Backend: r.entry.Backend}
		attempt.Stop(ctx, nil, r.entry, "", supervise.SignalKill)
		if !attempt.WaitGone(ctx, d, where, r.Bead, 15*time.Second) {
			return fmt.Errorf("%s did not stop within 15s", r.Bead)
		}
		attempt.Reconcile(ctx, d, nil, false)
		return nil
	}
	return fmt.Errorf("%s cannot be killed from here", r.Name)
}

// Pause pauses a loop after its current iteration (swarm's loops), or at once (AIWG's), as
// ralph pause does.
func (m *Model) Pause(ctx context.Context, r *Row) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActPause}); ok {
		return err
	}
	switch {
	case r.Kind != KindLoop:
		return fmt.Errorf("%s is not a loop", r.Name)
	case r.aiwg:
		_, err := aiwg.Workspace{Root: r.loopWS}.Pause(ctx, r.Name)
		return err
	case m.loops != nil:
		_, err := m.loops.Pause(ctx, r.Name)
		return err
	}
	return fmt.Errorf("no swarm directory")
}

// Resume resumes a paused swarm loop, as ralph resume does. An AIWG loop is resumed with
// `ralph resume ID`: its controller is a ralph process.
func (m *Model) Resume(ctx context.Context, r *Row) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActResume}); ok {
		return err
	}
	switch {
	case r.Kind != KindLoop:
		return fmt.Errorf("%s is not a loop", r.Name)
	case r.aiwg:
		return fmt.Errorf("resume AIWG loop %s with 'ralph resume %s' (its controller is a ralph process)", r.Name, r.Name)
	case m.loops != nil:
		ok, err := m.loops.Resume(ctx, r.Name)
		if err == nil && !ok {
			err = fmt.Errorf("loop %s is not paused", r.Name)
		}
		return err
	}
	return fmt.Errorf("no swarm directory")
}

// Stop ends a loop for good (ralph stop; an AIWG loop: ralph abort), leaving its worktree.
func (m *Model) Stop(ctx context.Context, r *Row) error {
	if ok, err := m.onHostDo(ctx, r, ActRequest{Action: ActStop}); ok {
		return err
	}
	if r.Kind != KindLoop {
		return fmt.Errorf("%s is not a loop", r.Name)
	}
	return m.Kill(ctx, r)
}

// AttachArgs is the tmux command line that attaches to r's pane as swarm attach and dispatch
// attach do (a worker's window selected first, with an exact target: a bare name
// prefix-matches another's), or an error when it has none (a process worker, a detached bead).
func (m *Model) AttachArgs(r *Row) ([]string, error) {
	if err := onHost(r); err != nil {
		return nil, err
	}
	if r.Tmux == nil || !r.Live {
		return nil, fmt.Errorf("%s has no tmux pane (its screen view and log show it)", r.Name)
	}
	tc := &tmux.Client{Socket: r.Tmux.Socket}
	if r.worker != nil && m.sw != nil {
		c, err := m.sw.Tmux(r.worker)
		if err != nil {
			return nil, err
		}
		tc = c
	}
	argv := tc.AttachArgs(r.Tmux.Session)
	if r.Tmux.Window == "" {
		return argv, nil
	}
	// tmux runs commands separated by a ";" argument one after another.
	n := len(argv) - 3 // "tmux" and the socket's flags, before "attach -t S"
	sel := append(append([]string{}, argv[:n]...), "select-window", "-t", string(tmux.WindowTarget(r.Tmux.Session, r.Tmux.Window)), ";")
	return append(sel, argv[n:]...), nil
}
