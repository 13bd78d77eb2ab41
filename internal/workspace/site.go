package workspace

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/record"
)

// Site is what surrounds a launch as dispatch.sh had it: the workspace a shim named (its
// pre-launch scripts and completion hooks), the relay and Truthsayer, read once from the
// caller's settings. A launch asks it for each hook at its moment (BeforeLaunch, Hooks,
// Dispatched, LaunchFailed, Refused); the supervisor runs the rest (attempt.Recorder). The
// zero Site has none of them, and runs nothing.
type Site struct {
	// Root is the workspace (the directory FLEET_WORKSPACE names); "" for none.
	Root string
	// ConfigPath is the agents config, whose "workspace" object closes the wake message; ""
	// for the built-in agents.
	ConfigPath string
	// Relay is the relay to tell, nil when it is off or its binary is not there.
	Relay *Relay
	// TruthsayerBin is Truthsayer's binary, started on the agent's directory when it is there.
	TruthsayerBin string
	// EnforcePRDLint runs the PRD-lint gate (EnforcePRDLint).
	EnforcePRDLint bool
	// StateDir is where Truthsayer's logs are kept (TruthsayerLog).
	StateDir string
	// Env is the hooks' environment: the caller's, as dispatch.sh's watcher ran them.
	Env []string
	// Tool names the caller at the head of its warnings ("dispatch: warning: ...").
	Tool string
}

// BeforeLaunch runs the workspace's pre-launch scripts (lint, preflight, the PRD-lint gate;
// Workspace.BeforeLaunch) with their output on stdout and stderr. A refusal is a *Refusal,
// whose Code the caller exits with, as under dispatch.sh's set -e.
func (s *Site) BeforeLaunch(ctx context.Context, agentName, repo string, stdout, stderr io.Writer) error {
	ws, err := Open(s.Root)
	if err != nil {
		return fmt.Errorf("%s: %w", agent.WorkspaceEnv, err) // where Root came from
	}
	return ws.BeforeLaunch(ctx, Launch{Agent: agentName, Repo: repo, EnforcePRDLint: s.EnforcePRDLint,
		Env: s.Env, Stdout: stdout, Stderr: stderr})
}

// Hooks are the hooks of an attempt about to be launched in dir, for its supervisor; nil when
// none applies. It starts Truthsayer on dir when its binary is there, as dispatch.sh did just
// before it started the agent; LaunchFailed stops it if the launch fails.
func (s *Site) Hooks(bead, dir string, stderr io.Writer) *Hooks {
	var ts *Watcher
	if Executable(s.TruthsayerBin) {
		var err error
		if ts, err = StartTruthsayer(s.TruthsayerBin, dir, TruthsayerLog(s.StateDir, bead), s.Env); err != nil {
			fmt.Fprintf(stderr, "%s: warning: truthsayer not started: %v\n", s.Tool, err)
		}
	}
	return s.hooks(ts, stderr)
}

// hooks are the site's hooks with the Truthsayer watcher ts: nil when there is none of them.
func (s *Site) hooks(ts *Watcher, stderr io.Writer) *Hooks {
	h := &Hooks{Truthsayer: ts, Relay: s.Relay}
	ws, _ := Open(s.Root) // an error was BeforeLaunch's to report
	if ws != nil {
		h.Root = ws.Root
	}
	if h.Root == "" && h.Relay == nil && h.Truthsayer == nil {
		return nil
	}
	cfg, err := ReadConfig(s.ConfigPath)
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: %v; the wake message closes with %q\n", s.Tool, err, DefaultInstruction)
	}
	h.Instruction = cfg.InstructionIn(ws) // the config's, else the owner USER.md names
	return h
}

// Dispatched tells the relay of h that run's agent was started, as dispatch.sh did.
func (s *Site) Dispatched(ctx context.Context, h *Hooks, run *record.Run, stderr io.Writer) {
	if h != nil && h.Relay != nil {
		h.Relay.Dispatched(ctx, DispatchOf(run, time.Now()), s.Env, stderr)
	}
}

// LaunchFailed runs, for an attempt whose supervisor could not be started, the hooks the
// supervisor would have run after the records: validate-state.sh, the memory line and the
// wake, as dispatch.sh ran them for tmux-launch-failed. res is the attempt's result record as
// the launch wrote it, nil when it wrote none (then there is nothing to tell). It stops
// Truthsayer.
func (s *Site) LaunchFailed(ctx context.Context, h *Hooks, runFile, resultFile string, res *record.Result, model string, stderr io.Writer) {
	if h == nil {
		return
	}
	h.Truthsayer.Stop()
	if res == nil {
		return
	}
	h.Validate(ctx, runFile, resultFile, s.Env, stderr)
	s.announce(ctx, h, res, model, stderr)
}

// Refused tells of an attempt refused before anything was touched, as dispatch.sh did: the
// memory line and the wake (no verify.sh, no validate-state.sh). res is the refusal as
// dispatch.sh recorded it; it is told, not written.
func (s *Site) Refused(ctx context.Context, res *record.Result, model string, stderr io.Writer) {
	if h := s.hooks(nil, stderr); h != nil {
		s.announce(ctx, h, res, model, stderr)
	}
}

func (s *Site) announce(ctx context.Context, h *Hooks, res *record.Result, model string, stderr io.Writer) {
	findings := CountFindings(TruthsayerLog(s.StateDir, res.Bead))
	h.Announce(ctx, OutcomeOf(res, model), findings, time.Now(), s.Env, stderr)
}
