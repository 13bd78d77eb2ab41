package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"
)

// A Tool is one binary's command line: its verbs (Commands), how its diagnostics read
// (Dialect), its help (Usage). Every tool with verbs routes them through Tool.Main, so that a
// new verb is one Command value in a file of its own under cmd/<tool>/, and a tool has one
// dialect and one map from errors to exit codes (Tool.Exit).
//
// Why our own router rather than urfave/cli's App.Commands: the tools are drop-ins, and their
// top level is not urfave/cli's. The Python swarm answers an unknown verb with argparse's
// "invalid choice: 'x' (choose from 'a', 'b')" and has a help layout of its own; dispatch's
// first word is a bead id unless it is a verb, wherever flags stand before it; `help VERB`,
// `version` and a verb with no arguments must say what the originals said. urfave/cli's
// Commands would reword each of these. What urfave/cli does well, one verb's flags and help,
// it still does: each Command with an Action runs as an App of its own (NewApp), with flags
// allowed after operands (Interspersed).
type Tool struct {
	// Name is the program, the prefix of every diagnostic ("swarm").
	Name string
	// Dialect is how the tool's diagnostics read.
	Dialect Dialect
	// Usage writes the tool's own help: `tool --help`, `tool help` and, on stderr as a usage
	// error, `tool` alone.
	Usage func(w io.Writer)
	// Commands are the verbs, in the order of the help.
	Commands []*Command
	// Flags may stand before the verb ("dispatch --state-dir S ps"): the verb is the first
	// argument that is not one of them or its value, and they are handed to the verb with its
	// own arguments.
	Flags []ucli.Flag
	// Default runs a command line whose first argument is not a verb (dispatch's
	// "BEAD REPO AGENT PROMPT" form; args without the program). Without it, such a word is a
	// usage error naming the verbs.
	Default func(ctx context.Context, s Streams, args []string) error
	// UnknownVerb says what is wrong with a word that is no verb; nil is argparse's
	// "invalid choice: 'x' (choose from 'a', 'b')", which the Python swarm printed.
	UnknownVerb func(word string, verbs []string) error
	// Manual is what the man page says beyond the command line (docs.go).
	Manual Manual
	// Names list the names of each kind that exist now ("workers", "loops"), for the
	// completions: `tool __complete KIND` prints them, one a line (complete.go). A Command's
	// Operand names the kind its first operand is.
	Names map[string]func() ([]string, error)
}

// A Command is one verb of a Tool.
type Command struct {
	Name    string
	Aliases []string
	// Usage is the verb's line in the tool's help and the first line of its own.
	Usage string
	// UsageText is the synopsis, one form a line; Description is the help's prose; Epilog
	// what the help says after the options (examples, how-tos), as written.
	UsageText, Description, Epilog string
	Flags                          []ucli.Flag
	// ExitCodes are documented at the end of the verb's help (none: 0 ok, 1 failure, 2 usage
	// error).
	ExitCodes []ExitCode
	// Help, when set, is the verb's whole --help, word for word, instead of the layout NewApp
	// makes of Usage, UsageText, Flags and ExitCodes: for the verbs of a drop-in whose help was
	// written by hand and is kept (ralph's AIWG verbs).
	Help string
	// Hidden verbs are left out of the help and the list of choices (a supervisor's verb).
	Hidden bool
	// OwnSignals is for verbs that catch SIGINT and SIGTERM themselves (supervisors); the
	// others run with a context that those signals cancel.
	OwnSignals bool
	// Remainder is for an Action whose operands end in a command to run (argparse's
	// REMAINDER: swarm spawn, ralph spawn): from "--", or from the first argument that is no
	// flag of the verb's, everything is the command (SplitCommand), which Action finds in
	// c.Args(), its flags and all.
	Remainder bool
	// Operand is the kind of name the verb's first operand is, one of the Tool's Names
	// ("workers"): the completions offer the names that exist.
	Operand string

	// Exactly one of Action, Raw and Commands says what the verb does.

	// Action runs the verb once urfave/cli has read its flags; c.Args() are its operands.
	Action func(ctx context.Context, c *ucli.Context, s Streams) error
	// Raw runs the verb on its arguments as given (without the verb's name): a command line
	// that ends in a command to run (SplitCommand), or a verb with a grammar of its own.
	Raw func(ctx context.Context, s Streams, args []string) error
	// Commands are the verb's own verbs ("heartbeat start", "queue run"), routed as the
	// tool's are; their help and hints name the whole path ("ralph queue run").
	Commands []*Command
	// CommandsUsage writes the help of a verb with Commands (nil: a list of them).
	CommandsUsage func(w io.Writer)
	// UnknownVerb, for a verb with Commands, says what is wrong with a word that is none of
	// them (ralph queue's 'no verb "x"; the verbs are …'), or with no word at all ("": the verb
	// alone; swarm heartbeat's argparse line). nil, or nil returned for "", is the tool's rule:
	// the verb's help on stderr for none, the Tool's UnknownVerb for a wrong word.
	UnknownVerb func(word string, verbs []string) error
	// BareHelpToStdout, for a verb with Commands, writes its help on stdout rather than stderr
	// when it is given no verb (still a usage error, exit 2): `swarm ralph` alone, as the Python
	// swarm's ralph printed it.
	BareHelpToStdout bool
}

// Streams are a command's standard input, output and error.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Dialect is how a tool's diagnostics read.
type Dialect int

const (
	// Plain is "tool: message", and for a usage error a second line "tool: run 'tool
	// --help' for usage": dispatch, validate-state and analyze-runs, as the shell originals.
	Plain Dialect = iota
	// Labelled is "tool: error: message", and for a usage error "tool: hint: run 'tool verb
	// --help' for usage": swarm and ralph, as the Python swarm (and age) print them.
	Labelled
)

// Main runs the tool on args (args[0] the program) and returns the exit status. It is all a
// main needs: os.Exit(tool.Main(os.Args, streams)).
func (t *Tool) Main(args []string, s Streams) int {
	if handled, err := docsRequest(t.docs, args[1:], s.Out); handled { // docs.go
		return t.Exit("", err, s.Err)
	}
	if len(args) > 1 && args[1] == CompleteWord { // complete.go
		return t.Exit("", completeRequest(t.Names, args[1:], s.Out), s.Err)
	}
	return t.Exit("", t.Run(context.Background(), s, args[1:]), s.Err)
}

// Run routes args (without the program) to the tool's verb and returns its error, for a tool
// run as a verb of another ("swarm ralph …").
func (t *Tool) Run(ctx context.Context, s Streams, args []string) error {
	return t.route(ctx, s, t.Name, t.Commands, t.Flags, args, t.Usage, t.UnknownVerb, false)
}

// route runs the verb args names among cmds; path is the tool or the verb they belong to
// ("ralph queue"), usage its help (nil: a list of cmds), lead the flags that may stand before
// the verb (the tool's), unknown what is said of a word that is no verb (nil: the default).
func (t *Tool) route(ctx context.Context, s Streams, path string, cmds []*Command, lead []ucli.Flag, args []string,
	usage func(io.Writer), unknown func(string, []string) error, bareToStdout bool) error {
	top := path == t.Name
	if usage == nil {
		usage = func(w io.Writer) { listUsage(w, path, cmds) }
	}
	i := 0
	if len(lead) > 0 && len(args) > 0 && !slices.Contains([]string{"-h", "--help", "--version"}, args[0]) {
		i = FirstArg(args, lead)
	}
	word := ""
	if i >= 0 && i < len(args) {
		word = args[i]
	}
	switch {
	case word == "" && !(top && t.Default != nil):
		// No verb, or flags alone: the verb's own words for it, else its help on stderr.
		if !top && unknown != nil {
			if err := unknown("", visible(cmds)); err != nil {
				return err
			}
		}
		if bareToStdout {
			usage(s.Out)
		} else {
			usage(s.Err)
		}
		return &ExitError{Code: ExitUsage}
	case word == "-h" || word == "--help" || word == "help" && find(cmds, "help") == nil:
		if word == "help" && len(args) > i+1 {
			// help VERB [VERB...] is VERB --help.
			return t.route(ctx, s, path, cmds, nil, append(slices.Clip(args[i+1:]), "--help"), usage, unknown, bareToStdout)
		}
		usage(s.Out)
		return nil
	case top && (word == "--version" || word == "version" && find(cmds, "version") == nil):
		fmt.Fprintf(s.Out, "%s version %s\n", path, Version())
		return nil
	}
	c := find(cmds, word)
	if c == nil {
		if top && t.Default != nil {
			return t.Default(ctx, s, args)
		}
		if unknown == nil {
			unknown = t.UnknownVerb
		}
		if unknown != nil {
			return unknown(word, visible(cmds))
		}
		return Usagef("invalid choice: '%s' (choose from '%s')", word, strings.Join(visible(cmds), "', '"))
	}
	rest := slices.Concat(args[:i], args[i+1:])
	return inVerb(path+" "+c.Name, t.runCommand(ctx, s, c, path+" "+c.Name, rest))
}

// runCommand runs the verb c, called path ("swarm heartbeat start"), on its arguments.
func (t *Tool) runCommand(ctx context.Context, s Streams, c *Command, path string, args []string) error {
	if len(c.Commands) > 0 && c.Raw == nil && c.Action == nil {
		return t.route(ctx, s, path, c.Commands, nil, args, c.CommandsUsage, c.UnknownVerb, c.BareHelpToStdout)
	}
	if !c.OwnSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
	}
	if c.Raw != nil {
		return c.Raw(ctx, s, args)
	}
	if c.Remainder {
		flagArgs, cmd := SplitCommand(args, c.Flags)
		if len(cmd) > 0 {
			// Run keeps what follows "--" as operands, whatever they look like.
			args = slices.Concat(flagArgs, []string{"--"}, cmd)
		}
	}
	return Run(ctx, c.App(path, s), append([]string{path}, args...))
}

// App is the urfave/cli app of a verb with an Action, called path: its flags, help and exit
// codes as every command of the toolkit lays them out (NewApp).
func (c *Command) App(path string, s Streams) *ucli.App {
	app := NewApp(Spec{
		Name: path, Usage: c.Usage, UsageText: c.UsageText, Description: c.Description, Epilog: c.Epilog,
		Flags: slices.Clip(c.Flags), ExitCodes: c.ExitCodes, HideVersion: true,
		Action: func(uc *ucli.Context) error {
			if c.Action == nil {
				return fmt.Errorf("%s has nothing to do", path) // a Command with none of the three
			}
			return c.Action(uc.Context, uc, s)
		},
	}, s.Out, s.Err)
	if c.Help != "" {
		// Through Metadata, not as the template itself: the text is printed, never parsed.
		app.Metadata["help"] = c.Help
		app.CustomAppHelpTemplate = `{{index .Metadata "help"}}`
	}
	return app
}

// find returns the command called name (or one of its aliases), nil for none.
func find(cmds []*Command, name string) *Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// visible are the names of the commands the help lists.
func visible(cmds []*Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// listUsage is the help of a tool or verb that wrote none of its own: its verbs and their
// lines.
func listUsage(w io.Writer, path string, cmds []*Command) {
	fmt.Fprintf(w, "Usage:\n   %s <verb> [options] [args]\n\nVerbs:\n", path)
	for _, c := range cmds {
		if !c.Hidden {
			fmt.Fprintf(w, "   %-10s %s\n", c.Name, c.Usage)
		}
	}
	fmt.Fprintf(w, "\n'%s <verb> --help' shows a verb's options.\n", path)
}

// verbError is an error from the verb at path: a usage error's hint names the verb's help.
type verbError struct {
	path string
	err  error
}

func (e *verbError) Error() string { return e.err.Error() }
func (e *verbError) Unwrap() error { return e.err }

// inVerb marks err as the verb path's (the innermost verb wins).
func inVerb(path string, err error) error {
	var ve *verbError
	if err == nil || errors.As(err, &ve) {
		return err
	}
	return &verbError{path: path, err: err}
}

// Exit maps err, returned by a verb of the tool, to the exit status, saying what went wrong
// on stderr in the tool's dialect: nil 0; an ExitError its code (and its message, if any); a
// usage error or a flag mistake 2, with a hint to the help of the verb it came from; anything
// else 1. It is the one place a tool turns errors into exit codes.
func (t *Tool) Exit(verb string, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	path := t.Name
	if verb != "" {
		path += " " + verb
	}
	var ve *verbError
	if errors.As(err, &ve) {
		path = ve.path
	}
	label := func(kind string) string {
		if t.Dialect == Labelled {
			return t.Name + ": " + kind + ": "
		}
		return t.Name + ": "
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s%v\n", label("error"), ee.Err)
		}
		return ee.Code
	}
	var ue *UsageError
	if errors.As(err, &ue) || isFlagError(err) {
		if t.Dialect == Plain {
			// The shell originals' hint names the tool's help, whatever the verb.
			path = t.Name
		}
		fmt.Fprintf(stderr, "%s%v\n%srun '%s --help' for usage\n", label("error"), err, label("hint"), path)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s%v\n", label("error"), err)
	return ExitFailure
}
