// Package swarmhost is what a program that starts swarm workers (swarm itself, and ralph, whose
// loops' iterations are swarm workers) takes from its process for internal/swarm, in one place:
// the Options (the agents config, this program as the workers' supervisor, the agents'
// environment, tmux's socket directory, a test's crash point) and the hidden verb that runs a
// worker's supervisor. The library reads none of these itself.
package swarmhost

import (
	"io"
	"os"
	"syscall"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
)

// Options are the swarm.Options of the swarm directory dir for this process: the agents config
// ($SWARM_AGENTS, else dir/agents.json), this program's supervisor verb (supervisorverb.Worker), the
// agents' environment (ours), tmux's socket directory ($TMUX_TMPDIR); warnings go to stderr.
// $SWARM_TEST_CRASH_AT names a step of a spawn at which the process kills itself (the spawn
// journal's tests).
func Options(dir string, stderr io.Writer) swarm.Options {
	o := swarm.Options{Agents: agent.SwarmConfig(os.LookupEnv, dir), Environ: os.Environ(),
		TmuxTmpDir: os.Getenv("TMUX_TMPDIR"), Warnings: stderr}
	if exe, err := proc.Self(); err == nil {
		o.Supervisor = []string{exe, supervise.SuperviseVerb}
	}
	if at := os.Getenv("SWARM_TEST_CRASH_AT"); at != "" {
		o.Checkpoint = func(step string) {
			if step == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	return o
}
