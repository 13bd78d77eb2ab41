// Package cli holds what the toolkit's commands share around urfave/cli: usage errors and their
// exit code, the error-to-exit-code mapping main does once, and argument normalisation so flags
// may follow positional arguments, as users of the shell originals expect.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Exit codes shared by every tool. Tools add their own above these (dispatch --wait: 124).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError is a mistake in the command line: exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitError carries an exit code chosen by the command, with an optional message to print.
// A nil-message ExitError only sets the code: the command already said what happened.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit maps err to an exit code, printing "tool: message" on stderr when there is something to
// say. It is the one place a tool turns errors into codes.
func Exit(tool string, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", tool, ee.Err)
		}
		return ee.Code
	}
	var ue *UsageError
	if errors.As(err, &ue) || isFlagError(err) {
		fmt.Fprintf(stderr, "%s: %v\n%s: run '%s --help' for usage\n", tool, err, tool, tool)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", tool, err)
	return ExitFailure
}

// isFlagError recognises the errors urfave/cli and the flag package return for bad flags.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"flag provided but not defined", "flag needs an argument", "invalid value", "invalid boolean"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Interspersed moves flags ahead of positional arguments, so that "tool PATH --json" works
// like "tool --json PATH" (urfave/cli v2 stops reading flags at the first positional argument).
// valued names the flags that take a value as the next argument. Everything after "--" stays
// positional.
func Interspersed(args []string, valued map[string]bool) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && valued[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) == 0 {
		return flags
	}
	return append(append(flags, "--"), positional...)
}

// PositiveEnv reads the numeric environment variable name, which must be a positive integer
// when set (as dispatch.sh required of its DISPATCH_* numbers); def when it is unset or empty.
func PositiveEnv(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, Usagef("%s=%q must be a positive integer", name, v)
	}
	return n, nil
}
