package cli

import ucli "github.com/urfave/cli/v2"

// A verb's flags write into the fields of an options struct of its own (the flag's
// Destination), which one AddFlags method declares, as restic's commands do: the verb then
// reads the struct, never a flag by its name. The struct is made with the Command, and a
// Command is made for each run (newTool), so nothing is left in it from an earlier one.

// Given is a flag's Action that records in *set that the flag was given, on the command line or
// by its environment variable (what urfave/cli's c.IsSet says): for an options field whose
// default cannot be told from a value given (an empty --tmux-socket, --max-context 0). T is the
// flag's type (string for a StringFlag, int for an IntFlag).
func Given[T any](set *bool) func(*ucli.Context, T) error {
	return func(*ucli.Context, T) error {
		*set = true
		return nil
	}
}

// StateDirFlagInto is StateDirFlag writing into *dir.
func StateDirFlagInto(dir *string) *ucli.StringFlag {
	f := StateDirFlag()
	f.Destination = dir
	return f
}
