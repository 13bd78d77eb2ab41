package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// superviseCmd runs the supervisor of a loop's worker (swarm.Supervise), as swarm's own
// __supervise does: the loop's workers are swarm workers whose supervisor is this binary
// (the loop passes it as swarm.Options.Supervisor), started in the worker's tmux window, never
// by hand.
var superviseCmd = &cli.Command{
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

// superviseTool routes `ralph __supervise …` to superviseCmd.
var superviseTool = &cli.Tool{Name: "ralph", Dialect: cli.Labelled, Commands: []*cli.Command{superviseCmd}}

// swarmOptions are how the loops' workers are started: their supervisor is this binary's
// superviseCmd; the agents config ($SWARM_AGENTS), the agents' environment (ours) and tmux's
// socket directory ($TMUX_TMPDIR) are this process's. The loop sends warnings to its stderr.
func swarmOptions() swarm.Options {
	o := swarm.Options{AgentsConfig: os.Getenv("SWARM_AGENTS"), Environ: os.Environ(), TmuxTmpDir: os.Getenv("TMUX_TMPDIR")}
	if exe, err := self(); err == nil {
		o.Supervisor = []string{exe, supervise.SuperviseVerb}
	}
	return o
}

// self is the command line that runs this binary again (the supervisor verb): os.Args[0] as it
// was started (a multi-call test binary must be started by that name), made absolute.
func self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, "/") {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return os.Executable()
		}
		arg0 = p
	}
	return filepath.Abs(arg0)
}
