package main

import (
	"context"
	"fmt"
	ucli "github.com/urfave/cli/v2"
	"io"
	"os"

	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/cmd/internal/swarmhost"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// newTool is swarm's command line: its verbs, each a cli.Command made by a function in a file
// of its own (or of its family), in the order of the help, routed by the toolkit's one router
// with the Python swarm's diagnostics ("swarm: error: ..." and a hint to the verb's help). Each
// call makes new flags: urfave/cli keeps the values it parsed in them.
func newTool() *cli.Tool {
	commands := []*cli.Command{spawnCommand(), lsCommand(), statusCommand(), peekCommand(), sendCommand(), interruptCommand(),
		eofCommand(), killCommand(), waitCommand(), logsCommand(), cleanCommand(), respawnCommand(), attachCommand(),
		initCommand(), heartbeatCommand(), runCommand(), ralphCommand(), topCommand(), agentsCommand(), actCommand(), supervisorverb.Command(supervisorverb.Worker,
			"run a worker's supervisor (started by swarm spawn)", "%s is started by swarm spawn, not by hand")}
	return &cli.Tool{Name: "swarm", Dialect: cli.Labelled, Commands: commands,
		Usage: func(w io.Writer) { usage(w, commands) }, Manual: manual, Names: names}
}

// names are what `swarm __complete KIND` lists for the completions: the workers of
// state.json and the loops of ralph/ (`swarm ralph stop <TAB>`), read and never changed.
var names = map[string]func() ([]string, error){
	"workers": func() ([]string, error) {
		d, err := statedir.SwarmFromEnv(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		return worker.Names(d)
	},
	"loops": func() ([]string, error) {
		d, err := statedir.SwarmFromEnv(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		return d.LoopNames()
	},
}

func usage(w io.Writer, commands []*cli.Command) {
	fmt.Fprintf(w, "swarm - run AI coding agents side by side, supervised\n\nUsage:\n   swarm <verb> [options] [args]\n\nVerbs:\n")
	for _, c := range commands {
		if !c.Hidden {
			fmt.Fprintf(w, "   %-10s %s\n", c.Name, c.Usage)
		}
	}
	fmt.Fprintf(w, `
Every verb of the Python swarm is here; 'swarm ralph' is the ralph tool's loops.

Every worker runs under a supervisor (%s), so status, ls and wait know whether its
agent is alive and its exit code. State: $SWARM_DIR (default ~/.swarm), state.json as the
Python swarm writes it. 'swarm <verb> --help' shows a verb's options.

Exit status: 0 ok, 1 failure, 2 usage error; status: 1 stopped, 2 not found; peek: 2 not found;
wait: the worker's exit code (1 on timeout).
`, "swarm "+supervise.SuperviseVerb)
}

// swarmDir is the swarm directory as the Python swarm found it: $SWARM_DIR (set but empty:
// the current directory), else ~/.swarm.
func swarmDir() (string, error) {
	d, err := statedir.SwarmFromEnv(os.LookupEnv)
	return d.Root, err
}

// open opens the swarm directory.
func open(s cli.Streams) (*swarm.Swarm, error) {
	dir, err := swarmDir()
	if err != nil {
		return nil, err
	}
	return swarm.Open(dir, swarmhost.Options(dir, s.Err))
}

// load opens the swarm directory and reads its state (a spawn killed half-way finished or
// undone first).
func load(ctx context.Context, s cli.Streams) (*swarm.Swarm, *worker.State, error) {
	sw, err := open(s)
	if err != nil {
		return nil, nil, err
	}
	st, err := sw.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	return sw, st, nil
}

// errNotFound is a worker that is not in state.json; status and peek exit 2 for it, the
// others 1, as the Python swarm did.
type errNotFound struct{ name string }

func (e errNotFound) Error() string { return fmt.Sprintf("worker '%s' not found", e.name) }

// one returns the worker a verb names; not found is an error with code (1, or 2 for status
// and peek, as the Python swarm had it).
func one(st *worker.State, name string, code int) (*worker.Worker, error) {
	if w := st.Get(name); w != nil {
		return w, nil
	}
	return nil, &cli.ExitError{Code: code, Err: errNotFound{name}}
}

// choiceFlag is a flag with argparse's choices: a wrong value is refused in argparse's words,
// and the completions offer the choices.
func choiceFlag(f ucli.StringFlag, choices ...string) *cli.EnumFlag {
	return &cli.EnumFlag{StringFlag: f, Choices: choices, Dialect: cli.Labelled}
}

// warnf says a warning as the Python swarm did: "swarm: warning: ..." (on every line).
func warnf(s cli.Streams, format string, args ...any) {
	swarm.WriteWarning(s.Err, fmt.Sprintf(format, args...))
}
