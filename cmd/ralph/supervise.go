package main

import (
	"context"
	"os"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// superviseCommand runs the supervisor of a loop's worker (swarm.Supervise), as swarm's own
// __supervise does: the loop's workers are swarm workers whose supervisor is this binary
// (swarmOptions passes it as swarm.Options.Supervisor), started in the worker's tmux window,
// never by hand.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name: supervise.SuperviseVerb, Usage: "run a loop worker's supervisor (started by the loop)", Hidden: true, OwnSignals: true,
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

// swarmOptions are how the loops' workers are started: their supervisor is this binary's
// superviseCommand; the agents config ($SWARM_AGENTS, else $SWARM_DIR/agents.json), the agents'
// environment (ours) and tmux's socket directory ($TMUX_TMPDIR) are this process's. The loop
// sends warnings to its stderr.
func swarmOptions() swarm.Options {
	dir, _ := statedir.SwarmFromEnv(os.LookupEnv) // the loop verbs that need it say why it cannot be found
	o := swarm.Options{Agents: agent.SwarmConfig(os.LookupEnv, dir.Root), Environ: os.Environ(), TmuxTmpDir: os.Getenv("TMUX_TMPDIR")}
	if exe, err := proc.Self(); err == nil {
		o.Supervisor = []string{exe, supervise.SuperviseVerb}
	}
	return o
}
