package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Interspersed moves flags ahead of positional arguments, so that "tool PATH --json" works
// like "tool --json PATH" (urfave/cli v2 stops reading flags at the first positional argument).
// Which flags take the next argument as their value is read from flags: all but BoolFlags
// (a flag flags does not define is taken for a boolean; urfave/cli then refuses it). Everything
// after "--" stays positional. A flag that takes a value and ends the command line is left last,
// with no positional argument after it: else the "--" put before those would be taken for its
// value ("ralph start TASK --completion" must be refused, not run "--").
func Interspersed(args []string, flags []ucli.Flag) []string {
	valued := takesValue(flags)
	var out, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case isFlag(a):
			out = append(out, a)
			if valued(a) {
				if i+1 == len(args) {
					return out // urfave/cli says the flag needs a value
				}
				out = append(out, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) == 0 {
		return out
	}
	return append(append(out, "--"), positional...)
}

// FirstArg returns the index in args of the first positional argument, skipping flags and
// their values as flags defines them (see Interspersed), or -1 when there is none. A tool with
// verbs finds its verb there, whatever flags come before it.
func FirstArg(args []string, flags []ucli.Flag) int {
	valued := takesValue(flags)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		case isFlag(a):
			if valued(a) {
				i++
			}
		default:
			return i
		}
	}
	return -1
}

// AsksHelp says whether args ask for the help: -h or --help as a flag, before any "--" and
// not the value of a flag that takes one (as flags defines them, see Interspersed).
func AsksHelp(args []string, flags []ucli.Flag) bool {
	valued := takesValue(flags)
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return false
		case a == "-h" || a == "--help":
			return true
		case isFlag(a) && valued(a):
			i++
		}
	}
	return false
}

// SplitCommand splits a command line that ends in a command to run, as argparse's REMAINDER
// did (swarm spawn, ralph spawn): the tool's own flags and their values as flags defines them
// (see Interspersed), then the command: what follows "--", or from the first argument that is
// not a flag on. cmd is nil when there is none.
func SplitCommand(args []string, flags []ucli.Flag) (flagArgs, cmd []string) {
	valued := takesValue(flags)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flagArgs, args[i+1:]
		case isFlag(a):
			flagArgs = append(flagArgs, a)
			if valued(a) && i+1 < len(args) {
				flagArgs = append(flagArgs, args[i+1])
				i++
			}
		default:
			return flagArgs, args[i:]
		}
	}
	return flagArgs, nil
}

// isFlag tells a flag from a positional argument; "-" alone is one (standard input).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// takesValue returns whether a flag argument ("--name", "-n"; not "--name=value", which holds
// its value) takes the next argument as its value.
func takesValue(flags []ucli.Flag) func(arg string) bool {
	valued := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*ucli.BoolFlag)
		for _, name := range f.Names() {
			valued[name] = !isBool
		}
	}
	return func(arg string) bool {
		name := strings.TrimLeft(arg, "-")
		return !strings.Contains(name, "=") && valued[name]
	}
}
