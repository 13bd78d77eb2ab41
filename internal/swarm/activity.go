package swarm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// Readiness and activity: each worker is watched through an agent profile's screen patterns
// (internal/agent: ready, busy, waiting, dismiss). The supervisor's Watch classifies the screen
// and the recorder writes the activity into the worker's metadata (worker.MetaActivity...), so
// ls reads it from state.json without asking any supervisor. spawn --ready-wait reads the
// screen itself, as the Python swarm did, so that it can answer a start-up screen with Enter.

// agentsConfig is the agents config swarm reads profiles from: Options.Agents
// (agent.SwarmConfig: $SWARM_AGENTS, else <dir>/agents.json, the format of dispatch's
// config/agents.json); nil when the default file is not there, and the built-in claude, codex
// and shell profiles apply. A broken file, or one $SWARM_AGENTS names that is not there, is an
// error.
func (s *Swarm) agentsConfig() (*agent.Config, error) {
	f := s.opts.Agents
	if f.Path == "" {
		f = agent.SwarmConfig(func(string) (string, bool) { return "", false }, s.dir.Root)
	}
	cfg, err := f.Load()
	if errors.Is(err, agent.ErrNoConfig) && f.Origin == agent.FromDefault {
		return nil, nil
	}
	return cfg, err
}

// Profile is the agent profile that watches a worker running cmd: the one called name (spawn
// --profile) when given, else the config's entry whose command is cmd's program by base name,
// else the generic "shell". A pattern that does not compile is an error naming it.
func (s *Swarm) Profile(name string, cmd []string) (*agent.Profile, error) {
	cfg, err := s.agentsConfig()
	if err != nil {
		return nil, err
	}
	return agent.ScreenProfile(cfg, name, cmd)
}

// How the activity is judged. busyQuiet: a screen that changed this recently is busy even
// without a busy pattern (output is streaming). activityTail: busy and waiting patterns are
// looked for in the last lines with text only, where an agent's status line and questions
// are, so that an old question scrolled up does not count.
const (
	busyQuiet     = 3 * time.Second
	activityTail  = 15
	watchEvery    = time.Second
	screenLookAll = 500 // more than any screen's rows: the whole screen
)

// tail returns the last n lines that are not blank.
func tail(lines []string, n int) []string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
		}
	}
	return out
}

// classify says what the screen shows: waiting, busy or idle.
func classify(m *agent.Matcher, lines []string, sinceChange time.Duration) string {
	last := tail(lines, activityTail)
	switch {
	case m.Waiting(last):
		return worker.ActivityWaiting
	case m.Busy(last) || sinceChange < busyQuiet:
		return worker.ActivityBusy
	}
	return worker.ActivityIdle
}

// activityWatch is the supervisor's Watch for a worker: it notes "<activity>" when the
// activity changes, with " ready" added the first time the ready pattern shows, and lets the
// heartbeat's beater (nil: none) look. Patterns that do not compile (spawn compiled them
// already) watch nothing.
func activityWatch(p agent.Patterns, b *beater) (supervise.Watch, time.Duration) {
	m, err := p.Compile()
	if err != nil {
		return nil, 0
	}
	var last string
	ready, input := false, false
	return func(s *supervise.WatchState) supervise.Verdict {
		lines := s.Screen(screenLookAll)
		state := classify(m, lines, s.SinceChange)
		b.look(state, lines, time.Now())
		becameReady := !ready && m.Ready(lines)
		if state == last && !becameReady && s.WaitingInput == input {
			return supervise.Verdict{}
		}
		last, input = state, s.WaitingInput
		note := state
		if becameReady {
			ready = true
			note += " " + noteReady
		}
		if input {
			note += " " + noteInput
		}
		return supervise.Verdict{Note: note}
	}, watchEvery
}

// A Watch's note is the activity, then "ready" the first time the ready pattern shows, then
// "input" while the agent waits for input (supervise.WatchState.WaitingInput).
const (
	noteReady = "ready"
	noteInput = "input"
)

// Annotate records a Watch's note ("busy", "idle ready", "idle input", ...) in the worker's
// metadata.
func (r *Recorder) Annotate(ctx context.Context, a *supervise.Attempt, note string) {
	f := strings.Fields(note)
	if len(f) == 0 {
		return
	}
	ready, input := slices.Contains(f[1:], noteReady), slices.Contains(f[1:], noteInput)
	r.events.input(input)
	now := time.Now()
	r.update(ctx, a.Name, func(w *worker.Worker) {
		w.SetActivity(f[0], ready, now)
		w.SetWaitingInput(input, now)
	})
}

// WaitReady waits until the worker's screen shows the ready pattern of p, as the Python
// swarm's --ready-wait did: every 0.1 s (it polled every 0.5 s) the screen is read; a start-up
// screen (dismiss pattern) is answered with Enter. At the timeout, or when the worker stopped,
// it warns and returns: spawn still succeeds, as in the Python swarm.
func (s *Swarm) WaitReady(ctx context.Context, name string, p agent.Patterns, timeout time.Duration) {
	m, err := p.Compile()
	if err != nil {
		s.warnf("agent '%s': %v", name, err)
		return
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := s.reg.Load()
		if err != nil {
			s.warnf("%v", err)
			return
		}
		w := st.Get(name)
		if w == nil || !s.Live(ctx, w).Running {
			s.warnf("agent '%s' stopped before it became ready", name)
			return
		}
		pause := 100 * time.Millisecond
		if text, err := s.Screen(ctx, w, screenLookAll); err == nil {
			lines := strings.Split(text, "\n")
			switch {
			case m.Dismiss(lines):
				s.Keys(ctx, w, "enter")
				pause = 500 * time.Millisecond
			case m.Ready(lines):
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
	s.warnf("agent '%s' did not become ready within %ds", name, int(timeout/time.Second))
}
