package swarmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

const tool = "swarm"

// env is what every verb works with: the swarm directory and the streams.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// warnf prints a warning as the Python swarm did: "swarm: warning: ...".
func (e *env) warnf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "%s: warning: %s\n", tool, fmt.Sprintf(format, args...))
}

// verb is one of swarm's verbs.
type verb struct {
	name, usage, usageText string
	flags                  []ucli.Flag
	exitCodes              []cli.ExitCode
	action                 func(c *ucli.Context, e *env) error
	hidden                 bool
	// missing says the verb is not implemented yet (it is listed, and says so).
	missing bool
}

// verbs are swarm's verbs in the order of the help.
var verbs = []*verb{spawnVerb, lsVerb, statusVerb, peekVerb, sendVerb, interruptVerb, eofVerb, killVerb, waitVerb,
	logsVerb, cleanVerb,
	respawnVerb, attachVerb, initVerb,
	heartbeatVerb,
	{name: "ralph", usage: "the ralph tool's loops on swarm workers (swarm ralph --help)", missing: true},
	superviseVerb,
}

func lookupVerb(name string) *verb {
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

// errNotFound is a worker that is not in state.json; status and peek exit 2 for it, the
// others 1, as the Python swarm did.
type errNotFound struct{ name string }

func (e errNotFound) Error() string { return fmt.Sprintf("worker '%s' not found", e.name) }

// Run runs swarm's verb args[1] and returns the exit status. Diagnostics are
// "swarm: error: ...". cmd/swarm is this and the ralph verb.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr)
}

// RalphVerb runs `swarm ralph ARGS...` (args[0] is "swarm ralph"). cmd/swarm sets it to the
// ralph tool's loop verbs: that package builds on this one, so this one cannot import it.
var RalphVerb func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) < 2 || args[1] == "help" || args[1] == "--help" || args[1] == "-h" {
		if len(args) >= 3 && args[1] == "help" {
			if args[2] == heartbeatVerb.name {
				return exit(e, "heartbeat", runHeartbeat(context.Background(), e, []string{"--help"}))
			}
			if v := lookupVerb(args[2]); v != nil && !v.missing {
				return exit(e, "", cli.Run(context.Background(), v.app(e), []string{tool + " " + v.name, "--help"}))
			}
		}
		usage(stdout)
		if len(args) < 2 {
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
	if args[1] == "--version" || args[1] == "version" {
		fmt.Fprintf(stdout, "swarm version %s\n", cli.Version())
		return cli.ExitOK
	}
	v := lookupVerb(args[1])
	if v == nil {
		return exit(e, "", cli.Usagef("invalid choice: '%s' (choose from %s)", args[1], verbList()))
	}
	if v.name == "ralph" {
		if RalphVerb != nil {
			return RalphVerb(append([]string{tool + " ralph"}, args[2:]...), stdin, stdout, stderr)
		}
		return exit(e, "", errors.New("swarm ralph is reserved for the ralph tool, which is not built yet"))
	}
	if v.missing {
		return exit(e, "", fmt.Errorf("%s is not implemented yet", v.name))
	}
	if v == superviseVerb {
		// The supervisor handles its own signals.
		return exit(e, v.name, cli.Run(context.Background(), v.app(e), append([]string{tool + " " + v.name}, args[2:]...)))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	rest := args[2:]
	switch v {
	case spawnVerb:
		return exit(e, v.name, runSpawn(ctx, e, rest))
	case heartbeatVerb:
		return exit(e, v.name, runHeartbeat(ctx, e, rest))
	}
	return exit(e, v.name, cli.Run(ctx, v.app(e), append([]string{tool + " " + v.name}, rest...)))
}

// exit maps err to the exit status: nil 0; a usage error 2; cli.ExitError its code; anything
// else 1, each said as "swarm: error: ...".
func exit(e *env, verbName string, err error) int {
	if err == nil {
		return cli.ExitOK
	}
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(e.stderr, "%s: error: %v\n", tool, ee.Err)
		}
		return ee.Code
	}
	var ue *cli.UsageError
	if errors.As(err, &ue) || isFlagError(err) {
		where := tool
		if verbName != "" {
			where += " " + verbName
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n%s: hint: run '%s --help' for usage\n", tool, err, tool, where)
		return cli.ExitUsage
	}
	fmt.Fprintf(e.stderr, "%s: error: %v\n", tool, err)
	return cli.ExitFailure
}

func isFlagError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"flag provided but not defined", "flag needs an argument", "invalid value", "invalid boolean",
		"Required flag"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func verbList() string {
	var names []string
	for _, v := range verbs {
		if !v.hidden {
			names = append(names, "'"+v.name+"'")
		}
	}
	return strings.Join(names, ", ")
}

// app builds the verb's urfave/cli app.
func (v *verb) app(e *env) *ucli.App {
	return cli.NewApp(cli.Spec{Name: tool + " " + v.name, Usage: v.usage, UsageText: v.usageText, Flags: slices.Clip(v.flags),
		ExitCodes: v.exitCodes, HideVersion: true,
		Action: func(c *ucli.Context) error { return v.action(c, e) }}, e.stdout, e.stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "swarm - run AI coding agents side by side, supervised\n\nUsage:\n   swarm <verb> [options] [args]\n\nVerbs:\n")
	for _, v := range verbs {
		if v.hidden {
			continue
		}
		note := ""
		if v.missing && v.name != "ralph" {
			note = " (not implemented yet)"
		}
		fmt.Fprintf(w, "   %-10s %s%s\n", v.name, v.usage, note)
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
	return absPath(arg0)
}
