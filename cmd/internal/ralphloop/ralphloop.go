// Package ralphloop is the command line of swarm's ralph loops (internal/ralph/loop): the
// verbs spawn, run, status, pause, resume, stop, list, logs, clean, init and template as
// cli.Commands, shared by the two programs that have them, `ralph VERB` (cmd/ralph) and
// `swarm ralph VERB` (cmd/swarm). Each verb is a function returning a new *cli.Command, in a
// file of its own or of its family: it parses its flags into the library's typed options and
// calls it, and says what happened in the words of the program running it (Config.Tool).
//
// What the loops take from the process's world is read here, never in the library: $SWARM_DIR
// (the swarm directory), $STATE_DIR (the iterations' run records), this program's path (a
// loop's monitor is `PROGRAM [ralph] run NAME`, started detached), and two test knobs:
// RALPH_TEST_BACKOFF (a Go duration: the unit of the backoff after a failed iteration) and
// RALPH_TEST_LIMIT_WAIT (how long a usage limit without a reset time holds a loop).
package ralphloop

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
	ucli "github.com/urfave/cli/v2"
)

// Config is how a program runs the loop verbs.
type Config struct {
	// Tool is how a person types the verbs: "ralph", or "swarm ralph". Its first word is the
	// program, the prefix of the verbs' own lines ("swarm: note: …").
	Tool string
	// Swarm are the swarm library's options for the swarm directory dir: the supervisor command
	// of this program, the agents config, the agents' environment, tmux's socket directory;
	// warnings to stderr.
	Swarm func(dir string, stderr io.Writer) swarm.Options
}

// prog is the program's name, the prefix of its lines.
func (c Config) prog() string { return strings.Fields(c.Tool)[0] }

// monitorVerbs are this program's arguments that run a loop's monitor, before the loop's name.
func (c Config) monitorVerbs() []string {
	return append(slices.Clone(strings.Fields(c.Tool)[1:]), "run")
}

// Commands are the loop verbs, in the order of the help and of argparse's list of choices.
// Each call makes new commands: urfave/cli keeps the values it parsed in their flags.
func Commands(c Config) []*cli.Command {
	return []*cli.Command{SpawnCommand(c), RunCommand(c), StatusCommand(c), PauseCommand(c), ResumeCommand(c),
		StopCommand(c), AbortCommand(c), ListCommand(c), LogsCommand(c), CleanCommand(c), InitCommand(c), TemplateCommand(c)}
}

// open opens the loops of the swarm directory ($SWARM_DIR, else ~/.swarm, as swarm finds it),
// with this program as their monitor and the test knobs of the environment.
func (c Config) open(s cli.Streams) (*loop.Loops, error) {
	d, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	o := loop.Options{Tool: c.Tool, Out: s.Out, Err: s.Err,
		Backoff: envDuration("RALPH_TEST_BACKOFF"), LimitWait: envDuration("RALPH_TEST_LIMIT_WAIT")}
	if c.Swarm != nil {
		o.Swarm = c.Swarm(d.Root, s.Err)
	}
	if exe, err := proc.Self(); err == nil {
		o.Monitor = append([]string{exe}, c.monitorVerbs()...)
	}
	return loop.Open(d.Root, o)
}

// envDuration is the Go duration in the environment variable name, 0 when unset or not one
// (the library's default then).
func envDuration(name string) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// withLoops is an Action that needs the swarm directory's loops.
func (c Config) withLoops(do func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error) func(context.Context, *ucli.Context, cli.Streams) error {
	return func(ctx context.Context, uc *ucli.Context, s cli.Streams) error {
		ls, err := c.open(s)
		if err != nil {
			return err
		}
		return do(ctx, uc, s, ls)
	}
}

// warnf says a warning: "PROG: warning: …".
func (c Config) warnf(s cli.Streams, format string, args ...any) {
	fmt.Fprintf(s.Err, "%s: warning: %s\n", c.prog(), fmt.Sprintf(format, args...))
}

// one returns the single NAME operand of a verb.
func one(uc *ucli.Context) (string, error) {
	if uc.NArg() != 1 {
		return "", cli.Usagef("the following arguments are required: name")
	}
	return uc.Args().First(), nil
}

// usageText is a verb's synopsis with TOOL as the program types it.
func (c Config) usageText(text string) string { return strings.ReplaceAll(text, "TOOL", c.Tool) }

// Usage writes the help of the loop verbs as a verb of their own (`swarm ralph --help`).
func Usage(w io.Writer, tool string, cmds []*cli.Command) {
	fmt.Fprintf(w, "%s - run an agent again and again on one prompt until it is done\n\nUsage:\n   %s <verb> [options] [args]\n\nVerbs:\n", tool, tool)
	for _, c := range cmds {
		if !c.Hidden {
			fmt.Fprintf(w, "   %-9s %s\n", c.Name, c.Usage)
		}
	}
	fmt.Fprintln(w)
	Guide(w, tool)
	fmt.Fprintf(w, "\nState: $SWARM_DIR/ralph/<name>/ (state.json, iterations.log), as the Python swarm keeps it.\n"+
		"'%s <verb> --help' shows a verb's options and examples. Exit status: 0 ok, 1 failure, 2 usage error.\n", tool)
}

// Command is the loop verbs as one verb with verbs of their own: `swarm ralph VERB`. Alone it
// prints the help on stdout and exits 2; `help` alone, or `help` and a word that is no verb,
// prints it and exits 0, as the Python swarm's ralph did; a word that is no verb is argparse's
// "invalid choice".
func Command(name, usage string, c Config) *cli.Command {
	cmds := Commands(c)
	help := func(w io.Writer) { Usage(w, c.Tool, cmds) }
	cmds = append(cmds, &cli.Command{Name: "help", Hidden: true, OwnSignals: true,
		Raw: func(ctx context.Context, s cli.Streams, args []string) error {
			for _, v := range cmds {
				if len(args) > 0 && !v.Hidden && (v.Name == args[0] || slices.Contains(v.Aliases, args[0])) {
					path := c.Tool + " " + v.Name
					return cli.Run(ctx, v.App(path, s), []string{path, "--help"})
				}
			}
			help(s.Out)
			return nil
		}})
	return &cli.Command{Name: name, Usage: usage, Commands: cmds, CommandsUsage: help, BareHelpToStdout: true}
}
