// Package swarmhost is what a program that starts swarm workers (swarm itself, and ralph, whose
// loops' iterations are swarm workers) takes from its process for internal/swarm, in one place:
// the Options (the agents config, this program as the workers' supervisor, the agents'
// environment, tmux's socket directory, a test's crash point) and the hidden verb that runs a
// worker's supervisor. The library reads none of these itself.
package swarmhost

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Options are the swarm.Options of the swarm directory dir for this process: the agents config
// ($SWARM_AGENTS, else dir/agents.json), this program's supervisor verb (SuperviseCommand), the
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

// SuperviseCommand is the hidden verb that runs a worker's supervisor (swarm.Supervise), with
// the arguments Options gives swarm.Options.Supervisor: started by a spawn in the worker's tmux
// window or detached, never by hand. usage says who starts it.
func SuperviseCommand(usage string) *cli.Command {
	return &cli.Command{
		Name: supervise.SuperviseVerb, Usage: usage, Hidden: true, OwnSignals: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "handoff", Usage: "the starter's handoff socket (`PATH`)"},
			&ucli.StringFlag{Name: "swarm-dir", Usage: "the swarm directory (`DIR`)"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 || c.String("handoff") == "" || c.String("swarm-dir") == "" {
				return cli.Usagef("%s is started by swarm spawn, not by hand", supervise.SuperviseVerb)
			}
			var input *os.File
			if f, ok := s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				input = f
			}
			return swarm.Supervise(ctx, c.String("swarm-dir"), c.String("handoff"), c.Args().First(), s.Out, input, s.Err)
		},
	}
}
