package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/workspace"
)

// The workspace's hooks and dispatch.sh's relay and Truthsayer integrations, as launch runs
// them; the supervisor runs the rest (attempt.Recorder). The workspace is the one a shim named
// (FLEET_WORKSPACE, settings.workspace); dispatch run directly has none unless told.

// beforeLaunch runs the workspace's pre-launch scripts (lint, preflight, PRD-lint gate). A
// refusal is dispatch's exit status, as under dispatch.sh's set -e.
func beforeLaunch(ctx context.Context, s *settings, agentName, repo string, stdout, stderr io.Writer) error {
	ws, err := workspace.Open(s.workspace)
	if err != nil {
		return fmt.Errorf("%s: %w", workspaceEnv, err)
	}
	err = ws.BeforeLaunch(ctx, workspace.Launch{Agent: agentName, Repo: repo,
		EnforcePRDLint: workspace.EnforcePRDLint(s.getenv), Env: s.environment, Stdout: stdout, Stderr: stderr})
	var refused *workspace.Refusal
	if errors.As(err, &refused) {
		return &cli.ExitError{Code: refused.Code, Err: err}
	}
	return err
}

// attemptHooks are the hooks of an attempt about to be launched, for its supervisor, nil when
// none applies. It starts Truthsayer on the agent's directory when its binary is there, as
// dispatch.sh did just before it started the agent; launchFailed stops it if the launch fails.
func attemptHooks(s *settings, run *record.Run, dir string, stderr io.Writer) *workspace.Hooks {
	var ts *workspace.Watcher
	if bin := workspace.TruthsayerBin(s.getenv); workspace.Executable(bin) {
		var err error
		if ts, err = workspace.StartTruthsayer(bin, dir, workspace.TruthsayerLog(s.stateDir, run.Bead), s.environment); err != nil {
			fmt.Fprintf(stderr, "%s: warning: truthsayer not started: %v\n", tool, err)
		}
	}
	return hooksOf(s, ts, stderr)
}

// hooksOf are the hooks the settings name: the workspace's, the relay when it is enabled and
// its binary is there, and the Truthsayer watcher ts; nil when there is none of them.
func hooksOf(s *settings, ts *workspace.Watcher, stderr io.Writer) *workspace.Hooks {
	h := &workspace.Hooks{Truthsayer: ts}
	ws, _ := workspace.Open(s.workspace) // an error was beforeLaunch's to report
	if ws != nil {
		h.Root = ws.Root
	}
	if s.relay && isExecutable(s.relayBin) {
		h.Relay = &workspace.Relay{Bin: s.relayBin, Orchestrator: workspace.Orchestrator(s.getenv)}
	}
	if h.Root == "" && h.Relay == nil && h.Truthsayer == nil {
		return nil
	}
	cfg, err := workspace.ReadConfig(s.config.Path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: %v; the wake message closes with %q\n", tool, err, workspace.DefaultInstruction)
	}
	h.Instruction = cfg.InstructionIn(ws) // the config's, else the owner USER.md names
	return h
}

// dispatched tells the relay the agent was started, as dispatch.sh did.
func dispatched(ctx context.Context, spec *attempt.Spec, env []string, stderr io.Writer) {
	if h := spec.Hooks; h != nil && h.Relay != nil {
		h.Relay.Dispatched(ctx, workspace.DispatchOf(&spec.Run, time.Now()), env, stderr)
	}
}

// launchFailed runs, for an attempt whose supervisor could not be started, the hooks the
// supervisor would have run after the records (Launch wrote them): validate-state.sh, the
// memory line and the wake, as dispatch.sh ran them for tmux-launch-failed. It stops Truthsayer.
func launchFailed(ctx context.Context, s *settings, spec *attempt.Spec, stderr io.Writer) {
	h := spec.Hooks
	if h == nil {
		return
	}
	h.Truthsayer.Stop()
	d := s.dir()
	res, err := record.ReadResult(d.Store.ResultPath(spec.Run.Bead))
	if err != nil || res.Reason != attempt.ReasonLaunchFailed || res.Attempt != spec.Run.Attempt {
		return // not recorded as a failed launch: there is nothing to tell
	}
	h.Validate(ctx, d.Store.RunPath(res.Bead), d.Store.ResultPath(res.Bead), s.environment, stderr)
	announce(ctx, s, h, res, spec.Run.Model, stderr)
}

// refusedHooks tells of an attempt refused over DISPATCH_MAX_RETRIES, as dispatch.sh did: the
// memory line and the wake (no verify.sh, no validate-state.sh). res is the refusal as
// dispatch.sh recorded it (failed, max-retries-reached, the attempt capped); it is told, not
// written: the bead's records keep its last real attempt.
func refusedHooks(ctx context.Context, s *settings, res *record.Result, model string, stderr io.Writer) {
	h := hooksOf(s, nil, stderr)
	if h == nil {
		return
	}
	announce(ctx, s, h, res, model, stderr)
}

func announce(ctx context.Context, s *settings, h *workspace.Hooks, res *record.Result, model string, stderr io.Writer) {
	findings := workspace.CountFindings(workspace.TruthsayerLog(s.stateDir, res.Bead))
	h.Announce(ctx, workspace.OutcomeOf(res, model), findings, time.Now(), s.environment, stderr)
}
