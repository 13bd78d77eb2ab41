package main

import (
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/agent"
)

// The agent's command, found before anything is started (agent.CheckCommand, shared with swarm
// spawn and swarm run): dispatch.sh (and dispatch until now) said "Agent dispatched" for a
// command that does not exist, and the failure showed only in the records
// (agent-start-failed, 127) after it had used an attempt.

func envPath(env []string) (string, bool) { return agent.EnvPath(env) }

func findCommand(cmd, dir string, paths ...string) (string, error) {
	return agent.FindCommand(cmd, dir, paths...)
}

// checkAgentCommand says, in one line, why profile's command cannot be started in dir with the
// environment env (or dispatch's own PATH, ownPath), and what to do; nil when it can.
func checkAgentCommand(profile *agent.Profile, cfg *agent.Config, env []string, ownPath, dir string) error {
	if problem := commandProblem(profile, cfg, env, ownPath, dir); problem != "" {
		return fmt.Errorf("agent %s: %s; nothing was started and no attempt used", profile.Name, problem)
	}
	return nil
}

// commandProblem is why profile's command cannot be started, and what to do; "" when it can.
func commandProblem(profile *agent.Profile, cfg *agent.Config, env []string, ownPath, dir string) string {
	err := agent.CheckCommand(profile.Command, dir, env, ownPath)
	var ce *agent.CommandError
	if !errors.As(err, &ce) {
		return ""
	}
	fix := "name it in " + agent.ConfigName + " (the built-in agents are in use)"
	if cfg.Path != "" {
		fix = "fix its \"command\" in " + cfg.Path
	}
	return fmt.Sprintf("its %v; install it, or %s", ce, fix)
}
