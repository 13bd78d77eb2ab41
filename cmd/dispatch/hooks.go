package main

import (
	"io"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// local is this machine as the settings have it, for attempt.Local.Dispatch: the state
// directory, the supervisor's backend and limits, and what surrounds a launch (site).
func (s *settings) local(stdout, stderr io.Writer) (*attempt.Local, error) {
	exe, err := proc.Self()
	if err != nil {
		return nil, err
	}
	return &attempt.Local{Machine: *s.machine(),
		Self: []string{exe, supervise.SuperviseVerb, "--state-dir", s.stateDir},
		Site: s.site(), Stdout: stdout, Stderr: stderr, Tool: tool, Note: s.relayLine()}, nil
}

// machine is this machine as the settings have it: the state directory, the supervisor's
// backend and limits.
func (s *settings) machine() *attempt.Machine {
	return &attempt.Machine{Dir: s.dir(), StateDir: s.stateDir, Backend: s.backend, Tmux: s.tmux(),
		KillGrace: s.killGrace, MinFreeMB: s.minFreeMB}
}

// site is what surrounds a launch under these settings: the workspace a shim named
// (FLEET_WORKSPACE, settings.workspace; dispatch run directly has none unless told), and
// dispatch.sh's relay and Truthsayer integrations. The launch runs their hooks; the supervisor
// runs the rest (attempt.Recorder).
func (s *settings) site() workspace.Site {
	site := workspace.Site{Root: s.workspace, ConfigPath: s.config.Path, TruthsayerBin: workspace.TruthsayerBin(s.getenv),
		EnforcePRDLint: workspace.EnforcePRDLint(s.getenv), StateDir: s.stateDir, Env: s.environment, Tool: tool}
	if s.relay && isExecutable(s.relayBin) {
		site.Relay = &workspace.Relay{Bin: s.relayBin, Orchestrator: workspace.Orchestrator(s.getenv)}
	}
	return site
}
