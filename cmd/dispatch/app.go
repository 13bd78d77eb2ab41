package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

const tool = "dispatch"

// commands are dispatch's verbs, in the order of its help; help and version are answered by
// the tool (cli.Tool) except where dispatch words them itself (helpCommand, versionCommand).
// A verb's name is never a bead id (isVerb). Each call makes new flags: urfave/cli keeps the
// values it parsed in them.
func commands() []*cli.Command {
	return []*cli.Command{psCommand(), waitCommand(), killCommand(), reconcileCommand(), attachCommand(),
		doctorCommand(), supervisorverb.Command(supervisorverb.Attempt, "run one attempt's supervisor (started by dispatch)",
			"%s is started by dispatch, not by hand"), recordsCommand(), helpCommand(), versionCommand()}
}

// find returns dispatch's verb called name, or nil.
func find(name string) *cli.Command {
	for _, c := range commands() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// isVerb says whether name is a verb (help and version included), never a bead id.
func isVerb(name string) bool { return find(name) != nil }

// verbNames lists the verbs shown in the help, for messages.
func verbNames() string {
	var names []string
	for _, c := range commands() {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// verbOptions are what a verb's flags write into: --state-dir, which every verb takes (added by
// verbCommand), and --json and --all, of the verbs that have them.
type verbOptions struct {
	stateDir  string
	json, all bool
}

// settings are dispatch's settings for the verb's --state-dir.
func (o *verbOptions) settings() (*settings, error) { return loadSettings(o.stateDir) }

// verbCommand adds --state-dir, which every verb takes, to c, written into o.
func verbCommand(c *cli.Command, o *verbOptions) *cli.Command {
	stateDir := cli.StateDirFlag()
	stateDir.Destination = &o.stateDir
	c.Flags = append(slices.Clip(c.Flags), stateDir)
	return c
}

// newTool is dispatch's command line: its verbs, flags that may stand before a verb
// ("dispatch --state-dir S reconcile --all"), and the dispatch form for a first word that is
// no verb, read as dispatch.sh read its words (formArgs).
func newTool(stdin io.Reader) *cli.Tool {
	form := func(s cli.Streams) *ucli.App { return dispatchApp(stdin, s.Out, s.Err) }
	return &cli.Tool{
		Name: tool, Dialect: cli.Plain, Manual: manual,
		Commands: commands(),
		Flags:    allFlags(form(cli.Streams{Out: io.Discard, Err: io.Discard})),
		Usage: func(w io.Writer) {
			cli.Run(context.Background(), form(cli.Streams{Out: w, Err: w}), []string{tool, "--help"})
		},
		Default: func(ctx context.Context, s cli.Streams, args []string) error {
			app := form(s)
			formed, warnings := formArgs(args, app.Flags)
			for _, w := range warnings {
				fmt.Fprintf(s.Err, "%s: warning: %s\n", tool, w)
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return cli.Run(ctx, app, append([]string{tool}, formed...))
		},
	}
}

// run runs dispatch's command line args and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return newTool(stdin).Main(args, cli.Streams{In: stdin, Out: stdout, Err: stderr})
}

// helpCommand answers "dispatch help" with the dispatch form's help, which lists the verbs, and
// "dispatch help VERB" with the verb's own (its flags and exit codes); "dispatch help REPO AGENT
// PROMPT" is a bead named help, which cannot be.
func helpCommand() *cli.Command {
	return &cli.Command{Name: "help", Hidden: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		form := dispatchApp(s.In, s.Out, s.Err)
		a := positional(form, args)
		switch {
		case len(a) == 0 || a[0] == "help" || a[0] == "version":
			return cli.Run(ctx, form, []string{tool, "--help"})
		case len(a) == 1 && find(a[0]) != nil:
			return cli.Run(ctx, find(a[0]).App(tool+" "+a[0], s), []string{tool + " " + a[0], "--help"})
		case len(a) == 1:
			return cli.Usagef("no verb %q; the verbs are %s", a[0], verbNames())
		}
		return cli.Usagef("%q is a dispatch verb, not a bead id", "help")
	}}
}

// versionCommand is "dispatch version", which takes no arguments: a bead may not be named so.
func versionCommand() *cli.Command {
	return &cli.Command{Name: "version", Hidden: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		if a := positional(dispatchApp(s.In, s.Out, s.Err), args); len(a) > 0 {
			return cli.Usagef("version takes no arguments, got %q; a bead may not be named like a verb", a[0])
		}
		fmt.Fprintf(s.Out, "%s version %s\n", tool, cli.Version())
		return nil
	}}
}

// positional returns the positional arguments of a verb's command line args.
func positional(form *ucli.App, args []string) []string {
	a := cli.Interspersed(args, allFlags(form))
	if i := slices.Index(a, "--"); i >= 0 {
		return a[i+1:]
	}
	return nil
}

// allFlags are the flags of the dispatch form and of every verb: those that may come before a
// verb. A name means the same flag in all of them.
func allFlags(form *ucli.App) []ucli.Flag {
	flags := slices.Clip(form.Flags)
	for _, c := range commands() {
		flags = append(flags, c.Flags...)
	}
	return flags
}

// formArgs orders the dispatch form's command line as urfave/cli reads it (flags, "--", then
// BEAD REPO AGENT PROMPT [TEMPLATE]), reading it as dispatch.sh read its words. The fourth word
// that is not a flag is the prompt, whatever it looks like: a markdown list ("- fix a"), front
// matter ("---"), "--fix it". After the prompt, only dispatch's own flags are flags; any other
// word is the template name, the last one winning, and one that looks like a flag is taken so
// with a warning. Before the prompt, a word starting with "-" is a flag (an unknown one is a
// usage error) and "--" makes the words after it positional. Of --relay and --no-relay, the
// last one given counts, as in dispatch.sh.
func formArgs(args []string, flags []ucli.Flag) (formed, warnings []string) {
	valued := map[string]bool{}
	for _, f := range append(slices.Clip(flags), ucli.HelpFlag, ucli.VersionFlag) {
		_, isBool := f.(*ucli.BoolFlag)
		for _, name := range f.Names() {
			valued[name] = !isBool
		}
	}
	// ours returns the name of the dispatch flag a is ("--branch", "-branch", "--branch=x"), or "".
	ours := func(a string) string {
		if !strings.HasPrefix(a, "-") {
			return ""
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if _, ok := valued[name]; !ok || strings.HasPrefix(name, "-") {
			return ""
		}
		return name
	}
	var flagArgs, positional []string
	template, dashdash, relay := "", false, -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := ours(a)
		switch {
		case len(positional) == 3:
			if name != "" {
				warnings = append(warnings, fmt.Sprintf("%q is taken as the prompt, as dispatch.sh took its fourth word; flags go after the prompt", a))
			}
			positional = append(positional, a)
			continue
		case len(positional) < 3 && !dashdash && a == "--":
			dashdash = true
			continue
		case len(positional) < 3 && (dashdash || !isFlagWord(a)):
			positional = append(positional, a)
			continue
		case len(positional) < 3:
			// A flag before the prompt, ours or not: urfave/cli refuses one it does not know.
		case name == "":
			if isFlagWord(a) {
				warnings = append(warnings, fmt.Sprintf("%q is not a dispatch flag; it is taken as the template name, as dispatch.sh took any other word after the prompt", a))
			}
			template = a
			continue
		}
		if name == "relay" || name == "no-relay" {
			if relay >= 0 {
				flagArgs = slices.Delete(flagArgs, relay, relay+1)
			}
			relay = len(flagArgs)
		}
		flagArgs = append(flagArgs, a)
		if valued[name] && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			flagArgs = append(flagArgs, args[i])
		}
	}
	if template != "" {
		positional = append(positional, template)
	}
	return append(append(flagArgs, "--"), positional...), warnings
}

// isFlagWord says whether a looks like a flag; "-" alone is a word (standard input).
func isFlagWord(a string) bool { return len(a) > 1 && a[0] == '-' }

// formUsage is the dispatch form's synopsis.
const formUsage = "dispatch BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE] [flags]"

// exitStatus are the dispatch form's exit codes.
var exitStatus = []cli.ExitCode{
	{Code: cli.ExitOK, Meaning: "dispatched (with --wait: done)"},
	{Code: cli.ExitFailure, Meaning: "failure (refused, launch failed, max retries reached; with --wait: failed)"},
	{Code: cli.ExitUsage, Meaning: "usage error"},
	{Code: cli.ExitTimeout, Meaning: "with --wait: timed out"},
}

// dispatchOptions are the dispatch form's arguments and flags: its flags write into it
// (AddFlags), its arguments are set from the command line's words (setArgs).
type dispatchOptions struct {
	bead, repo, agentArg, prompt, template string
	branch                                 string
	force, noContext, worktree, noTmux     bool
	relay, noRelay                         bool
	wait, retry                            bool
	dryRun                                 bool // print what would run (dryrun.go), start nothing
	verify                                 string
	timeoutArg                             string
	timeout                                time.Duration // timeoutArg, parsed
	host, hostsFile                        string
	stateDir                               string
}

// AddFlags are the dispatch form's flags, in the order of its help, each writing into o.
func (o *dispatchOptions) AddFlags() []ucli.Flag {
	stateDir := cli.StateDirFlag()
	stateDir.Destination = &o.stateDir
	return []ucli.Flag{
		&ucli.StringFlag{Name: "branch", Destination: &o.branch, Usage: "check out (or create) `BRANCH` in the repo; with --worktree, the worktree's branch"},
		&ucli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace a running agent of the same bead"},
		&ucli.BoolFlag{Name: "relay", Destination: &o.relay, Usage: "use the relay when DISPATCH_RELAY_BIN is there, and say so when it is not", DefaultText: "on unless DISPATCH_USE_RELAY=false"},
		&ucli.BoolFlag{Name: "no-relay", Destination: &o.noRelay, Usage: "do not use the relay"},
		&ucli.BoolFlag{Name: "no-context", Destination: &o.noContext, Usage: "send the prompt as it is, without the other agents and coordination sections"},
		&ucli.BoolFlag{Name: "wait", Destination: &o.wait, Usage: fmt.Sprintf("block until the outcome is final; exit %d done, %d failed, %d timeout", cli.ExitOK, cli.ExitFailure, cli.ExitTimeout)},
		&ucli.BoolFlag{Name: "retry", Destination: &o.retry, Usage: "with --wait: dispatch the next attempt while will_retry holds"},
		&ucli.BoolFlag{Name: "worktree", Destination: &o.worktree, Usage: "run the agent in its own git worktree, <repo>-worktrees/BEAD"},
		&ucli.StringFlag{Name: "verify", Destination: &o.verify, Usage: "run `CMD` (a shell command) in the repo after the agent exits; its outcome fills verification"},
		&ucli.StringFlag{Name: "timeout", Destination: &o.timeoutArg, Usage: "stop the agent after `DURATION` (seconds, or 90s, 30m, 1h); default DISPATCH_WATCH_TIMEOUT"},
		&ucli.BoolFlag{Name: "no-tmux", Destination: &o.noTmux, Usage: "run the supervisor as a detached process instead of in tmux (DISPATCH_BACKEND=process)"},
		&ucli.StringFlag{Name: "host", Destination: &o.host, Usage: "run the agent on `HOST` of the hosts file over ssh: push the branch, run the host's dispatch, wait, bring the records and the branch back"},
		&ucli.StringFlag{Name: "hosts", Destination: &o.hostsFile, Usage: "with --host: the hosts file (`FILE`, default DISPATCH_HOSTS, else hosts.yaml)"},
		&ucli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "print the exact argv, the environment's keys and the files the attempt would use; start and write nothing"},
		stateDir,
	}
}

// setArgs takes BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE] from the positional arguments, and
// checks the flags that go together.
func (o *dispatchOptions) setArgs(a []string) error {
	if len(a) < 4 || len(a) > 5 {
		return cli.Usagef("expected BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE], got %d argument(s)", len(a))
	}
	o.bead, o.repo, o.agentArg, o.prompt = a[0], a[1], a[2], a[3]
	if len(a) == 5 {
		o.template = a[4]
	}
	if o.retry && !o.wait {
		return cli.Usagef("--retry needs --wait")
	}
	if o.dryRun && o.wait {
		return cli.Usagef("--dry-run starts nothing to --wait for")
	}
	if o.timeoutArg != "" {
		d, err := parseDuration(o.timeoutArg)
		if err != nil {
			return err
		}
		o.timeout = d
	}
	return nil
}

func dispatchApp(stdin io.Reader, stdout, stderr io.Writer) *ucli.App {
	o := &dispatchOptions{}
	usageText := formUsage
	verbList := "PROMPT is the fourth word that is not a flag, whatever it looks like (\"- a list\",\n" +
		"\"--fix it\"), as dispatch.sh took it; after it, every word that is not one of the flags\n" +
		"below names the template (the last one counts).\n\n" +
		"Verbs ('dispatch help VERB' shows a verb's flags and exit codes):"
	for _, c := range commands() {
		if !c.Hidden {
			usageText += "\n" + c.UsageText
			verbList += "\n   " + c.Name + "\t" + c.Usage
		}
	}
	return cli.NewApp(cli.Spec{
		Name:        tool,
		Usage:       "start an AI coding agent on a bead, supervised",
		UsageText:   usageText + "\ndispatch help [VERB]",
		Description: verbList,
		Flags:       o.AddFlags(),
		ExitCodes:   exitStatus,
		Action: func(c *ucli.Context) error {
			if err := o.setArgs(c.Args().Slice()); err != nil {
				return err
			}
			return o.run(c.Context, stdin, stdout, stderr)
		},
	}, stdout, stderr)
}

// run dispatches the parsed command line: on a host (--host), or here.
func (o *dispatchOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := loadSettings(o.stateDir)
	if err != nil {
		return err
	}
	if o.hostsFile != "" && o.host == "" {
		return cli.Usagef("--hosts needs --host")
	}
	if o.host != "" {
		if o.dryRun {
			return cli.Usagef("--dry-run cannot be used with --host (the host's dispatch decides the argv there)")
		}
		h, err := hostSettings(o, s.env)
		if err != nil {
			return err
		}
		return dispatchRemote(ctx, o, h, s, stdin, stdout, stderr)
	}
	// formArgs kept only the last of the two.
	if o.relay {
		s.relay, s.relayAsked = true, true
	}
	if o.noRelay {
		s.relay = false
	}
	return dispatchAndMaybeWait(ctx, o, s, stdin, stdout, stderr)
}

// dispatchAndMaybeWait launches the attempt and, with --wait, follows it to its end (and with
// --retry, launches the next attempts while the result says it will be retried).
func dispatchAndMaybeWait(ctx context.Context, o *dispatchOptions, s *settings, stdin io.Reader, stdout, stderr io.Writer) error {
	for {
		l, err := launch(ctx, o, s, stdin, stdout, stderr)
		if err != nil || !o.wait {
			return err
		}
		res, err := waitFor(ctx, s, l.bead, l.attempt, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, outcomeLine(res))
		if o.retry && res.WillRetry {
			fmt.Fprintf(stdout, "Retrying %s: attempt %d/%d\n", l.bead, res.Attempt+1, res.MaxRetries)
			o.force = false
			continue
		}
		return exitFor(res)
	}
}
