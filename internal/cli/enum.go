package cli

import (
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// EnumFlag is a string flag whose value is one of a fixed set: the set is declared once, in
// Choices, and the same list checks the value (a usage error naming the choices), and gives the
// man page and the shell completions the words to offer after the flag ("--format <TAB>").
// The flag's default (Value, "" for none) is always accepted.
//
// It is a ucli.StringFlag for urfave/cli (c.String reads it, Interspersed knows it takes a
// value); only RunAction, which urfave/cli calls for a flag that was set, is its own.
type EnumFlag struct {
	ucli.StringFlag
	Choices []string
	// Dialect words a wrong value: Labelled as argparse did for swarm and ralph
	// ("argument --format: invalid choice: 'x' (choose from 'a', 'b')"), Plain as the shell
	// originals' tools do ("unknown --format "x"; use one of a, b").
	Dialect Dialect
	// Invalid, when set, words the error for a wrong value instead (a drop-in's own words).
	Invalid func(value string) error
}

// RunAction checks the value against Choices, then runs the flag's own Action, if any.
func (f *EnumFlag) RunAction(c *ucli.Context) error {
	if err := f.Check(c.String(f.Name)); err != nil {
		return err
	}
	return f.StringFlag.RunAction(c)
}

// Check says whether value is one of the choices (or the default), as a usage error when not.
func (f *EnumFlag) Check(value string) error {
	if value == f.Value || slices.Contains(f.Choices, value) {
		return nil
	}
	if f.Invalid != nil {
		return f.Invalid(value)
	}
	if f.Dialect == Labelled {
		return Usagef("argument --%s: invalid choice: '%s' (choose from '%s')", f.Name, value, strings.Join(f.Choices, "', '"))
	}
	return Usagef("unknown --%s %q; use one of %s", f.Name, value, strings.Join(f.Choices, ", "))
}

// flagChoices are the fixed values of f, when it is an EnumFlag; nil for any other flag.
func flagChoices(f ucli.Flag) []string {
	if e, ok := f.(*EnumFlag); ok {
		return e.Choices
	}
	return nil
}
